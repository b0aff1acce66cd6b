#pragma once
// LmPolicy: a language model in the process as a TrainablePolicy (docs/design.md, Policies). The
// action is text: the task's prompt (kernels/prompt.h) in the model's chat template, sampled with
// a KV cache; per-token log-probs under the sampling distribution (logits / temperature; the
// model's own at temperature 1 for greedy samples) so that GRPO's ratios compare like with like.
// LoRA adapters on the chosen projections (q, k, v, o, gate, up, down); an optimizer step over a
// batch of scored samples with the objectives of policy.h, micro-batched per prompt (a prompt's
// keys/values are computed once per micro-batch and shared by its completions). SDPO's teacher is
// the same model reading the teacher prompt: the task, the rollout's execution feedback and
// optionally a correct solution from the batch, never the rollout's own code.
// `--policy lm:<model>[,key=value...]`: a .gguf file or a Hugging Face folder; keys below.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <policies/policy.h>
#include <kernels/prompt.h>

#include "language_model.h"

namespace kbrl::lm {

class DataParallelGroup;  // data_parallel.h

struct LmOptions {
  std::string model;  // a .gguf file or a Hugging Face folder; "random:<layers>x<hidden>[:seed]" or "random:<preset>[:seed]" for a random model
  ModelOptions model_options;
  int max_tokens = 1024;
  double top_p = 1.0;
  PromptOptions prompt;
  std::vector<std::string> lora_targets = {"q", "k", "v", "o", "gate", "up", "down"};
  int micro_batch = 0;  // completions per forward/backward pass in update(); 0 = 8 on a CPU, 32 on a GPU
  std::string checkpoint;  // activation checkpointing in update(): on, off, auto, "" = on for a GPU, off on a CPU
  std::string pool;        // update(): prompts with few completions share passes (micro_batches.h): on, off, "" = on for a GPU, off on a CPU
  std::string adapter;     // a LoRA adapter file loaded on top of the model (kbrl sft's adapter.pt); "" = none
};

/// `lm:<model>[,key=value...]`, keys: device (cpu|cuda[:N]), dtype (float32|bfloat16), graphs
/// (on|off: CUDA graphs for decoding on a GPU, default on), fused (on|off: fused attention and chunked
/// log-probs in scoring and updates, default on), max_tokens, top_p, style, shots, system
/// (as the endpoint spec), targets (q+k+v+o+gate+up+down, any subset joined by '+'), micro_batch,
/// checkpoint (on|off|auto: activation checkpointing in the update; default on for a GPU, off on a
/// CPU; auto: on a GPU, only for the micro-batches whose activations (update_memory.h's estimate) would
/// not fit in 80% of the memory free when the micro-batch starts),
/// pool (on|off: completions of prompts with fewer than 4 completions, as in an SFT batch, share passes
/// behind their prompts' common prefix instead of passes per prompt; default on for a GPU, off on a CPU,
/// where a pass of long rows needs memory a CPU run rarely has),
/// adapter (a LoRA adapter file to load: InputError when it was made for other shapes or another
/// base model).
/// InputError naming the bad part and the valid keys.
LmOptions parse_lm_spec(std::string_view spec);
/// Does the policy name start with "lm:"?
bool is_lm_spec(std::string_view name);

class LmPolicy final : public TrainablePolicy {
 public:
  /// Loads the model (InputError for a missing or unsupported model file).
  explicit LmPolicy(LmOptions options);
  ~LmPolicy() override;

  std::string name() const override;
  std::vector<Sample> sample(const TaskSpec& task, int n, double temperature, uint64_t seed) override;
  std::vector<std::vector<double>> logprob(const TaskSpec& task, const std::vector<std::vector<int>>& tokens,
                                           double temperature = 1.0) override;
  /// The texts' tokens (as the tokenizer splits them) followed by the end-of-turn token, scored at
  /// temperature 1: re-scoring a sample that stopped by itself gives its tokens' log-probs.
  std::vector<std::vector<double>> score_text(const TaskSpec& task, const std::vector<std::string>& texts) override;
  /// The tokenizer's ids of `text` (no special tokens parsed) followed by the end-of-turn token.
  std::vector<int> text_tokens(const std::string& text) override;

  std::vector<std::vector<double>> teacher_logprob(const TaskSpec& task, const std::vector<std::vector<int>>& tokens,
                                                   const TeacherContext& context, double temperature = 1.0) override;

  void add_adapter(const LoraConfig& config, uint64_t seed) override;
  void reset_adapter(uint64_t seed) override;
  void merge_adapter() override;
  void remove_adapter() override;
  bool has_adapter() const override;

  void set_optimizer(const OptimizerConfig& config) override;
  UpdateStats update(const std::vector<TrainItem>& batch, const UpdateConfig& config) override;
  UpdateStats measure(const std::vector<TrainItem>& batch, double temperature) override;
  int64_t parameter_count(bool trainable_only) const override;

  void save_base(const std::filesystem::path& file) const override;
  void load_base(const std::filesystem::path& file) override;
  void save_adapter(const std::filesystem::path& file) const override;
  void load_adapter(const std::filesystem::path& file) override;
  std::string adapter_state() const override;
  void restore_adapter(const std::string& state) override;

  /// Data-parallel updates (data_parallel.h, one process per GPU, each with the same model): every
  /// rank passes the whole batch to update(), which runs the rank's share of its completions (every
  /// size-th from the rank's index) and sums the adapter's gradients and the batch's statistics over
  /// the group before clipping and the optimizer step, so each rank takes one process's step. Rank
  /// 0's adapter is copied to the others here: call after add_adapter or load_adapter. nullptr: one
  /// process again.
  void set_data_parallel(std::shared_ptr<DataParallelGroup> group);
  /// The adapter's gradients as the last update() left them (summed over the group, clipped),
  /// flattened in layer and projection order, float32 on the CPU: for comparing updates.
  std::vector<float> last_gradient() const;

  const LmOptions& options() const { return options_; }
  /// Does update() recompute each layer in the backward pass (the spec's checkpoint)?
  bool activation_checkpointing() const;
  LanguageModel& model();
  /// The token ids of the task's prompt as the model reads it (chat template applied).
  std::vector<int> prompt_tokens(const TaskSpec& task, const PromptOptions& prompt);
  /// The same for a prompt already built.
  std::vector<int> prompt_tokens(const Prompt& prompt);

  struct Impl;

 private:
  LmOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl::lm
