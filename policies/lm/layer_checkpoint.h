#pragma once
// Internal to kbrl::lm (includes libtorch), included by llama_model.cpp alone: activation
// checkpointing of one decoder layer for LlamaNet::forward (set_checkpointing).
#include <torch/torch.h>

#include <vector>

#include "llama_net.h"

namespace kbrl::lm::layer_checkpoint {

// Activation checkpointing of one decoder layer (reentrant, as torch.utils.checkpoint's original
// form): the forward keeps only the layer's inputs; the backward runs the layer again with autograd
// on and back-propagates through it, which accumulates the adapters' gradients directly. Inputs: the
// hidden states, then the shared prompt's keys and values for this layer (undefined when none).
// Outputs: the hidden states, then this layer's keys and values when `keep`. (An absent prefix or
// kept tensor is an empty tensor: autograd functions take and give defined tensors.)
struct LayerCall {
  LlamaNet* net = nullptr;
  size_t index = 0;
  int64_t past = 0;
  bool keep = false;
};

inline std::vector<torch::Tensor> run_layer(const LayerCall& call, const torch::Tensor& x, const torch::Tensor& pk,
                                     const torch::Tensor& pv) {
  LayerKeep kept;
  const bool prefix = pk.defined() && pk.numel() > 0;
  torch::Tensor y = call.net->layer_forward(call.index, x, call.past,
                                            prefix ? LayerPrefix{pk, pv} : LayerPrefix{},
                                            call.keep ? &kept : nullptr);
  return {y, kept.k, kept.v};
}

class CheckpointedLayer : public torch::autograd::Function<CheckpointedLayer> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, LayerCall call,
                                                const torch::Tensor& x, const torch::Tensor& pk,
                                                const torch::Tensor& pv) {
    ctx->saved_data["net"] = reinterpret_cast<int64_t>(call.net);
    ctx->saved_data["index"] = static_cast<int64_t>(call.index);
    ctx->saved_data["past"] = call.past;
    ctx->saved_data["keep"] = call.keep;
    ctx->saved_data["prefix"] = pk.numel() > 0;
    ctx->save_for_backward(pk.numel() > 0 ? torch::autograd::variable_list{x, pk, pv} : torch::autograd::variable_list{x});
    std::vector<torch::Tensor> out = run_layer(call, x, pk, pv);
    if (!call.keep) {  // outputs must be tensors: empty stand-ins, marked non-differentiable
      out[1] = torch::empty({0}, x.options());
      out[2] = torch::empty({0}, x.options());
      ctx->mark_non_differentiable({out[1], out[2]});
    }
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    LayerCall call;
    call.net = reinterpret_cast<LlamaNet*>(ctx->saved_data["net"].toInt());
    call.index = static_cast<size_t>(ctx->saved_data["index"].toInt());
    call.past = ctx->saved_data["past"].toInt();
    call.keep = ctx->saved_data["keep"].toBool();
    const bool has_prefix = ctx->saved_data["prefix"].toBool();
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    // Detached copies that require grad: the recomputed graph ends at them.
    std::vector<torch::Tensor> in;
    for (const torch::Tensor& t : saved) in.push_back(t.detach().requires_grad_(true));
    torch::autograd::variable_list outputs, output_grads;
    {
      torch::AutoGradMode enable(true);
      const std::vector<torch::Tensor> out =
          run_layer(call, in[0], has_prefix ? in[1] : torch::Tensor(), has_prefix ? in[2] : torch::Tensor());
      for (size_t i = 0; i < out.size(); ++i)
        if (out[i].defined() && out[i].requires_grad() && i < grads.size() && grads[i].defined()) {
          outputs.push_back(out[i]);
          output_grads.push_back(grads[i]);
        }
    }
    if (!outputs.empty()) torch::autograd::backward(outputs, output_grads);
    auto grad_of = [](const torch::Tensor& t) { return t.grad().defined() ? t.grad() : torch::zeros_like(t); };
    return {torch::Tensor(), grad_of(in[0]), has_prefix ? grad_of(in[1]) : torch::Tensor(),
            has_prefix ? grad_of(in[2]) : torch::Tensor()};  // no gradient for the empty stand-ins
  }
};

}  // namespace kbrl::lm::layer_checkpoint
