// LlamaNet (llama_net.h): the blocks, the decoder's forward pass (with activation checkpointing),
// the weights by Hugging Face name.
#include <cmath>

#include <torch/version.h>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "fused_ops.h"
#include "language_model.h"
#include "layer_checkpoint.h"
#include "llama_net.h"
#include "sequence_scores.h"

namespace kbrl::lm {

std::vector<std::pair<std::string, LoraLinear*>> TransformerBlock::projections() {
  return {{"q", &attention.q},  {"k", &attention.k}, {"v", &attention.v},   {"o", &attention.o},
          {"gate", &ffn.gate}, {"up", &ffn.up},     {"down", &ffn.down}};
}

void TransformerBlock::set_fused(bool on) {
  attention.fused = attn_norm.fused = ffn_norm.fused = ffn.fused = on;
  for (auto [name, proj] : projections()) proj->fused = on;
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

torch::Tensor token_ids(const std::vector<int>& ids, torch::Device device) {
  std::vector<int64_t> v(ids.begin(), ids.end());
  return torch::tensor(v, torch::kInt64).to(device).unsqueeze(0);
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  const torch::Tensor xf = x.to(torch::kFloat32);
  return (xf * torch::rsqrt(xf.pow(2).mean(-1, true) + eps) * w).to(x.scalar_type());
}

torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const torch::Tensor xf = x.to(torch::kFloat32);
  return (xf * cos + rotate_half(xf) * sin).to(x.scalar_type());
}

torch::Tensor RmsNorm::operator()(const torch::Tensor& x) const {
  return fused ? fused_rms_norm(x, weight, eps) : rms_norm(x, weight, eps);
}

torch::Tensor FeedForward::operator()(const torch::Tensor& x) const {
  return down(fused ? fused_swiglu(gate(x), up(x)) : torch::silu(gate(x)) * up(x));
}

LlamaNet::LlamaNet(const ModelFile& file, torch::Device device, torch::ScalarType dtype)
    : config_(file.config), device_(device), dtype_(dtype) {
  auto w = [&](const std::string& name, torch::ScalarType type) {
    return to_tensor(file.weights.at(name), device, type);
  };
  embed_ = w(std::string(kHfEmbedding), dtype);
  norm_ = {w(std::string(kHfFinalNorm), torch::kFloat32), config_.rms_eps};
  if (!config_.tied_embeddings) lm_head_ = w(std::string(kHfOutput), dtype);
  for (int64_t l = 0; l < config_.layers; ++l) {
    TransformerBlock layer = empty_block();
    layer.attn_norm.weight = w(hf_norm_name(l, true), torch::kFloat32);
    layer.ffn_norm.weight = w(hf_norm_name(l, false), torch::kFloat32);
    for (auto [name, proj] : layer.projections()) {
      proj->weight = w(hf_projection_name(l, name), dtype);
      if (file.weights.count(hf_projection_name(l, name, "bias"))) proj->bias = w(hf_projection_name(l, name, "bias"), dtype);
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
  norm_ = {torch::ones({c.hidden}, torch::TensorOptions().device(device).dtype(torch::kFloat32)), c.rms_eps};
  // An untied output of std 1/sqrt(hidden): logits start near unit scale and can reach sqrt(hidden).
  // With 0.02 and unit norm weights (LoRA trains neither), no logit passes 0.02 * hidden (5 at
  // hidden 256), no token gets past p = 0.4 and SFT stalls; a tied output of that scale would
  // instead make every position predict its own input token.
  if (!c.tied_embeddings)
    lm_head_ = random_tensor({c.vocab_size, c.hidden}, 1.0 / std::sqrt(static_cast<double>(c.hidden)), state, device,
                             dtype);
  for (int64_t l = 0; l < c.layers; ++l) {
    TransformerBlock layer = empty_block();
    layer.attn_norm.weight = norm_.weight.clone();
    layer.ffn_norm.weight = norm_.weight.clone();
    Attention& a = layer.attention;
    a.q.weight = random_tensor({q, c.hidden}, 0.02, state, device, dtype);
    a.k.weight = random_tensor({kv, c.hidden}, 0.02, state, device, dtype);
    a.v.weight = random_tensor({kv, c.hidden}, 0.02, state, device, dtype);
    a.o.weight = random_tensor({c.hidden, q}, 0.02, state, device, dtype);
    layer.ffn.gate.weight = random_tensor({c.intermediate, c.hidden}, 0.02, state, device, dtype);
    layer.ffn.up.weight = random_tensor({c.intermediate, c.hidden}, 0.02, state, device, dtype);
    layer.ffn.down.weight = random_tensor({c.hidden, c.intermediate}, 0.02, state, device, dtype);
    if (c.attention_bias)
      for (LoraLinear* p : {&a.q, &a.k, &a.v}) p->bias = torch::zeros({p->weight.size(0)}, p->weight.options());
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

TransformerBlock LlamaNet::empty_block() const {
  TransformerBlock b;
  b.attn_norm.eps = b.ffn_norm.eps = config_.rms_eps;
  b.attention.heads = config_.heads;
  b.attention.kv_heads = config_.kv_heads;
  b.attention.head_dim = config_.head_dim;
  b.set_fused(fused_);
  return b;
}

namespace {

// q [B, H, T, D] against keys and values [B, KV, S, D] (KV divides H), causal with the last T keys
// at the queries' positions: [B, H, T, D], the scores as tensors (float32 softmax): what
// fused_attention (fused_ops.h) computes up to rounding.
torch::Tensor plain_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), D = q.size(3), KV = keys.size(1), S = keys.size(2);
  // Grouped-query attention without copying keys: the G query heads of a key/value head are stacked
  // as rows, [B, KV, G*T, D] against [B, KV, S, D].
  const int64_t G = H / KV;
  const torch::Tensor qg = q.reshape({B, KV, G * T, D});
  torch::Tensor scores =
      torch::matmul(qg, keys.transpose(-1, -2)).to(torch::kFloat32) / std::sqrt(static_cast<double>(D));
  if (T > 1) {
    const auto opts = torch::TensorOptions().device(q.device()).dtype(torch::kInt64);
    const torch::Tensor row_pos = (torch::arange(T, opts) + (S - T)).repeat({G});  // row g*T + t is position t
    const torch::Tensor mask = torch::arange(S, opts).unsqueeze(0) > row_pos.unsqueeze(1);
    scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  }
  const torch::Tensor p = torch::softmax(scores, -1).to(q.scalar_type());
  return torch::matmul(p, values).reshape({B, H, T, D});
}

}  // namespace

torch::Tensor Attention::operator()(const torch::Tensor& x, const RopeRows& rope, const LayerPrefix& prefix,
                                    LayerKeep* keep) const {
  const int64_t B = x.size(0), T = x.size(1), H = heads, KV = kv_heads, D = head_dim;
  torch::Tensor q, k, v = this->v(x).view({B, T, KV, D}).transpose(1, 2);
  if (fused) {  // rotated in the projections' [B, T, heads, D] layout, attended as [B, heads, T, D] views
    q = fused_rope(this->q(x).view({B, T, H, D}), rope.cos, rope.sin).transpose(1, 2);
    k = fused_rope(this->k(x).view({B, T, KV, D}), rope.cos, rope.sin).transpose(1, 2);
  } else {
    q = apply_rope(this->q(x).view({B, T, H, D}).transpose(1, 2), rope.cos, rope.sin);
    k = apply_rope(this->k(x).view({B, T, KV, D}).transpose(1, 2), rope.cos, rope.sin);
  }
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
#if TORCH_VERSION_MAJOR >= 2
  const auto attend = fused ? fused_attention : plain_attention;
#else
  const auto attend = plain_attention;  // no scaled_dot_product_attention before libtorch 2
#endif
  const torch::Tensor out = attend(q, keys, values).transpose(1, 2).reshape({B, T, H * D});
  return o(out);
}

torch::Tensor LlamaNet::layer_forward(size_t index, torch::Tensor x, int64_t past, const LayerPrefix& prefix,
                                      LayerKeep* keep) {
  const int64_t T = x.size(1);
  return layers_[index](x, RopeRows{rope_cos_.narrow(0, past, T), rope_sin_.narrow(0, past, T)}, prefix, keep);
}


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
      const auto out = layer_checkpoint::CheckpointedLayer::apply(layer_checkpoint::LayerCall{this, l, past, keep != nullptr}, x,
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
  return norm_(x);
}

torch::Tensor LlamaNet::logits(const torch::Tensor& hidden) const {
  return torch::matmul(hidden, (lm_head_.defined() ? lm_head_ : embed_).t()).to(torch::kFloat32);
}

std::vector<std::pair<std::string, torch::Tensor*>> LlamaNet::named_weights() {
  std::vector<std::pair<std::string, torch::Tensor*>> out = {{std::string(kHfEmbedding), &embed_},
                                                             {std::string(kHfFinalNorm), &norm_.weight}};
  if (lm_head_.defined()) out.push_back({std::string(kHfOutput), &lm_head_});
  for (size_t l = 0; l < layers_.size(); ++l) {
    const auto layer = static_cast<int64_t>(l);
    out.push_back({hf_norm_name(layer, true), &layers_[l].attn_norm.weight});
    out.push_back({hf_norm_name(layer, false), &layers_[l].ffn_norm.weight});
    for (auto [name, proj] : layers_[l].projections()) {
      out.push_back({hf_projection_name(layer, name), &proj->weight});
      if (proj->bias.defined()) out.push_back({hf_projection_name(layer, name, "bias"), &proj->bias});
    }
  }
  return out;
}

void LlamaNet::set_fused(bool on) {
  fused_ = on;
  norm_.fused = on;
  for (TransformerBlock& layer : layers_) layer.set_fused(on);
}

int64_t LlamaNet::score_chunk_rows() const {
  return score_chunk_rows_ > 0 ? score_chunk_rows_ : std::max<int64_t>(1, (int64_t{1} << 28) / (4 * config_.vocab_size));
}

void LlamaNet::set_adapters_on(bool on) {
  for (TransformerBlock& layer : layers_)
    for (auto [name, proj] : layer.projections()) proj->adapter_on = on;
}

}  // namespace kbrl::lm
