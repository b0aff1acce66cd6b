#pragma once
// Internal to kbrl::lm: the fused CUDA kernels of BatchDecoder's step (decoder_kernels.cu,
// decoder_attention.cu, decoder_matvec.cu, decoder_sampler.cu; built only against a CUDA libtorch). Plain pointers and a stream, no libtorch: the caller owns the buffers.
// Element type: bfloat16 (`bf16` true) or float32; every sum is taken in float32 and each kernel
// rounds where the torch-ops step rounds (batch_decoder.cpp's step_reference).
#include <algorithm>
#include <cstdint>

namespace kbrl::lm::kernels {

/// Shapes a fused step serves: head_dim 64 or 128, at most 8 query heads per key/value head.
bool fused_step_supported(int64_t head_dim, int64_t group);

/// x += delta (when delta is not null, rounded to the element type), then
/// y = x * rsqrt(mean(x^2) + eps) * w (float32 w). x, delta, y: [rows, hidden].
void add_rmsnorm(void* x, const void* delta, const float* w, void* y, int64_t rows, int64_t hidden, float eps,
                 bool bf16, void* stream);

/// Splits qkv [n, (H + 2 KV) D] (+ bias), applies the rotary embedding of position
/// prompt_length + step (cos/sin tables [context, D], float32) to q and k, and writes q to
/// q_out [KV, n, G, D] and k, v to position `step` of own_k, own_v [KV, n, M, D].
void rope_qkv(const void* qkv, const void* bias, const float* cos, const float* sin, const int64_t* prompt_length,
              const int64_t* step, void* q_out, void* own_k, void* own_v, int64_t n, int64_t heads, int64_t kv_heads,
              int64_t head_dim, int64_t max_tokens, bool bf16, void* stream);

/// How many blocks share one sequence's keys (flash-decoding), for a step reading `keys` keys per
/// sequence on the current device: fewest_wave_splits with the blocks the GPU holds at once (its SMs
/// times the attention kernel's occupancy) and the keys the kernel's loop reads per iteration.
int64_t attention_splits(int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, bool bf16, int64_t keys);

constexpr int64_t kMaxAttentionSplits = 64;

/// The split count whose blocks (`blocks` per split: sequences times key/value heads), in waves of
/// `resident` blocks, finish first: waves times a block's time in loop iterations, its share of the
/// keys plus one for what follows the loop and one more for the merge when the keys are shared. At
/// most kMaxAttentionSplits, at least 16 keys each; the fewest splits among equals.
inline int64_t fewest_wave_splits(int64_t blocks, int64_t resident, int64_t keys, int64_t keys_per_iteration) {
  resident = std::max<int64_t>(1, resident);
  int64_t best = 1;
  double best_cost = 0;
  for (int64_t s = 1; s <= std::min<int64_t>(kMaxAttentionSplits, std::max<int64_t>(1, keys / 16)); ++s) {
    const double waves = static_cast<double>((blocks * s + resident - 1) / resident);
    const double cost =
        waves * (static_cast<double>(keys) / static_cast<double>(s * keys_per_iteration) + (s > 1 ? 2 : 1));
    if (s == 1 || cost < best_cost) best = s, best_cost = cost;
  }
  return best;
}
/// The float32 workspace attention() needs for `splits` (0 when 1).
int64_t attention_workspace_floats(int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, int64_t splits);

/// Grouped-query attention of q [KV, n, G, D] over the shared prompt's keys/values [KV, Pc, D]
/// (positions < prompt_length) and each sequence's own [KV, n, M, D] (positions <= step); the
/// result in out [n, KV * G * D] (head kv * G + g). Scores are rounded to the element type and
/// scaled by 1 / sqrt(D) before a float32 softmax (taken in base 2). With splits > 1 the keys are shared out over that
/// many blocks per sequence, each writing its share to `workspace`; the last block of a sequence
/// to finish (counted in `arrived`, n * KV ints, zero before the first call and left zero) merges them.
void attention(const void* q, const void* prompt_k, const void* prompt_v, const void* own_k, const void* own_v,
               const int64_t* prompt_length, const int64_t* step, void* out, float* workspace, int* arrived,
               int64_t splits, int64_t n, int64_t kv_heads, int64_t group, int64_t head_dim, int64_t prompt_capacity,
               int64_t max_tokens, bool bf16, void* stream);

/// out [n, I] = silu(gu[:, :I]) * gu[:, I:] (gu [n, 2I]), each product rounded as torch rounds it.
void silu_mul(const void* gu, void* out, int64_t n, int64_t intermediate, bool bf16, void* stream);

/// The next token of each row of logits [n, vocab] (float32) at `temperature`: when greedy the row's
/// maximum (its first index), else the inverse CDF at u = uniforms[step * n + row] of the row's
/// softmax (the first token whose running sum of exp(logit / temperature - max) exceeds u times the
/// row's total; the last token if rounding leaves none). Writes it to chosen[row] and
/// tokens[row, step], its log-prob logit / temperature - logsumexp to logprobs[row, step]
/// (tokens, logprobs: [n, max_tokens]). The torch-ops sampler's draws from the same uniforms, up to
/// the order of float32 sums.
void sample_tokens(const float* logits, int64_t n, int64_t vocab, float temperature, bool greedy,
                   const float* uniforms, const int64_t* step, int64_t max_tokens, int64_t* chosen, int64_t* tokens,
                   float* logprobs, void* stream);

/// A small batch's step (at most kMatvecRows rows) runs its projections as matvec: one warp per
/// output column reads the weight row once for every row, with what comes before and after the
/// product in the same kernel.
inline constexpr int64_t kMatvecRows = 8;
enum class MatvecOut {
  store,        // out [rows, N] (element type) = rmsnorm(in) W^T
  store_float,  // out [rows, N] float32 = rmsnorm(in) W^T, each value rounded to the element type first
  silu,         // out [rows, N] = silu(g) * u, [g | u] = rmsnorm(in) W^T (W: [2N, K], gate rows first)
  add_to,       // out [rows, N] += in W^T (the product rounded to the element type, then the sum)
};
/// Rows and input width (a multiple of 8) that matvec serves.
bool matvec_supported(int64_t rows, int64_t in_features);
/// in [rows, K] (K = in_features), weight [N, K] row-major (N = out_features; silu: [2N, K]), the
/// element type's; norm_w [K] float32 (the modes that norm first: each row scaled by
/// rsqrt(mean(in^2) + eps) and norm_w, rounded to the element type, as add_rmsnorm stores it; null
/// for add_to). Sums in float32; each result rounded where the torch-ops step rounds. `max_blocks`
/// caps the grid (columns are shared out over its warps).
void matvec(MatvecOut mode, const void* in, const float* norm_w, float eps, const void* weight, void* out,
            int64_t rows, int64_t in_features, int64_t out_features, int max_blocks, bool bf16, void* stream);

}  // namespace kbrl::lm::kernels
