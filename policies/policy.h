#pragma once
// The Policy interface (docs/design.md, Policies). A policy's action for a task is either one token per
// knob of the task's generator space (kernels/knob_space.h), sampled in the space's order (the
// schedule policy and the baselines), or a language model's text with its token ids (the endpoint
// policy); a sample carries its tokens, the per-token log-probabilities under the sampling
// distribution, and the configuration or text they make (kernels/action.h turns either into a
// Candidate). Trainable policies add LoRA adapters, checkpoints and one
// optimizer step over a batch of scored samples; the algorithms (experiments/) build those
// batches (GRPO advantages, SFT targets, SDPO token advantages) without touching libtorch.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <kbrl/enum_names.h>
#include <kernels/action.h>
#include <kernels/knob_space.h>
#include <reference/task.h>

namespace kbrl {

/// One sampled action.
struct Sample {
  int task_id = 0;
  ActionKind kind = ActionKind::knobs;
  /// knobs: one per knob, in the space's order (index among the values). text: the model's token
  /// ids of `text` where the server reports them (empty otherwise).
  std::vector<int> tokens;
  /// log p(token_k | task, tokens_<k): knobs at the sampling temperature; text as the server
  /// reports them (the model's distribution, see policies/endpoint_policy.h). One per token.
  std::vector<double> logprobs;
  Config config;               // knobs: the tokens decoded (always a legal configuration)
  std::string text;            // text: the model's raw output
  std::string prompt_version;  // text: the version id of the prompt it answered (kernels/prompt.h)
  std::string finish_reason;   // text: "stop", "length", ... as the server reports it

  /// The action realize() reads.
  Action action() const { return {kind, config, text}; }
  /// Tokens of the action: the number of log-probs.
  int64_t token_count() const { return static_cast<int64_t>(logprobs.size()); }
  /// The sequence log-probability: the sum of `logprobs`.
  double logprob() const;
  /// logprob() / token_count() (0 for no tokens): what report 003's confidence selection ranks by.
  double mean_logprob() const;
  /// -logprob(): the sample's surprisal (negative log-likelihood), in nats.
  double surprisal() const { return -logprob(); }
};

/// The knob space of a task's generator (cached per task id; spaces depend on the id only).
/// Throws InputError for a task no generator covers.
const KnobSpace& knob_space_of(const TaskSpec& task);

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string name() const = 0;

  /// `n` samples for `task`. temperature > 0 divides the logits; temperature == 0 is greedy
  /// decoding (every token the most likely legal value; log-probs 0). The same (task, n,
  /// temperature, seed) gives the same samples. Every sample decodes to a legal configuration.
  virtual std::vector<Sample> sample(const TaskSpec& task, int n, double temperature,
                                     uint64_t seed) = 0;

  /// Per-token log-probabilities of given token sequences at `temperature` (> 0): what sample()
  /// would have reported for them. Throws InputError for a sequence that is not a legal
  /// configuration of the task's space.
  virtual std::vector<std::vector<double>> logprob(const TaskSpec& task,
                                                   const std::vector<std::vector<int>>& tokens,
                                                   double temperature = 1.0) = 0;

  /// Per-token log-probabilities of given texts as this policy's answers to `task` (what sample()
  /// would have reported for them): the over-sharpening probe scores fixed samples under several
  /// checkpoints. Policies of knob actions throw InputError (they score tokens, not text).
  virtual std::vector<std::vector<double>> score_text(const TaskSpec& task,
                                                      const std::vector<std::string>& texts);

  /// The token ids of `text` as this policy's answer (what score_text scores), for supervised data
  /// written by someone else (SFT on known-good kernels). Policies of knob actions, and policies
  /// whose tokenizer lives in a server, throw InputError.
  virtual std::vector<int> text_tokens(const std::string& text);
};

/// What an SDPO teacher sees besides the task (the reports' teacher context): optionally a
/// correct sample from the same batch (its tokens), and optionally the structured execution
/// feedback of the rollout being scored (never that rollout's own tokens).
struct TeacherContext {
  std::optional<std::vector<int>> demonstration;
  struct Feedback {
    bool compiled = false;
    bool correct = false;
    double speedup = 0.0;  // correctness-gated
  };
  std::optional<Feedback> feedback;
  bool empty() const { return !demonstration && !feedback; }
};

/// LoRA (Hu et al. 2021): W x + (alpha / rank) * B A x, A Kaiming-uniform, B zero, so a fresh
/// adapter leaves the policy unchanged.
struct LoraConfig {
  int rank = 16;
  double alpha = 32.0;
};

/// Adam as torch.optim.Adam.
struct OptimizerConfig {
  double learning_rate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double max_grad_norm = 1.0;  // clip of the global gradient norm; 0 = none
};

/// How a batch's per-token terms become one loss.
enum class Aggregation {
  sequence_mean,  // GRPO (Shao et al. 2024): mean over a sequence's tokens, then over sequences
  token_mean,     // every token of the batch weighted equally (DAPO, TRL's default)
  constant,       // Dr. GRPO (Liu et al. 2025): the sum over all tokens / (sequences * a constant)
};
template <>
struct EnumNames<Aggregation> {
  static constexpr std::string_view what = "aggregation";
  static constexpr EnumEntry<Aggregation> entries[] = {{Aggregation::sequence_mean, "sequence_mean"},
                                                       {Aggregation::token_mean, "token_mean"},
                                                       {Aggregation::constant, "constant"}};
};
std::string_view to_string(Aggregation);
Aggregation parse_aggregation(std::string_view);  // throws InputError naming the values

/// The per-token objective.
enum class Objective {
  clipped_ratio,  // PPO/GRPO: min(r A, clip(r, 1 - eps, 1 + eps) A), r = p / p_old
  likelihood,     // SFT: A * log p (A = 1 gives plain cross-entropy)
};

/// One optimizer step's settings.
struct UpdateConfig {
  Objective objective = Objective::clipped_ratio;
  Aggregation aggregation = Aggregation::sequence_mean;
  double clip_epsilon = 0.2;
  double constant_length = 16.0;  // Aggregation::constant's normalizer
  double kl_coef = 0.0;           // KL penalty to the reference (the policy without its adapter)
  /// Entropy bonus: the loss minus entropy_coef times each token's entropy (aggregated with the
  /// objective's weights), a TTT closer to TTT-Discover's entropic objective (surprisal report 6.7).
  double entropy_coef = 0.0;
  double temperature = 1.0;       // the temperature the samples were drawn at
};

/// One scored sequence of a batch.
struct TrainItem {
  TaskSpec task;
  std::vector<int> tokens;
  std::vector<double> old_logprobs;  // at sampling time (clipped_ratio); may be empty otherwise
  std::vector<double> advantages;    // one per token
};

struct UpdateStats {
  double loss = 0.0;
  double kl = 0.0;             // mean per-token KL(policy || reference) over the batch's tokens; NaN where
                               // not measured (a language model's update without a KL term makes no reference pass)
  double entropy = 0.0;        // mean per-token entropy (nats) over the legal values
  double clip_fraction = 0.0;  // tokens whose ratio left [1 - eps, 1 + eps]
  double grad_norm = 0.0;      // before clipping
  int64_t tokens = 0;
};

// A trainable policy is three interfaces beside sampling (Policy), each named after what its
// callers use: updates (a GRPO or SFT step, the teacher's log-probs, measuring without a step),
// adapters (LoRA added, merged, kept in memory for Best-of-Adaptation) and checkpoints (files).
// A function that only steps or measures takes PolicyUpdates&; a training loop TrainablePolicy&.

/// Optimizer steps and what they measure.
class PolicyUpdates {
 public:
  virtual ~PolicyUpdates() = default;
  /// Per-token log-probs of `tokens` given the task and a teacher context (SDPO's teacher: the
  /// same network, conditioned on the context). A language model's teacher prompt also asks to
  /// correctly solve the original question, so an empty context is report 003's prompt-only
  /// teacher; the schedule policy, which reads no instruction, gives logprob()'s values for it.
  virtual std::vector<std::vector<double>> teacher_logprob(
      const TaskSpec& task, const std::vector<std::vector<int>>& tokens,
      const TeacherContext& context, double temperature = 1.0) = 0;

  virtual void set_optimizer(const OptimizerConfig& config) = 0;
  /// One optimizer step on the batch; returns what it measured before the step.
  virtual UpdateStats update(const std::vector<TrainItem>& batch, const UpdateConfig& config) = 0;

  /// Mean per-token KL(policy || reference) and entropy over given samples, without a step.
  virtual UpdateStats measure(const std::vector<TrainItem>& batch, double temperature) = 0;

  virtual int64_t parameter_count(bool trainable_only) const = 0;
};

/// The LoRA adapter: what trains once one is added.
class PolicyAdapters {
 public:
  virtual ~PolicyAdapters() = default;
  /// Adds a fresh adapter to every adapted layer (replacing one already there); from then on only
  /// adapter weights train. Resets the optimizer state.
  virtual void add_adapter(const LoraConfig& config, uint64_t seed) = 0;
  /// Re-initializes the adapter (A Kaiming-uniform from `seed`, B zero) and the optimizer state.
  virtual void reset_adapter(uint64_t seed) = 0;
  /// Folds the adapter into the base weights and removes it.
  virtual void merge_adapter() = 0;
  virtual void remove_adapter() = 0;
  virtual bool has_adapter() const = 0;
  /// The adapter in memory (the archive save_adapter writes), and back: what Best-of-Adaptation
  /// keeps of every step without touching the disk. Restoring resets the optimizer state.
  virtual std::string adapter_state() const = 0;
  virtual void restore_adapter(const std::string& state) = 0;
};

/// Checkpoints: the base weights and the adapter in separate files.
class PolicyCheckpoints {
 public:
  virtual ~PolicyCheckpoints() = default;
  virtual void save_base(const std::filesystem::path& file) const = 0;
  virtual void load_base(const std::filesystem::path& file) = 0;
  virtual void save_adapter(const std::filesystem::path& file) const = 0;
  virtual void load_adapter(const std::filesystem::path& file) = 0;
};

class TrainablePolicy : public Policy, public PolicyUpdates, public PolicyAdapters, public PolicyCheckpoints {};

}  // namespace kbrl
