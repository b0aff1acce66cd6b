#pragma once
// Internal to kbrl::lm (includes libtorch): the Llama-family decoder as tensors. Hugging Face's
// computation: RMSNorm (in float32), rotate-half rotary embeddings, grouped-query attention,
// SwiGLU, tied or untied output. Every projection is a LoraLinear (lora_linear.h). Base weights
// never train while an adapter is present; without one, nothing trains (kbrl adapts language models
// by LoRA only). Activation checkpointing: layer_checkpoint.h.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "lora_linear.h"
#include "model_file.h"

namespace kbrl::lm {

/// A token sequence as the [1, T] int64 tensor forward() reads, on `device`.
torch::Tensor token_ids(const std::vector<int>& ids, torch::Device device);
/// RMSNorm in float32 (the result in x's dtype).
torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps);
/// Rotate-half rotary embedding of x [..., head_dim] by the rows cos, sin [..., head_dim] (float32
/// arithmetic, the result in x's dtype).
torch::Tensor apply_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

// ---- the blocks (gpt-fast's shape: a norm, attention, a feed-forward, the block of them) ----

struct RmsNorm {
  torch::Tensor weight;  // [hidden] float32
  double eps = 1e-5;
  bool fused = true;  // fused_rms_norm (fused_ops.h); false: rms_norm's torch operations
  torch::Tensor operator()(const torch::Tensor& x) const;
};

/// A shared prompt's keys and values for one layer (undefined: none), and what a layer keeps of
/// the tokens it computes (keys after the rotary embedding).
struct LayerPrefix {
  torch::Tensor k, v;  // [1, kv_heads, P, head_dim]
};
struct LayerKeep {
  torch::Tensor k, v;  // [batch, kv_heads, T, head_dim]
};

/// The rotary tables' rows of a forward pass's positions, [T, head_dim] float32.
struct RopeRows {
  torch::Tensor cos, sin;
};

/// Grouped-query attention of x [batch, T, hidden], causal over the T tokens plus the prefix.
struct Attention {
  LoraLinear q, k, v, o;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool fused = true;  // fused_ops.h's attention (libtorch >= 2) and rotary embedding; false: torch operations
  torch::Tensor operator()(const torch::Tensor& x, const RopeRows& rope, const LayerPrefix& prefix,
                           LayerKeep* keep) const;
};

/// SwiGLU: down(silu(gate x) * up x).
struct FeedForward {
  LoraLinear gate, up, down;
  bool fused = true;  // fused_swiglu (fused_ops.h); false: torch operations
  torch::Tensor operator()(const torch::Tensor& x) const;
};

struct TransformerBlock {
  RmsNorm attn_norm, ffn_norm;
  Attention attention;
  FeedForward ffn;
  torch::Tensor operator()(torch::Tensor x, const RopeRows& rope, const LayerPrefix& prefix, LayerKeep* keep) const {
    x = x + attention(attn_norm(x), rope, prefix, keep);
    return x + ffn(ffn_norm(x));
  }
  /// The adaptable projections by their short names (q, k, v, o, gate, up, down).
  std::vector<std::pair<std::string, LoraLinear*>> projections();
  /// The fused operations (LlamaNet::set_fused) on or off in every part of the block.
  void set_fused(bool on);
};

/// What a forward pass returns: the final hidden states (after the last norm), [batch, T, hidden].
class LlamaNet {
 public:
  LlamaNet(const ModelFile& file, torch::Device device, torch::ScalarType dtype);
  /// A randomly initialized model of the given shape (normal(0, 0.02) weights, an untied output of std 1/sqrt(hidden) when untied, unit norms): for
  /// plumbing tests and throughput figures where no weights can travel.
  LlamaNet(const LlamaConfig& config, uint64_t seed, torch::Device device, torch::ScalarType dtype);

  const LlamaConfig& config() const { return config_; }
  torch::Device device() const { return device_; }
  torch::ScalarType dtype() const { return dtype_; }

  /// Hidden states of `ids` [batch, T] at positions past..past+T-1: attention is causal over the T
  /// tokens plus `prefix` (the keys/values of a shared prompt, batch 1, broadcast over ids' batch).
  /// With `keep`, each layer's keys (after the rotary embedding) and values of these T tokens are
  /// kept there (a prompt computed once: the pre-fill of scoring and of BatchDecoder).
  struct Prefix {
    std::vector<torch::Tensor> k, v;  // per layer [1, kv_heads, P, head_dim]
    int64_t length = 0;
  };
  torch::Tensor forward(const torch::Tensor& ids, int64_t past, const Prefix* prefix = nullptr, Prefix* keep = nullptr);
  /// Layer `index` of forward(): hidden states in, hidden states out.
  torch::Tensor layer_forward(size_t index, torch::Tensor x, int64_t past, const LayerPrefix& prefix, LayerKeep* keep);
  /// Activation checkpointing: a forward with gradients and no cache keeps only each layer's inputs
  /// and recomputes the layer in the backward pass (memory of one layer's activations instead of
  /// all of them, for about a third more compute).
  void set_checkpointing(bool on) { checkpointing_ = on; }
  bool checkpointing() const { return checkpointing_; }
  /// Fused operations (the default): attention, RMSNorm and the rotary embedding of fused_ops.h, the
  /// output's log-probs in chunks of rows (sequence_scores.h), LoRA's products in the activations'
  /// type added in place (lora_linear.h); off, the plain tensor operations they replace, which tests
  /// compare them with.
  void set_fused(bool on);
  bool fused() const { return fused_; }
  /// Rows of hidden states whose logits score_sequences computes at a time when fused (tests set
  /// small chunks; the default keeps a chunk's float32 logits near 256 MiB).
  void set_score_chunk_rows(int64_t rows) { score_chunk_rows_ = rows; }
  int64_t score_chunk_rows() const;
  /// Logits (float32) of hidden states [..., hidden] -> [..., vocab].
  torch::Tensor logits(const torch::Tensor& hidden) const;

  const torch::Tensor& embedding() const { return embed_; }
  const torch::Tensor& final_norm() const { return norm_.weight; }
  /// The output projection [vocab, hidden] (the embedding when tied).
  const torch::Tensor& output_weight() const { return lm_head_.defined() ? lm_head_ : embed_; }
  /// Rotary tables [context, head_dim], float32.
  const torch::Tensor& rope_cos() const { return rope_cos_; }
  const torch::Tensor& rope_sin() const { return rope_sin_; }

  std::vector<TransformerBlock>& layers() { return layers_; }
  const std::vector<TransformerBlock>& layers() const { return layers_; }
  /// Base weights under Hugging Face names (for checkpoints).
  std::vector<std::pair<std::string, torch::Tensor*>> named_weights();
  /// Turns every adapter on or off (off = the base model).
  void set_adapters_on(bool on);

 private:
  void init_rope();
  TransformerBlock empty_block() const;  // the block's shape and norms' epsilon, no weights yet

  LlamaConfig config_;
  torch::Device device_;
  torch::ScalarType dtype_;
  torch::Tensor embed_, lm_head_;  // lm_head_ undefined when tied
  RmsNorm norm_;
  std::vector<TransformerBlock> layers_;
  torch::Tensor rope_cos_, rope_sin_;  // [context, head_dim] float32
  bool checkpointing_ = false;
  bool fused_ = true;
  int64_t score_chunk_rows_ = 0;  // 0: from the vocabulary's size
};

}  // namespace kbrl::lm
