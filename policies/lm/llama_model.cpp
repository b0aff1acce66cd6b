// LlamaNet (llama_net.h) and LanguageModel (language_model.h): the decoder's forward pass, the
// KV-cache sampler and sequence scoring.
#include <cmath>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "language_model.h"
#include "llama_net.h"
#include "sequence_scores.h"

namespace kbrl::lm {

// ---- LoraLinear ----

torch::Tensor LoraLinear::operator()(const torch::Tensor& x) const {
  torch::Tensor y = torch::matmul(x, weight.t());
  if (bias.defined()) y = y + bias;
  if (a.defined() && adapter_on) {
    const torch::Tensor xf = x.to(torch::kFloat32);
    y = y + (torch::matmul(torch::matmul(xf, a.t()), b.t()) * scale).to(y.scalar_type());
  }
  return y;
}

std::vector<std::pair<std::string, LoraLinear*>> LlamaLayer::projections() {
  return {{"q", &q}, {"k", &k}, {"v", &v}, {"o", &o}, {"gate", &gate}, {"up", &up}, {"down", &down}};
}

// ---- LlamaNet ----

namespace {

torch::Tensor to_tensor(const WeightArray& w, torch::Device device, torch::ScalarType dtype) {
  return torch::from_blob(const_cast<float*>(w.values.data()), w.shape, torch::kFloat32).to(device, dtype).clone();
}

// Host-side normal(0, std) draws (Box-Muller over splitmix64): the same random model on every
// device and libtorch version.
torch::Tensor random_tensor(std::vector<int64_t> shape, double std, uint64_t& state, torch::Device device,
                            torch::ScalarType dtype) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i += 2) {
    const double u1 = std::max(splitmix64_uniform01(state), 1e-300), u2 = splitmix64_uniform01(state);
    const double r = std::sqrt(-2.0 * std::log(u1)) * std;
    v[i] = static_cast<float>(r * std::cos(2 * M_PI * u2));
    if (i + 1 < n) v[i + 1] = static_cast<float>(r * std::sin(2 * M_PI * u2));
  }
  return torch::from_blob(v.data(), shape, torch::kFloat32).to(device, dtype).clone();
}

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t h = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, h, h), x.narrow(-1, 0, h)}, -1);
}

}  // namespace

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  const torch::Tensor xf = x.to(torch::kFloat32);
  return (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps) * w).to(x.scalar_type());
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const torch::Tensor xf = x.to(torch::kFloat32);
  return (xf * cos + rotate_half(xf) * sin).to(x.scalar_type());
}

LlamaNet::LlamaNet(const ModelFile& file, torch::Device device, torch::ScalarType dtype)
    : config_(file.config), device_(device), dtype_(dtype) {
  auto w = [&](const std::string& name, torch::ScalarType type) {
    return to_tensor(file.weights.at(name), device, type);
  };
  embed_ = w("model.embed_tokens.weight", dtype);
  norm_ = w("model.norm.weight", torch::kFloat32);
  if (!config_.tied_embeddings) lm_head_ = w("lm_head.weight", dtype);
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string h = fmt::format("model.layers.{}.", l);
    LlamaLayer layer;
    layer.attn_norm = w(h + "input_layernorm.weight", torch::kFloat32);
    layer.ffn_norm = w(h + "post_attention_layernorm.weight", torch::kFloat32);
    for (auto [name, proj] : layer.projections()) {
      const bool attn = name == "q" || name == "k" || name == "v" || name == "o";
      const std::string base = h + (attn ? "self_attn." : "mlp.") + name + "_proj.";
      proj->weight = w(base + "weight", dtype);
      if (file.weights.count(base + "bias")) proj->bias = w(base + "bias", dtype);
    }
    layers_.push_back(std::move(layer));
  }
  init_rope();
}

LlamaNet::LlamaNet(const LlamaConfig& c, uint64_t seed, torch::Device device, torch::ScalarType dtype)
    : config_(c), device_(device), dtype_(dtype) {
  uint64_t state = seed;
  const int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  embed_ = random_tensor({c.vocab_size, c.hidden}, 0.02, state, device, dtype);
  norm_ = torch::ones({c.hidden}, torch::TensorOptions().device(device).dtype(torch::kFloat32));
  // An untied output of std 1/sqrt(hidden): logits start near unit scale and can reach sqrt(hidden).
  // With 0.02 and unit norm weights (LoRA trains neither), no logit passes 0.02 * hidden (5 at
  // hidden 256), no token gets past p = 0.4 and SFT stalls; a tied output of that scale would
  // instead make every position predict its own input token.
  if (!c.tied_embeddings)
    lm_head_ = random_tensor({c.vocab_size, c.hidden}, 1.0 / std::sqrt(static_cast<double>(c.hidden)), state, device,
                             dtype);
  for (int64_t l = 0; l < c.layers; ++l) {
    LlamaLayer layer;
    layer.attn_norm = norm_.clone();
    layer.ffn_norm = norm_.clone();
    layer.q.weight = random_tensor({q, c.hidden}, 0.02, state, device, dtype);
    layer.k.weight = random_tensor({kv, c.hidden}, 0.02, state, device, dtype);
    layer.v.weight = random_tensor({kv, c.hidden}, 0.02, state, device, dtype);
    layer.o.weight = random_tensor({c.hidden, q}, 0.02, state, device, dtype);
    layer.gate.weight = random_tensor({c.intermediate, c.hidden}, 0.02, state, device, dtype);
    layer.up.weight = random_tensor({c.intermediate, c.hidden}, 0.02, state, device, dtype);
    layer.down.weight = random_tensor({c.hidden, c.intermediate}, 0.02, state, device, dtype);
    if (c.attention_bias)
      for (LoraLinear* p : {&layer.q, &layer.k, &layer.v})
        p->bias = torch::zeros({p->weight.size(0)}, p->weight.options());
    layers_.push_back(std::move(layer));
  }
  init_rope();
}

void LlamaNet::init_rope() {
  const int64_t d = config_.head_dim, half = d / 2;
  KBRL_CHECK_INPUT(d % 2 == 0, "head dimension {} is odd", d);
  const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
  const torch::Tensor inv_freq =
      torch::pow(config_.rope_theta, -torch::arange(0, half, f64) * 2.0 / static_cast<double>(d));
  const torch::Tensor angles = torch::outer(torch::arange(0, config_.context_length, f64), inv_freq);
  rope_cos_ = torch::cat({angles.cos(), angles.cos()}, -1).to(device_, torch::kFloat32);
  rope_sin_ = torch::cat({angles.sin(), angles.sin()}, -1).to(device_, torch::kFloat32);
}

torch::Tensor LlamaNet::attention(const LlamaLayer& layer, const torch::Tensor& x, int64_t past,
                                  const LayerPrefix& prefix, LayerKeep* keep) {
  const int64_t B = x.size(0), T = x.size(1), H = config_.heads, KV = config_.kv_heads, D = config_.head_dim;
  torch::Tensor q = layer.q(x).view({B, T, H, D}).transpose(1, 2);
  torch::Tensor k = layer.k(x).view({B, T, KV, D}).transpose(1, 2);
  torch::Tensor v = layer.v(x).view({B, T, KV, D}).transpose(1, 2);
  const torch::Tensor cos = rope_cos_.narrow(0, past, T), sin = rope_sin_.narrow(0, past, T);
  q = apply_rope(q, cos, sin);
  k = apply_rope(k, cos, sin);
  if (keep) {
    keep->k = k;
    keep->v = v;
  }
  torch::Tensor keys = k, values = v;
  if (prefix.k.defined()) {
    const int64_t P = prefix.k.size(2);
    keys = torch::cat({prefix.k.expand({B, KV, P, D}), k}, 2);
    values = torch::cat({prefix.v.expand({B, KV, P, D}), v}, 2);
  }
  // Grouped-query attention without copying keys: the G query heads of a key/value head are stacked
  // as rows, [B, KV, G*T, D] against [B, KV, S, D].
  const int64_t S = keys.size(2), G = H / KV;
  const torch::Tensor qg = q.reshape({B, KV, G * T, D});
  torch::Tensor scores =
      torch::matmul(qg, keys.transpose(-1, -2)).to(torch::kFloat32) / std::sqrt(static_cast<double>(D));
  if (T > 1) {
    const auto opts = torch::TensorOptions().device(device_).dtype(torch::kInt64);
    const torch::Tensor row_pos = (torch::arange(T, opts) + (S - T)).repeat({G});  // row g*T + t is position t
    const torch::Tensor mask = torch::arange(S, opts).unsqueeze(0) > row_pos.unsqueeze(1);
    scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  }
  const torch::Tensor p = torch::softmax(scores, -1).to(dtype_);
  const torch::Tensor out = torch::matmul(p, values).reshape({B, H, T, D}).transpose(1, 2).reshape({B, T, H * D});
  return layer.o(out);
}

torch::Tensor LlamaNet::layer_forward(size_t index, torch::Tensor x, int64_t past, const LayerPrefix& prefix,
                                      LayerKeep* keep) {
  const LlamaLayer& layer = layers_[index];
  x = x + attention(layer, rms_norm(x, layer.attn_norm, config_.rms_eps), past, prefix, keep);
  const torch::Tensor h = rms_norm(x, layer.ffn_norm, config_.rms_eps);
  return x + layer.down(torch::silu(layer.gate(h)) * layer.up(h));
}

namespace {

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

std::vector<torch::Tensor> run_layer(const LayerCall& call, const torch::Tensor& x, const torch::Tensor& pk,
                                     const torch::Tensor& pv) {
  LlamaNet::LayerKeep kept;
  const bool prefix = pk.defined() && pk.numel() > 0;
  torch::Tensor y = call.net->layer_forward(call.index, x, call.past,
                                            prefix ? LlamaNet::LayerPrefix{pk, pv} : LlamaNet::LayerPrefix{},
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

}  // namespace

torch::Tensor LlamaNet::forward(const torch::Tensor& ids, int64_t past, const Prefix* prefix, Prefix* keep) {
  const int64_t B = ids.size(0), T = ids.size(1);
  KBRL_CHECK_INPUT(past + T <= config_.context_length, "{} tokens exceed the model's context of {}", past + T,
                   config_.context_length);
  torch::Tensor x = embed_.index_select(0, ids.reshape({-1})).view({B, T, config_.hidden});
  const bool checkpoint = checkpointing_ && torch::GradMode::is_enabled();
  // The layers' adapters are hidden inputs of a checkpointed layer: its output requires grad only if
  // an input does, so the embeddings (frozen) are made to.
  if (checkpoint && !x.requires_grad()) x = x.detach().requires_grad_(true);
  for (size_t l = 0; l < layers_.size(); ++l) {
    const LayerPrefix lp = prefix ? LayerPrefix{prefix->k[l], prefix->v[l]} : LayerPrefix{};
    if (checkpoint) {
      const torch::Tensor none = torch::empty({0}, x.options());
      const auto out = CheckpointedLayer::apply(LayerCall{this, l, past, keep != nullptr}, x,
                                                prefix ? lp.k : none, prefix ? lp.v : none);
      x = out[0];
      if (keep) {
        keep->k.push_back(out[1]);
        keep->v.push_back(out[2]);
      }
    } else {
      LayerKeep kept;
      x = layer_forward(l, x, past, lp, keep ? &kept : nullptr);
      if (keep) {
        keep->k.push_back(kept.k);
        keep->v.push_back(kept.v);
      }
    }
  }
  if (keep) keep->length = past + T;
  return rms_norm(x, norm_, config_.rms_eps);
}

torch::Tensor LlamaNet::logits(const torch::Tensor& hidden) const {
  return torch::matmul(hidden, (lm_head_.defined() ? lm_head_ : embed_).t()).to(torch::kFloat32);
}

std::vector<std::pair<std::string, torch::Tensor*>> LlamaNet::named_weights() {
  std::vector<std::pair<std::string, torch::Tensor*>> out = {{"model.embed_tokens.weight", &embed_},
                                                             {"model.norm.weight", &norm_}};
  if (lm_head_.defined()) out.push_back({"lm_head.weight", &lm_head_});
  for (size_t l = 0; l < layers_.size(); ++l) {
    const std::string h = fmt::format("model.layers.{}.", l);
    out.push_back({h + "input_layernorm.weight", &layers_[l].attn_norm});
    out.push_back({h + "post_attention_layernorm.weight", &layers_[l].ffn_norm});
    for (auto [name, proj] : layers_[l].projections()) {
      const bool attn = name == "q" || name == "k" || name == "v" || name == "o";
      const std::string base = h + (attn ? "self_attn." : "mlp.") + name + "_proj.";
      out.push_back({base + "weight", &proj->weight});
      if (proj->bias.defined()) out.push_back({base + "bias", &proj->bias});
    }
  }
  return out;
}

void LlamaNet::set_adapters_on(bool on) {
  for (LlamaLayer& layer : layers_)
    for (auto [name, proj] : layer.projections()) proj->adapter_on = on;
}

}  // namespace kbrl::lm
