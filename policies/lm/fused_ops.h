#pragma once
// Internal to kbrl::lm (includes libtorch): the fused operations of LlamaNet's passes (set_fused),
// each the same function as llama_net.h's torch operations up to float rounding:
//   - attention through scaled_dot_product_attention (libtorch 2 and later): on a GPU in half
//     precision flash attention, with the key/value heads as they are where its kernel takes grouped
//     heads (checked once per process against copies of them per query head);
//   - RMSNorm, the rotary embedding and SwiGLU's product as CUDA kernels (layer_kernels.h) with
//     their own backward passes: one read and one write of the activations where the torch
//     operations make a float32 copy and several passes over it;
//   - the output's log-probs and entropies of a chunk of rows from its logits, and their gradient,
//     one kernel each way (sequence_scores.h's chunks call them).
// Elsewhere (a CPU, a build against a CPU libtorch, a type the kernels do not take, a norm weight that
// trains) each is the torch operations.
#include <torch/torch.h>

namespace kbrl::lm {

/// rms_norm(x, w, eps) (llama_net.h).
torch::Tensor fused_rms_norm(const torch::Tensor& x, const torch::Tensor& w, double eps);

/// apply_rope of x [B, T, H, D] at T positions whose rows are cos, sin [T, D]; contiguous, in
/// x's layout (attention takes it as a [B, H, T, D] view without a copy).
torch::Tensor fused_rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

/// silu(gate) * up (FeedForward's product).
torch::Tensor fused_swiglu(const torch::Tensor& gate, const torch::Tensor& up);

/// A chunk of the output's rows scored by the kernels (layer_kernels.h's token_scores): log p of each
/// row's target and the entropy of p = softmax(logits / temperature), [rows] float32 each (entropy
/// undefined when not asked for), and what the gradient needs (stats). `logits` [rows, vocab] on a
/// GPU in bfloat16 or float32 (token_score_kernels); elsewhere the caller uses torch operations.
struct KernelTokenScores {
  torch::Tensor logprob, entropy, stats;
};
bool token_score_kernels(const torch::Tensor& logits);
KernelTokenScores kernel_token_scores(const torch::Tensor& logits, const torch::Tensor& targets, double temperature,
                                      bool with_entropy);
/// The gradient of those scores with respect to the logits (the same ones again), written over them.
void kernel_token_scores_backward(torch::Tensor& logits, const torch::Tensor& targets, const torch::Tensor& stats,
                                  const torch::Tensor& grad_logprob, const torch::Tensor& grad_entropy,
                                  double temperature);

/// q [B, H, T, D] against keys and values [B, KV, S, D] (KV divides H), causal with the last T keys
/// at the queries' positions: [B, H, T, D].
torch::Tensor fused_attention(const torch::Tensor& q, const torch::Tensor& keys, const torch::Tensor& values);

/// Whether this process's flash attention takes fewer key/value heads than query heads (the check
/// runs once, on the current GPU: forward and backward against per-head copies).
bool flash_takes_grouped_heads();

}  // namespace kbrl::lm
