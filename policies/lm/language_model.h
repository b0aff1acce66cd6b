#pragma once
// A Llama-family language model in the process (libtorch behind a header that does not include
// it): loaded from a GGUF file or a Hugging Face folder (model_file.h), or randomly initialized
// for plumbing tests. Batched sampling (batch_decoder.h: the prompt computed once and shared by the
// batch, a static KV cache, sampling on the device, CUDA graphs on a GPU), temperature and top-p,
// per-sample seeds; per-token log-probs; scoring of given token sequences. LoRA adapters and the optimizer step live in LmPolicy (lm_policy.h),
// which owns one of these.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "chat_template.h"
#include "model_file.h"
#include "tokenizer.h"

namespace kbrl::lm {

class LlamaNet;
class BatchDecoder;

struct ModelOptions {
  std::string device = "cpu";    // cpu | cuda[:N]
  std::string dtype = "float32";  // float32 | bfloat16 (the base weights and activations; LoRA is float32)
  bool cuda_graphs = true;         // on a GPU, each decoding step is a CUDA graph replay (batch_decoder.h)
  int matvec_rows = 4;             // on a GPU, batches of at most this many completions (0-8) decode with matvec kernels
  int attention_splits = 0;        // on a GPU, blocks sharing one sequence's keys in attention (1-64; 0: chosen per batch)
  bool cpu_q8_weights = false;      // on a CPU, sampling reads 8-bit (Q8_0) copies of the projections and the output (q8_weights.h)
  bool fused = true;               // fused attention and chunked log-probs in scoring and updates; false: plain tensor ops
  int64_t score_chunk_rows = 0;    // rows of the output's logits computed at a time when fused; 0 = about 256 MiB
};

/// What the sampler did so far: CUDA graphs captured and replayed, steps run without a graph,
/// refreshes of its sampling copy of the weights (after a weight or adapter changed); the blocks
/// per sequence of the fused step's attention in the batch shape set up last (0: none yet).
struct DecoderCounters {
  int64_t graphs_captured = 0, graph_replays = 0, eager_steps = 0, weight_refreshes = 0, attention_splits = 0;
};

struct GenerateOptions {
  int max_tokens = 256;
  double temperature = 1.0;  // 0 = greedy
  double top_p = 1.0;
  uint64_t seed = 0;
};

/// One sampled continuation. `tokens` ends with the end-of-turn/eos token when the model stopped
/// by itself (finish_reason "stop"), else after max_tokens ("length"). logprobs: log p of each token
/// under the sampling distribution (logits / temperature, before top-p; temperature 1 when greedy).
struct Generation {
  std::vector<int> tokens;
  std::vector<double> logprobs;
  std::string finish_reason;
};

class LanguageModel {
 public:
  LanguageModel(const ModelFile& file, const ModelOptions& options);
  /// Random weights of `config`'s shape (seeded) and the given tokenizer (config.vocab_size must
  /// be at least its vocabulary).
  LanguageModel(const LlamaConfig& config, TokenizerData tokenizer, ChatTemplate chat, uint64_t seed,
                const ModelOptions& options);
  ~LanguageModel();
  LanguageModel(LanguageModel&&) noexcept;

  const LlamaConfig& config() const;
  const Tokenizer& tokenizer() const { return tokenizer_; }
  const ChatTemplate& chat() const { return chat_; }
  const std::string& name() const { return name_; }
  const std::string& source() const { return source_; }

  /// `n` continuations of `prompt`; continuation i draws from a stream seeded by
  /// derive_seed(seed, {i}), so it does not depend on n. The prompt plus max_tokens must fit the
  /// context (InputError otherwise).
  std::vector<Generation> generate(const std::vector<int>& prompt, int n, const GenerateOptions& options);

  /// log p(completion_j | prompt, completion_<j) at `temperature` (> 0), per token, without
  /// gradients.
  std::vector<std::vector<double>> score(const std::vector<int>& prompt,
                                         const std::vector<std::vector<int>>& completions, double temperature = 1.0);

  LlamaNet& net();
  DecoderCounters decoder_counters() const;

 private:
  std::unique_ptr<LlamaNet> net_;
  Tokenizer tokenizer_;
  ChatTemplate chat_;
  std::string name_, source_;
  std::unique_ptr<BatchDecoder> decoder_;  // after net_: it keeps a reference to it
};

/// A byte-level tokenizer (the 256 GPT-2 byte tokens, no merges) plus ChatML's special tokens:
/// what a randomly initialized model reads when no vocabulary can be brought along.
TokenizerData byte_tokenizer_data();

}  // namespace kbrl::lm
