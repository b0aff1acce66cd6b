#pragma once
// The experiment programs (docs/design.md, Experiments and the reports' tables): one registered
// Experiment per report table, run by `kbrl-experiment NAME --budget smoke|paper`, each writing
// its CSVs (schemas in experiments/report_schemas.h and schemas.h) under
// <results>/<budget>/<name>/. Experiments that build on another read its outputs from there
// (CTest orders them with fixtures).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <experiments/environment.h>
#include <experiments/training_loops.h>
#include <policies/policy.h>

namespace kbrl {

/// The sizes of every experiment at one budget. `paper` holds the reports' K, steps, seeds,
/// temperatures and subsets; the learning rates are this policy's (the reports' are an LLM's),
/// and the learning-rate sweep keeps the reports' ratios (1e-5, 1e-6, 3e-7 -> x1, x0.1, x0.03).
struct ExperimentBudget {
  std::string name;
  // base policy: SFT warm start from the heuristic teacher, then RLVR on the train split
  int sft_samples_per_task = 16;
  int sft_epochs = 5;
  double sft_learning_rate = 1e-2;
  int rlvr_steps = 40;
  int rlvr_tasks_per_batch = 8;
  int rlvr_group = 8;
  double rlvr_learning_rate = 3e-3;
  // base_policy's RLVR seed (its batches' tasks and samples): 1, or the first of --seeds.
  uint64_t rlvr_seed = 1;
  int rlvr_eval_k = 8;  // samples per train task at each checkpoint's evaluation (same seeds)
  std::vector<int> train_tasks;  // empty: the train split (covered tasks)
  // search
  int bon_k = 64;
  // The runs' seeds: best-of-N, selection and self-improvement run each; the single-seed experiments
  // (TTT's isolated runs, the probe, robustness, transfer, lr_sweep, ablations, entropy_ttt,
  // grpo_report's GRPO, policy_sweep) take the first. --seeds replaces them (and sdpo_seeds, and
  // rlvr_seed with its first).
  std::vector<uint64_t> seeds = {42, 43};
  // The sampling temperature. The reports sample their LLM at 0.25 (language_model_budget); the
  // schedule policy's distribution is calibrated at 1 (SFT on a teacher with noise 0.25 per knob),
  // and at 0.25 it is nearly greedy (one distinct sample in 64 for most tasks), which leaves GRPO
  // groups without signal. Its temperature ablation spans the same 7x range around it.
  double temperature = 1.0;
  int sweep_k = 16;  // base-policy sweep: samples per task per policy
  std::vector<int> sweep_tasks;  // empty: the eval split
  // adaptation
  int ttt_k = 32;
  int ttt_steps = 5;
  int probe_steps = 8;
  double ttt_learning_rate = 3e-3;
  int lora_rank = 16;
  double lora_alpha = 32;
  // The seeds of what the reports ran on three: TTT's batch trajectory (its 3-seed mean), SDPO,
  // sparsification.
  std::vector<uint64_t> sdpo_seeds = {42, 43, 44};
  std::vector<int> ablation_steps = {5, 15, 30};
  std::vector<int> ablation_k = {16, 64, 128};  // the self-improvement report's A2
  std::vector<double> ablation_temperatures = {0.4, 1.0, 1.6, 2.8};  // the reports' {0.1, 0.25, 0.4, 0.7} x4
  std::vector<double> lr_factors = {1.0, 0.1, 0.03};
  std::vector<int> subset1, subset2;  // the reports' subsets (reference/splits.h)
  // The self-improvement report's main experiment (E1, E3-E5): per task of subset 1 and per seed,
  // best-of-N at K against TTT on that task alone at K per step for `steps` updates, both from the
  // RLVR checkpoint of step `checkpoint_step`, at one temperature (the report's 0.4; the schedule
  // policy's equivalent on the ablation's x4 scale, 1.6).
  // The GRPO report (grpo_report): SFT warm start (its Table 1: 5 epochs, LoRA rank 8, batch 16),
  // then GRPO (Table 2: LoRA rank 32, one prompt per step, G = 6, 2.5 epochs of the 80 train tasks =
  // 200 steps, no KL, no std normalization of advantages, token-level normalization) on its
  // composite reward with the judge. Learning rates: the report's 1e-4 (SFT) and 1e-5 (GRPO) for a
  // language model; the schedule policy's own otherwise (as everywhere).
  int grpo_sft_epochs = 5;
  int grpo_sft_lora_rank = 8;
  int grpo_sft_batch = 16;
  double grpo_sft_learning_rate = 1e-2;
  int grpo_steps = 200;
  int grpo_group = 6;
  int grpo_lora_rank = 32;
  double grpo_learning_rate = 3e-3;
  // The surprisal report's 6.7 open questions: TTT's entropy bonus coefficients (0 = vanilla GRPO)
  // and the rewards of the sparsification runs (the dense speedup, then thresholds), each run over
  // probe_steps steps on subset 1 (sparsification: each of sdpo_seeds).
  std::vector<double> entropy_coefs = {0.0, 0.01, 0.1};
  std::vector<std::string> sparsification_rewards = {"speedup", "threshold:1", "threshold:1.5", "threshold:2"};
  int per_task_ttt_k = 64;
  int per_task_ttt_steps = 15;
  int per_task_ttt_checkpoint_step = 10;
  double per_task_ttt_temperature = 1.6;
};

/// "smoke" (minutes on one GPU), "paper" (the reports' settings), "tiny" (CPU plumbing tests
/// with the synthetic environment) or "llm-cpu" (a language model served on a CPU: the sampling
/// experiments with few samples). Throws InputError naming the budgets.
ExperimentBudget experiment_budget(const std::string& name);
/// The budget with --seeds' list (comma-separated, distinct, at least one): its seeds and sdpo_seeds
/// become that list (so the single-seed experiments take its first). InputError naming the problem.
ExperimentBudget with_seeds(ExperimentBudget budget, const std::string& list);
/// The budget for a language model as the policy (--policy lm:... or endpoint:...): the reports'
/// sampling temperature 0.25 and temperature ablation {0.1, 0.25, 0.4, 0.7}, LoRA rank 16 and
/// learning rate 1e-5 for RLVR and TTT at paper budget (2e-4 at the smaller budgets, where a few
/// steps at 1e-5 change nothing measurable), and SFT of a LoRA adapter on the known-good kernels.
ExperimentBudget language_model_budget(ExperimentBudget budget);
/// Every field of a budget, for the settings.json each experiment writes next to its CSVs.
nlohmann::json budget_json(const ExperimentBudget& b);

struct ExperimentContext {
  std::string experiment;
  ExperimentBudget budget;
  std::filesystem::path results;  // <results root>/<budget>
  std::filesystem::path dir;      // results / experiment
  Scale scale = Scale::kernelbench;
  Environment* env = nullptr;
  Progress progress;
  /// "" (the schedule policy) or a language model's policy spec: lm:MODEL[,...] (in the process:
  /// every experiment trains and samples it) or endpoint:URL[,...] (served: the sampling
  /// experiments only).
  std::string policy_spec;
  /// A samples.csv given with --samples (e.g. from `kbrl sample`) that selection and
  /// length_control read instead of best_of_n's; "" = best_of_n's.
  std::filesystem::path samples_file;
  /// No GPU: the evaluator compiles only (outcome not_run), so nothing is checked or timed.
  bool compile_only = false;
  /// The --env this run was given (evaluator, synthetic or auto), for the command a missing input
  /// names.
  std::string env_flag = "evaluator";
  /// --from loaded: the experiments that start from base_policy's RLVR checkpoint (best_of_n and
  /// the adaptation experiments) start from the policy as --policy gives it (its adapter merged).
  bool from_loaded = false;
  /// --overlap: sample_and_evaluate samples a task while the previous task's samples are evaluated
  /// (the model and the evaluator on different GPUs, so neither disturbs the other's timing).
  bool overlap_sampling = false;

  /// Is a language model the policy (--policy lm:... or endpoint:...)?
  bool language_model() const { return !policy_spec.empty(); }
  /// Is it a served model (endpoint:...), which samples but cannot be trained here?
  bool served_model() const;
  /// The served model's policy; its server responses are kept in dir/endpoint_responses.jsonl.
  std::unique_ptr<Policy> served_policy() const;
  /// The policy the experiment trains, untrained: the schedule policy or the language model of
  /// --policy lm:... (InputError for a served model).
  std::unique_ptr<TrainablePolicy> new_policy() const;
  /// `stage` ("loaded", "sft", "rlvr", "ttt") prefixed by the policy kind: schedule_rlvr or lm_rlvr
  /// (the CSVs' policy column; settings.json names the model).
  std::string policy_label(const std::string& stage) const;

  /// Where another experiment writes; throws InputError naming the experiment to run first when
  /// `file` under it does not exist.
  std::filesystem::path input(const std::string& experiment, const std::string& file) const;
  /// new_policy() with the base weights of a checkpoint that base_policy wrote; new_policy() itself
  /// for an empty path (base_checkpoint() with --from loaded).
  std::unique_ptr<TrainablePolicy> load_policy(const std::filesystem::path& checkpoint) const;
  /// The RLVR checkpoint of base_policy (the starting point of search and adaptation); empty with
  /// --from loaded, which starts them from the policy as given.
  std::filesystem::path base_checkpoint() const {
    return from_loaded ? std::filesystem::path{} : input("base_policy", "checkpoints/final.pt");
  }
  /// The stage the experiments start from, for policy_label: "rlvr", or "loaded" with --from loaded.
  std::string start_stage() const { return from_loaded ? "loaded" : "rlvr"; }
  /// The SFT-only checkpoint of base_policy (TTT without RLVR).
  std::filesystem::path sft_checkpoint() const { return input("base_policy", "checkpoints/sft.pt"); }
  /// The samples selection and length_control read: samples_file, else best_of_n's samples.csv.
  std::filesystem::path best_of_n_samples() const {
    return samples_file.empty() ? input("best_of_n", "samples.csv") : samples_file;
  }
  /// A TTT configuration with this budget's settings for `tasks`.
  TttConfig ttt_config(const std::vector<int>& tasks, uint64_t seed, const std::string& run) const;
  /// The seed of a single-seed experiment: the first of the budget's seeds (--seeds).
  uint64_t single_seed() const { return budget.seeds.front(); }
  /// ttt_config with single_seed(): the experiments that run one seed.
  TttConfig ttt_config(const std::vector<int>& tasks, const std::string& run) const {
    return ttt_config(tasks, single_seed(), run);
  }
};

struct Experiment {
  std::string name;
  std::string reproduces;   // the report table or figure
  std::vector<std::string> needs;  // experiments whose outputs it reads
  std::function<void(ExperimentContext&)> run;
  bool takes_served_model = false;  // runs with --policy endpoint:... (samples only, no training)
  std::string reward{};  // its reward when --reward is not given ("" = speedup)
  std::string judge{};   // its judge when --judge is not given ("" = none)

  /// Starts from base_policy's RLVR checkpoint, so --from loaded applies: every experiment that
  /// needs base_policy except policy_sweep, which compares base_policy's stages.
  bool starts_from_rlvr() const;
  /// The experiments whose outputs this run reads: `needs`, less base_policy for a served model or
  /// with --from loaded, and less best_of_n where --samples replaces its samples.
  std::vector<std::string> inputs(const ExperimentContext& ctx) const;
};

/// InputError unless every experiment of `e.inputs(ctx)` has run to its end under ctx.results (its
/// settings.json there, not marked `"finished": false`), naming the command that runs it: checked
/// before a run starts, so a missing input costs nothing (before, ttt found best_of_n missing
/// after minutes of sampling).
void check_inputs_finished(const ExperimentContext& ctx, const Experiment& e);

/// The names of the experiments that take --policy endpoint:...
std::vector<std::string> served_model_experiments();

/// Every experiment, in an order that satisfies `needs`.
const std::vector<Experiment>& experiments();
const Experiment& experiment_named(const std::string& name);  // InputError listing the names

/// The environment's observation of an experiment's seed (Environment::set_observation): the
/// experiments that run several seeds evaluate each under its own, so no two seeds share a timing.
inline std::string seed_observation(uint64_t seed) { return "seed " + std::to_string(seed); }

/// Samples and evaluates `k` samples per task, appending rows of schemas::samples() (run, policy
/// name) and returning the rollouts per task (in `tasks` order). With ctx.overlap_sampling a task is
/// sampled while the previous one's samples are evaluated on another thread (same rows, same order).
std::vector<std::vector<Rollout>> sample_and_evaluate(ExperimentContext& ctx, Policy& policy,
                                                      const std::string& policy_label,
                                                      const std::vector<int>& tasks, int k,
                                                      double temperature, uint64_t seed,
                                                      CsvTable* samples_csv, const std::string& run);


}  // namespace kbrl
