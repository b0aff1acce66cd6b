#pragma once
// Internal to kbrl::lm: what an update's micro-batch keeps for its backward pass without activation
// checkpointing, and what the GPU has free for it: `checkpoint=auto` (lm_policy.h) checkpoints only
// the micro-batches that would not fit.
#include <cstdint>

#include <torch/torch.h>

#include "model_file.h"

namespace kbrl::lm {

/// Bytes of the activations a micro-batch of `completions` (the longest `longest` tokens) after a
/// shared prompt of `prompt` tokens keeps for the backward pass without checkpointing, with the fused
/// operations, `element_bytes` per activation (2 for bfloat16). Per layer and completion token: the
/// norms' inputs and outputs (4 x hidden), q and attention's output (2 x heads x head_dim), SwiGLU's
/// gate, up and product (3 x intermediate); per layer and completion: the keys and values attention
/// reads, the prompt's included (2 x kv_heads x head_dim x (prompt + longest)). At SmolLM2-135M's
/// shapes, 32 and 64 completions of 1,024 tokens after 3,105 give 17.6 and 35.2 GiB, where an H100
/// measured 17.5 and 33.6 GiB more at the update's peak than with checkpointing
/// (results/h100-80gb-hbm3/lm-train/, run 4).
inline int64_t activation_bytes(const LlamaConfig& c, int64_t completions, int64_t longest, int64_t prompt,
                                int64_t element_bytes) {
  const int64_t per_token = 4 * c.hidden + 2 * c.heads * c.head_dim + 3 * c.intermediate;
  const int64_t per_completion = longest * per_token + 2 * c.kv_heads * c.head_dim * (prompt + longest);
  return c.layers * completions * per_completion * element_bytes;
}

/// Bytes a new tensor on `device` can take now: the GPU's free memory plus what libtorch's caching
/// allocator holds unused; 0 on a CPU or in a build against a CPU libtorch.
int64_t device_bytes_available(const torch::Device& device);

}  // namespace kbrl::lm
