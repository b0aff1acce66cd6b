#pragma once
// Internal to kbrl::lm: CUDA kernels of a decoder layer's forward and backward passes in the update
// and in scoring (layer_kernels.cu, built only against a CUDA libtorch; fused_ops.cpp wraps them as
// autograd functions). Plain pointers and a stream, no libtorch. Element type: bfloat16 (`bf16` true)
// or float32; arithmetic in float32, each result rounded once, as the torch operations they replace
// (llama_net.h's rms_norm and apply_rope) round.
#include <cstdint>

namespace kbrl::lm::kernels {

/// The gradient of y = x * rsqrt(mean(x^2) + eps) * w (w float32, not trained) with respect to x:
/// grad_x = r (g w) - r^3 x mean(g w x), r = rsqrt(mean(x^2) + eps). x, grad_y, grad_x: [rows, hidden].
void rms_norm_backward(const void* x, const void* grad_y, const float* w, void* grad_x, int64_t rows, int64_t hidden,
                       float eps, bool bf16, void* stream);

/// The rotate-half rotary embedding of x [rows, heads, head_dim] into y (same shape; y may be x): row
/// r at position r % positions, whose cos and sin are the rows of `cos`, `sin` [positions, head_dim]
/// (float32, each half the same as the other). `inverse`: the rotation back (its transpose, the
/// gradient of the forward one).
void rotary(const void* x, const float* cos, const float* sin, void* y, int64_t rows, int64_t heads, int64_t head_dim,
            int64_t positions, bool inverse, bool bf16, void* stream);

/// out = silu(gate) * up, elementwise over n values, silu(gate) rounded to the element type before
/// the product (as torch::silu(gate) * up rounds).
void swiglu(const void* gate, const void* up, void* out, int64_t n, bool bf16, void* stream);

/// The gradients of swiglu for grad_out: grad_gate, grad_up (each rounded where autograd's
/// operations round: grad_out * up, then silu's derivative).
void swiglu_backward(const void* gate, const void* up, const void* grad_out, void* grad_gate, void* grad_up, int64_t n,
                     bool bf16, void* stream);

/// Per row of logits [rows, vocab] (z = logits / temperature, p = softmax(z)): the log-prob of the
/// row's target, log p[target], into logprob [rows], the entropy -sum p log p into entropy [rows]
/// (when not null), and stats [rows, 2] = (log sum exp z, sum p z) for the backward pass. Float32
/// outputs; one block per row.
void token_scores(const void* logits, const int64_t* targets, float* logprob, float* entropy, float* stats,
                  int64_t rows, int64_t vocab, float temperature, bool bf16, void* stream);

/// The gradient of token_scores' outputs with respect to the logits for grad_logprob [rows] and
/// grad_entropy [rows] (may be null), written over `logits`:
/// (grad_logprob (onehot(target) - p) - grad_entropy p (z - sum p z)) / temperature.
void token_scores_backward(void* logits, const int64_t* targets, const float* stats, const float* grad_logprob,
                           const float* grad_entropy, int64_t rows, int64_t vocab, float temperature, bool bf16,
                           void* stream);

}  // namespace kbrl::lm::kernels
