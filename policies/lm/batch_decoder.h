#pragma once
// Internal to kbrl::lm (includes libtorch): decoding a batch of completions of one prompt with
// fixed shapes, so that on a GPU each step is one CUDA graph replay and the CPU stays out of the loop.
//   - The prompt is computed once (batch 1) and its keys and values are a pre-fill that every
//     completion attends to (never copied per completion); each completion's own keys and values go
//     to a static cache of max_tokens positions.
//   - A step samples the next token from the logits on the device (the uniforms of every
//     completion's seeded stream are drawn on the host beforehand, so the draws are those of the
//     stream, whatever the device), records it and its log-prob, runs it through the model and
//     advances a step counter that lives on the device.
//   - The step runs on a sampling copy of the weights (decoder_weights.h): LoRA merged in, q/k/v and
//     gate/up concatenated into one matrix each, refreshed in place when a weight or an adapter
//     changed, so captured graphs stay valid across optimizer steps.
//   - On CUDA, for the head sizes decoder_kernels.h serves, the step is the fused one (9 kernels a
//     layer, 5 for batches of at most matvec_rows; attention reads the step from the device; the
//     sampler one kernel unless top-p is below 1), captured once per batch shape as a CUDA
//     graph and replayed (graphs=off: run eagerly); the host looks at the tokens every 32 steps to
//     stop when every completion has ended. Otherwise the step is torch operations: on CUDA with
//     graphs, one graph per window of 128 own positions (attention reads the window, masked); on a
//     CPU eagerly, over exactly the positions written so far, the host looking after every step.
// Results equal the step-by-step reference up to float rounding (test_lm_decoder).
#include <torch/torch.h>

#include <list>
#include <memory>
#include <vector>

#include "language_model.h"
#include "llama_net.h"
#include "q8_weights.h"

namespace kbrl::lm {

struct DecoderWeights;  // decoder_weights.h

class BatchDecoder {
 public:
  /// Reads options' cpu_q8_weights (on a CPU, every step's projections and output read 8-bit copies
  /// of the weights: q8_weights.h; an InputError when a projection's input is not whole blocks of
  /// 32), cuda_graphs, matvec_rows (on CUDA, batches of at most this many completions run
  /// their projections as decoder_kernels' matvec; larger ones as matrix products) and
  /// attention_splits (0: kernels::attention_splits decides).
  BatchDecoder(LlamaNet& net, const ModelOptions& options);
  ~BatchDecoder();

  std::vector<Generation> generate(const std::vector<int>& prompt, int n, const GenerateOptions& options,
                                   const Tokenizer& tokenizer);

  const DecoderCounters& counters() const { return counters_; }

 private:
  struct State;
  State& state_for(int n, int64_t prompt_length, int max_tokens, const GenerateOptions& options);
  torch::Tensor sample(State& s);        // the next tokens, recorded; [n, 1]
  /// Samples, then runs the tokens through the model (torch ops; the fused step on CUDA). `window`:
  /// the own positions attention reads; `exact`: they and the prompt's capacity hold only written
  /// positions (no mask needed).
  void step(State& s, int64_t window, bool exact);
  void step_fused(State& s);             // the same with the fused CUDA kernels (decoder_kernels.h)
  void capture(State& s);

  LlamaNet& net_;
  bool cuda_graphs_;
  int matvec_rows_;
  int attention_splits_;
  bool fused_ = false;  // CUDA, bfloat16 or float32, a head size and grouping the kernels serve
  std::unique_ptr<DecoderWeights> weights_;
  Q8Activations q8_rows_;  // the step's activations in 8 bits (cpu_q8_weights)
  std::list<std::unique_ptr<State>> states_;  // most recently used first; a few kept
  DecoderCounters counters_;
};

}  // namespace kbrl::lm
