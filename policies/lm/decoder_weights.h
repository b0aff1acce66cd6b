#pragma once
// Internal to kbrl::lm (includes libtorch), included by batch_decoder.cpp alone: the sampler's copy of
// the weights, LoRA merged in (in float32, then the weights' type), q/k/v and gate/up concatenated,
// refreshed in place when a weight or an adapter changed. Change is seen through each tensor's
// storage, shape and in-place version counter (an optimizer step bumps the versions of the adapters
// it updates), so captured CUDA graphs, which read these buffers, stay valid across updates. With
// q8, the projections and the output are kept as 8-bit copies instead, for the CPU step (q8_product).
#include <torch/torch.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "llama_net.h"
#include "q8_weights.h"

namespace kbrl::lm {

struct DecoderWeights {
  uint64_t fingerprint = 0;
  bool ready = false;
  /// Copies the net's weights in (in place after the first time) when they changed since the last
  /// call; true when it copied.
  bool refresh(LlamaNet& net);
  struct Layer {
    torch::Tensor attn_norm, ffn_norm;  // [hidden] float32
    torch::Tensor qkv, qkv_bias;        // [(heads + 2 kv_heads) head_dim, hidden]; the bias or undefined
    torch::Tensor o, gate_up, down;     // gate_up: [2 intermediate, hidden]
  };
  std::vector<Layer> layers;
  torch::Tensor embedding, final_norm, output;
  /// With q8 (use_q8, before the first refresh): each projection and the output in Q8_0 blocks instead
  /// of the weights' type (qkv, o, gate_up, down and output stay undefined), quantized again whenever
  /// the weights change; the CPU step reads these (ModelOptions::cpu_q8_weights).
  bool q8 = false;
  /// InputError unless `net` is on the CPU and its projections take whole blocks of inputs.
  void use_q8(const LlamaNet& net) {
    KBRL_CHECK_INPUT(net.device().is_cpu(), "cpu_weights=q8 is for a model on the CPU, not on {} (a GPU samples in its "
                     "own kernels)", net.device().str());
    const LlamaConfig& c = net.config();
    KBRL_CHECK_INPUT(q8_fits(c.hidden) && q8_fits(c.heads * c.head_dim) && q8_fits(c.intermediate),
                     "cpu_weights=q8: the model's projections take {}, {} and {} inputs, not whole blocks of {}",
                     c.hidden, c.heads * c.head_dim, c.intermediate, kQ8Block);
    q8 = true;
  }
  struct Q8Layer {
    Q8Matrix qkv, o, gate_up, down;
  };
  std::vector<Q8Layer> q8_layers;
  Q8Matrix q8_output;
};

namespace decoder_weights {

inline uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t state = h ^ v;
  return splitmix64(state);
}

// Identity of a tensor's contents: its storage, shape and in-place version (an optimizer step bumps
// the version of the adapters it updates).
inline uint64_t identity(uint64_t h, const torch::Tensor& t) {
  if (!t.defined()) return mix(h, 0);
  h = mix(h, reinterpret_cast<uintptr_t>(t.data_ptr()));
  h = mix(h, static_cast<uint64_t>(t._version()));
  return mix(h, static_cast<uint64_t>(t.numel()));
}

inline uint64_t weights_fingerprint(LlamaNet& net) {
  uint64_t h = 0;
  for (auto& [name, tensor] : net.named_weights()) h = identity(h, *tensor);
  for (TransformerBlock& layer : net.layers())
    for (auto& [name, proj] : layer.projections()) {
      h = identity(identity(h, proj->a), proj->b);
      uint64_t scale_bits = 0;
      std::memcpy(&scale_bits, &proj->scale, sizeof scale_bits);
      h = mix(mix(h, scale_bits), proj->adapter_on ? 1 : 2);
    }
  return h;
}

// The projection's weight with its adapter merged in (computed in float32).
inline torch::Tensor merged(const LoraLinear& p) {
  if (!p.a.defined() || !p.adapter_on) return p.weight;
  return (p.weight.to(torch::kFloat32) + torch::matmul(p.b, p.a) * p.scale).to(p.weight.scalar_type());
}

// `t` [rows, cols] into Q8_0 blocks (q8_weights.h), its rows shared out over libtorch's threads.
inline void quantize(const torch::Tensor& t, Q8Matrix& out) {
  const torch::Tensor f = t.to(torch::kCPU, torch::kFloat32).contiguous();
  resize_q8(f.size(0), f.size(1), out);
  at::parallel_for(0, f.size(0), 256,
                   [&](int64_t begin, int64_t end) { quantize_q8_rows(f.data_ptr<float>(), begin, end, out); });
}

// Copies `value` into `slot`, allocating it the first time (in place after: graphs keep reading it).
inline void assign(torch::Tensor& slot, const torch::Tensor& value) {
  if (slot.defined() && slot.sizes() == value.sizes()) {
    slot.copy_(value);
  } else {
    slot = value.clone();
  }
}

}  // namespace decoder_weights

// rows [n, in] @ w^T with 8-bit weights: the rows quantized into `scratch`, the weight's rows shared
// out over libtorch's threads; the result in rows' type.
inline torch::Tensor q8_product(const torch::Tensor& rows, const Q8Matrix& w, Q8Activations& scratch) {
  const torch::Tensor x = rows.to(torch::kFloat32).contiguous();
  quantize_q8_activations(x.data_ptr<float>(), x.size(0), x.size(1), scratch);
  torch::Tensor y = torch::empty({x.size(0), w.rows}, x.options());
  float* out = y.data_ptr<float>();
  const int64_t threads = std::max<int64_t>(1, at::get_num_threads());
  at::parallel_for(0, w.rows, std::max<int64_t>(64, (w.rows + threads - 1) / threads),
                   [&](int64_t begin, int64_t end) { q8_matmul_rows(w, scratch, begin, end, out); });
  return y.to(rows.scalar_type());
}

inline bool DecoderWeights::refresh(LlamaNet& net) {
  using decoder_weights::assign;
  using decoder_weights::merged;
  const uint64_t now = decoder_weights::weights_fingerprint(net);
  if (ready && fingerprint == now) return false;
  torch::NoGradGuard no_grad;
  layers.resize(net.layers().size());
  q8_layers.resize(q8 ? layers.size() : 0);
  // A projection or the output: its 8-bit copy alone with q8 (the only one the CPU step reads), else
  // the copy in the weights' type.
  const auto keep = [&](torch::Tensor& slot, Q8Matrix* eight_bit, const torch::Tensor& value) {
    if (q8)
      decoder_weights::quantize(value, *eight_bit);
    else
      assign(slot, value);
  };
  for (size_t l = 0; l < layers.size(); ++l) {
    const TransformerBlock& in = net.layers()[l];
    const Attention& a = in.attention;
    Layer& out = layers[l];
    Q8Layer* eight = q8 ? &q8_layers[l] : nullptr;
    assign(out.attn_norm, in.attn_norm.weight);
    assign(out.ffn_norm, in.ffn_norm.weight);
    keep(out.qkv, eight ? &eight->qkv : nullptr, torch::cat({merged(a.q), merged(a.k), merged(a.v)}, 0));
    if (a.q.bias.defined() || a.k.bias.defined() || a.v.bias.defined()) {
      auto bias = [](const LoraLinear& p) {
        return p.bias.defined() ? p.bias : torch::zeros({p.weight.size(0)}, p.weight.options());
      };
      assign(out.qkv_bias, torch::cat({bias(a.q), bias(a.k), bias(a.v)}, 0));
    }
    keep(out.o, eight ? &eight->o : nullptr, merged(a.o));
    keep(out.gate_up, eight ? &eight->gate_up : nullptr, torch::cat({merged(in.ffn.gate), merged(in.ffn.up)}, 0));
    keep(out.down, eight ? &eight->down : nullptr, merged(in.ffn.down));
  }
  assign(embedding, net.embedding());
  assign(final_norm, net.final_norm());
  keep(output, &q8_output, net.output_weight());
  fingerprint = now;
  ready = true;
  return true;
}

}  // namespace kbrl::lm
