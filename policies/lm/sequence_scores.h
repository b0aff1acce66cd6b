#pragma once
// Internal to kbrl::lm (includes libtorch): per-token log-probs of completions of one prompt, the
// prompt computed once (batch 1) and its keys/values shared by every completion. Gradients flow
// when grad mode is on (the optimizer step uses it; scoring runs under NoGradGuard).
#include <torch/torch.h>

#include <vector>

#include "llama_net.h"

namespace kbrl::lm {

struct SequenceScores {
  torch::Tensor logprobs;  // [n, C] float32, 0 beyond each completion's length
  torch::Tensor mask;      // [n, C] float32, 1 on scored tokens (not padding, not a row's unscored context)
  torch::Tensor entropy;   // [n, C] float32 (nats) when asked for, else undefined
};

/// completions padded to the longest; temperature divides the logits (> 0). `unscored[i]` (when
/// given): how many leading tokens of row i are context only (the rest of its own prompt after the
/// shared one, micro_batches.h): computed like the others but never scored (no logits; log-prob,
/// entropy and mask 0 there).
SequenceScores score_sequences(LlamaNet& net, const std::vector<int>& prompt,
                               const std::vector<std::vector<int>>& completions, double temperature,
                               bool with_entropy, const std::vector<size_t>& unscored = {});

/// The rows of a [n, C] tensor as vectors cut to each completion's length.
std::vector<std::vector<double>> rows_of(const torch::Tensor& values, const std::vector<std::vector<int>>& completions);

}  // namespace kbrl::lm
