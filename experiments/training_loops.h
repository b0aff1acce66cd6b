#pragma once
// The learning loops (docs/design.md, Algorithms): RLVR over a task split (GRPO with LoRA), test-time
// training over a task subset (GRPO or SDPO with a fresh LoRA adapter, Best-of-Adaptation and
// early stopping) and SFT on teacher samples. Every rollout goes through an Environment (the
// evaluator's rollout log keeps them); every step writes a row of schemas::training_steps() as
// soon as it ends, and every loop accounts its budget.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <kbrl/enum_names.h>
#include <policies/policy.h>

#include "algorithms.h"
#include "csv_table.h"
#include "environment.h"

namespace kbrl {

/// What a loop spent.
struct Budget {
  int64_t rollouts = 0;
  int64_t tokens = 0;          // sampled (student) tokens
  int64_t teacher_tokens = 0;  // tokens scored by an SDPO teacher
  double compile_seconds = 0;  // NVRTC time of the rollouts (cache hits count 0)
  double evaluator_seconds = 0;  // wall time inside the environment (compile waits, GPU checks, timing)
  double wall_seconds = 0;
  Budget& operator+=(const Budget& o);
};

/// What a step's rollouts scored, and what its update measured.
struct StepMetrics {
  int step = 0;
  int tasks = 0;
  int64_t rollouts = 0;
  double compiled_rate = 0, correct_rate = 0, fast_1 = 0;  // fractions of the rollouts
  double format_rate = 0;  // the fraction whose action parsed (outcome other than format_error)
  double sig_fast_1 = 0;  // the fraction significantly fast (Rollout::significantly_fast)
  double mean_speedup_correct = 0;  // over correct rollouts (0 when none)
  double mean_reward = 0;
  UpdateStats update;  // zero for a step without an update (the last TTT step)
  Budget budget;       // this step's
};

/// Scores of a set of rollouts (the update and budget fields left zero).
StepMetrics score_rollouts(const std::vector<Rollout>& rollouts);

/// A line of progress for the terminal.
using Progress = std::function<void(const std::string&)>;

/// GRPO's settings: advantages and the update.
struct GrpoSettings {
  bool normalize_std = true;
  UpdateConfig update;  // objective clipped_ratio; its temperature is set by the loop
};

struct RlvrConfig {
  std::vector<int> tasks;  // the train split
  Scale scale = Scale::kernelbench;
  int tasks_per_batch = 8;  // the reports' batch_size
  int group_size = 8;
  int steps = 40;
  double temperature = 0.25;
  GrpoSettings grpo;
  OptimizerConfig optimizer;
  bool lora = true;
  LoraConfig lora_config;
  int checkpoint_every = 10;  // 0 = none
  uint64_t seed = 0;
  std::string run = "rlvr";
  // Evaluation of every task of `tasks` (eval_k samples each, the same seeds every time) before the
  // first update, every eval_every updates and after the last: a learning curve whose points
  // compare, unlike the batches that cycle through the tasks. 0 = off.
  int eval_every = 0;
  int eval_k = 8;
  uint64_t eval_seed = 99;
};

/// RLVR: each step samples `group_size` rollouts for each of the next `tasks_per_batch` tasks (the
/// split reshuffled every epoch), takes group-relative advantages and one GRPO step. Checkpoints
/// (base.pt once, adapter_step_N.pt every N steps, final_adapter.pt and final.pt with the adapter merged) go to
/// `checkpoint_dir` when not empty. With eval_every > 0, `eval_csv` gets one row per evaluation
/// (run "<run>_eval", step = updates so far, KL to the start and entropy measured on its rollouts).
/// Returns one StepMetrics per step.
std::vector<StepMetrics> run_rlvr(TrainablePolicy& policy, Environment& env, const RlvrConfig& config,
                                  CsvTable* steps_csv, const std::filesystem::path& checkpoint_dir,
                                  const Progress& progress = {}, CsvTable* eval_csv = nullptr);

enum class TttUpdate { grpo, sdpo };
template <>
struct EnumNames<TttUpdate> {  // the TTT config's "update" values
  static constexpr std::string_view what = "TTT update";
  static constexpr EnumEntry<TttUpdate> entries[] = {{TttUpdate::grpo, "grpo"}, {TttUpdate::sdpo, "sdpo"}};
};

struct TttConfig {
  std::vector<int> tasks;  // adapted together (batched); one task = per-task isolated TTT
  Scale scale = Scale::kernelbench;
  int k = 32;       // rollouts per task per step
  int steps = 5;    // updates; steps + 1 evaluated steps (0 = the unadapted policy)
  double temperature = 0.25;
  TttUpdate update = TttUpdate::grpo;
  GrpoSettings grpo;
  SdpoTeacher teacher = SdpoTeacher::feedback;
  double sdpo_beta = 1.0;
  OptimizerConfig optimizer;
  LoraConfig lora_config;
  int patience = 0;  // early stopping after this many consecutive regressions of fast_1; 0 = off
  uint64_t seed = 0;
  std::string run = "ttt";
  // > 0: at every evaluated step, fresh_k more samples per task (seeds of their own), evaluated and
  // never trained on nor selected with: the BoA step scored on samples it was not chosen by.
  int fresh_k = 0;
};

struct TttResult {
  std::vector<StepMetrics> steps;        // evaluated steps 0..last
  std::vector<std::vector<Rollout>> rollouts;  // per evaluated step, all tasks in order
  BoaDecision boa;                       // over the steps' fast_1
  std::vector<StepMetrics> fresh;        // with fresh_k > 0: per evaluated step, the fresh samples' scores
  std::vector<std::vector<Rollout>> fresh_rollouts;  // and the fresh samples
  Budget budget;                         // the fresh samples included
};

/// Test-time training from the policy's current weights: a fresh LoRA adapter, then per step:
/// sample k per task, evaluate, record, update (GRPO over the batch, or SDPO). Best-of-Adaptation
/// picks the step of highest in-batch fast_1 (no extra rollouts); with patience > 0 the run stops
/// early. With fresh_k > 0 every step also draws fresh_k samples per task before its update, scored
/// apart (`steps_csv` rows of run "<run>_fresh"), which change nothing of the trajectory. Every step's adapter is kept in memory and, when `adapter_dir` is not empty, written
/// there (adapter_step_N.pt); at the end the adapter of the BoA step is restored.
TttResult run_ttt(TrainablePolicy& policy, Environment& env, const TttConfig& config,
                  CsvTable* steps_csv, CsvTable* task_csv, const std::filesystem::path& adapter_dir,
                  const Progress& progress = {});

struct SftConfig {
  int epochs = 5;
  int batch_size = 16;
  OptimizerConfig optimizer{.learning_rate = 1e-4};
  double temperature = 1.0;
  bool lora = false;  // train a LoRA adapter instead of every weight
  bool merge_adapter = true;  // lora: merge the adapter into the weights at the end (else it stays)
  LoraConfig lora_config{.rank = 8, .alpha = 16};
  uint64_t seed = 0;
  /// Held-out items (the GRPO report's Figure 2 evaluation loss): their NLL per token is measured
  /// before the first step and every `eval_every` steps (and after the last) when a steps CSV is
  /// given; empty = none.
  std::vector<TrainItem> held_out;
  int eval_every = 1;
};

struct SftEpoch {
  int epoch = 0;
  double mean_loss = 0;      // mean batch loss during the epoch
  double nll_per_token = 0;  // on all the data after the epoch
  double wall_seconds = 0;
};

/// The mean per-token negative log-likelihood of items under the policy at `temperature`.
double mean_nll(Policy& policy, const std::vector<TrainItem>& items, double temperature);

/// SFT: minibatches of the data (reshuffled per epoch), cross-entropy (Objective::likelihood,
/// token_mean). Returns one row per epoch, epoch 0 being the NLL before training. `steps_csv`
/// (schemas::sft_steps(), when given) gets a row per optimizer step: its batch's loss, and the
/// held-out NLL per token where it was measured (nan elsewhere); step 0 is before training.
std::vector<SftEpoch> run_sft(TrainablePolicy& policy, const std::vector<TrainItem>& data,
                              const SftConfig& config, CsvTable* epochs_csv,
                              const Progress& progress = {}, CsvTable* steps_csv = nullptr);

/// The row of schemas::training_steps() for a step.
std::vector<std::string> training_step_row(const std::string& run, const StepMetrics& m);

}  // namespace kbrl
