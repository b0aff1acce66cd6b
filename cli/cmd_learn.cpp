// The learning commands `kbrl sample` (best-of-N from a policy), `kbrl train` (RLVR: GRPO with
// LoRA over a task set) and `kbrl ttt` (test-time training with Best-of-Adaptation); `kbrl sft` is
// in cmd_sft.cpp, what they share in learn_common.h. Each reads a JSON config (--config) that flags
// override, scores rollouts in the real evaluator (--env evaluator, a GPU) or a synthetic reward
// table (--env synthetic, CPU dry runs), writes its CSVs under --out and reports progress on stderr.
#include <algorithm>
#include <filesystem>
#include <map>
#include <iostream>
#include <memory>
#include <vector>

#include <fmt/format.h>
#include <kbrl/csv.h>
#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "commands.h"
#include <experiments/schemas.h>
#include <experiments/training_loops.h>
#include "learn_common.h"
#include <policies/baseline_policies.h>

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

// ---- kbrl sample ----

/// Counts of a group of rollouts (a task, a family, all) for summary.csv.
struct SampleTally {
  int tasks = 0, samples = 0, format_errors = 0, compiled = 0, correct = 0, fast = 0, sig_fast = 0, tasks_correct = 0;
  double best = 0;
  void add_task(const std::vector<Rollout>& rollouts) {
    int task_correct = 0;
    for (const Rollout& r : rollouts) {
      ++samples;
      format_errors += r.outcome() == Outcome::format_error;
      compiled += r.compiled();
      task_correct += r.correct();
      fast += r.fast();
      sig_fast += r.significantly_fast();
      if (r.correct()) best = std::max(best, r.speedup());
    }
    correct += task_correct;
    tasks_correct += task_correct > 0;
    ++tasks;
  }
  std::vector<std::string> row(const std::string& level, const std::string& key) const {
    const double n = std::max(1, samples);
    return {level, key, cell(tasks), cell(samples), cell(format_errors / n), cell(compiled / n), cell(correct / n),
            cell(fast / n), cell(sig_fast / n), cell(tasks_correct), tasks_correct ? cell(best) : ""};
  }
};

void run_sample(const CommonOptions& o) {
  nlohmann::json j;
  SampleConfig c = read_config(o, true, read_sample_config, j);
  c.tasks = tasks_of(c.tasks, j);
  PolicyOptions policy_options = o.policy;
  KBRL_CHECK_INPUT(!is_text_policy(policy_options.name) || o.env != "synthetic",
                   "--env synthetic scores knob configurations, not a language model's text: use --env "
                   "evaluator (on a GPU, or with --arch to compile only)");
  make_policy(policy_options);  // a bad policy spec fails before the folder is looked at
  const fs::path dir = check_out_dir(o.out, "sample");
  EnvHandle env = make_env(o, c.scale);
  prepare_out_dir(o.out, "sample", run_details(o, j));  // ours from here: the response log goes in it
  if (is_endpoint_policy(policy_options.name))  // what the server answered survives a failed run
    policy_options.response_log = (dir / "endpoint_responses.jsonl").string();
  std::unique_ptr<Policy> policy = make_policy(policy_options);
  CsvTable csv(dir / "samples.csv", schemas::samples());
  CsvTable summary(dir / "summary.csv", schemas::sample_summary());
  std::map<std::string, SampleTally> families;
  SampleTally all;
  std::cout << fmt::format("{:>4}  {:<36} {:>7} {:>8} {:>7} {:>5} {:>8} {:>9}  {}\n", "task", "name", "samples",
                           "compiled", "correct", "fast", "sig fast", "best x", "best config");
  for (int id : c.tasks) {
    const TaskSpec task = task_spec(id, c.scale);
    const std::vector<Sample> samples = policy->sample(task, c.k, c.temperature, derive_seed(c.seed, {id}));
    const std::vector<Rollout> rollouts = env.env->evaluate(task, samples, policy->name());
    int correct = 0, compiled = 0, fast = 0, sig_fast = 0;
    const Rollout* best = nullptr;
    for (size_t i = 0; i < rollouts.size(); ++i) {
      const Rollout& r = rollouts[i];
      csv.row(schemas::samples_row(c.run, policy->name(), static_cast<int>(i), r));
      correct += r.correct();
      compiled += r.compiled();
      fast += r.fast();
      sig_fast += r.significantly_fast();
      if (r.correct() && (!best || r.speedup() > best->speedup())) best = &r;
    }
    const std::string best_config =
        !best ? "-" : best->sample.kind == ActionKind::text ? fmt::format("sample {}", best - rollouts.data())
                                                            : best->sample.config.str();
    std::cout << fmt::format("{:>4}  {:<36} {:>7} {:>8} {:>7} {:>5} {:>8} {:>9}  {}\n", id, task.name, rollouts.size(),
                             compiled, correct, fast, sig_fast, best ? fmt::format("{:.3f}", best->speedup()) : "-",
                             best_config)
              << std::flush;
    progress_line(fmt::format("sample: task {} done ({} of {} compiled, {} correct)", id, compiled, rollouts.size(),
                              correct));
    SampleTally t;
    t.add_task(rollouts);
    summary.row(t.row("task", cell(id)));
    families[std::string(to_string(task.family))].add_task(rollouts);
    all.add_task(rollouts);
  }
  for (const auto& [family, t] : families) summary.row(t.row("family", family));
  summary.row(all.row("all", "all"));
  std::cout << fmt::format("{} samples of {} tasks: {} compiled, {} correct; {} of {} tasks with a correct sample\n",
                           all.samples, all.tasks, all.compiled, all.correct, all.tasks_correct, all.tasks);
  std::cout << "wrote " << (dir / "samples.csv").string() << " and " << summary.path().string() << "\n";
}

// ---- kbrl train ----

void run_train(const CommonOptions& o) {
  nlohmann::json j;
  RlvrConfig c = read_config(o, true, read_rlvr_config, j);
  c.tasks = tasks_of(c.tasks, j);
  std::unique_ptr<TrainablePolicy> policy = make_trainable_policy(o.policy);
  check_out_dir(o.out, "train");
  EnvHandle env = make_env(o, c.scale);
  const fs::path dir = prepare_out_dir(o.out, "train", run_details(o, j));
  CsvTable steps(dir / "steps.csv", schemas::training_steps());
  std::unique_ptr<CsvTable> eval;
  if (c.eval_every > 0) eval = std::make_unique<CsvTable>(dir / "eval.csv", schemas::training_steps());
  progress_line(fmt::format("train: {} tasks, {} steps of {} tasks x {} rollouts, env {}", c.tasks.size(),
                            c.steps, c.tasks_per_batch, c.group_size, env.env->name()));
  const std::vector<StepMetrics> metrics =
      run_rlvr(*policy, *env.env, c, &steps, dir / "checkpoints", progress_line, eval.get());
  if (!metrics.empty()) {
    const StepMetrics& first = metrics.front();
    const StepMetrics& last = metrics.back();
    std::cout << fmt::format("rlvr {} steps: correct {:.3f} -> {:.3f}, fast_1 {:.3f} -> {:.3f}, "
                             "sig_fast_1 {:.3f} -> {:.3f}, mean reward {:.4f} -> {:.4f}\n",
                             metrics.size(), first.correct_rate, last.correct_rate, first.fast_1, last.fast_1,
                             first.sig_fast_1, last.sig_fast_1, first.mean_reward, last.mean_reward);
  }
  std::cout << "wrote " << steps.path().string() << (eval ? ", " + eval->path().string() : std::string())
            << " and " << (dir / "checkpoints").string() << "/ (final.pt: the trained policy)\n";
}

// ---- kbrl ttt ----

void run_ttt_command(const CommonOptions& o, bool isolated) {
  nlohmann::json j;
  TttConfig c = read_config(o, true, read_ttt_config, j);
  c.tasks = tasks_of(c.tasks, j);
  make_trainable_policy(o.policy);  // bad policy options fail before anything runs
  check_out_dir(o.out, "ttt");
  EnvHandle env = make_env(o, c.scale);
  nlohmann::json details = run_details(o, j);
  details["isolated"] = isolated;
  const fs::path dir = prepare_out_dir(o.out, "ttt", details);
  CsvTable steps(dir / "steps.csv", schemas::training_steps());
  CsvTable task_steps(dir / "ttt_tasks.csv", schemas::ttt_task_steps());
  std::vector<TttConfig> runs;
  if (isolated) {
    for (int id : c.tasks) {
      TttConfig one = c;
      one.tasks = {id};
      one.run = fmt::format("{}_task{}", c.run, id);
      runs.push_back(std::move(one));
    }
  } else {
    runs.push_back(c);
  }
  for (const TttConfig& run : runs) {
    // Every run starts from the same weights: a fresh policy from the same options.
    std::unique_ptr<TrainablePolicy> policy = make_trainable_policy(o.policy);
    const fs::path adapters = isolated ? dir / "adapters" / run.run : dir / "adapters";
    progress_line(fmt::format("{}: tasks {}, {} steps of k={} ({}), env {}", run.run,
                              fmt::join(run.tasks, ","), run.steps, run.k,
                              enum_name(run.update), env.env->name()));
    const TttResult result = run_ttt(*policy, *env.env, run, &steps, &task_steps, adapters, progress_line);
    policy->save_adapter(adapters / "boa_adapter.pt");
    const StepMetrics& s0 = result.steps.front();
    const StepMetrics& boa = result.steps.at(static_cast<size_t>(result.boa.best_step));
    std::cout << fmt::format("{}: BoA step {} of {} (fast_1 {:.3f}, step 0 {:.3f}; sig_fast_1 {:.3f}, step 0 "
                             "{:.3f}; correct {:.3f}){}\n",
                             run.run, result.boa.best_step, result.steps.size() - 1, boa.fast_1, s0.fast_1,
                             boa.sig_fast_1, s0.sig_fast_1, boa.correct_rate,
                             result.boa.stop_step >= 0 ? fmt::format(", stopped early after step {}",
                                                                     result.boa.stop_step)
                                                       : "")
              << std::flush;
    if (!result.fresh.empty()) {  // the same step on samples it was not chosen by
      const StepMetrics& f = result.fresh.at(static_cast<size_t>(result.boa.best_step));
      std::cout << fmt::format("{}: BoA step {} on {} fresh samples: fast_1 {:.3f}, sig_fast_1 {:.3f}\n", run.run,
                               result.boa.best_step, f.rollouts, f.fast_1, f.sig_fast_1)
                << std::flush;
    }
  }
  std::cout << "wrote " << steps.path().string() << ", " << task_steps.path().string() << " and "
            << (dir / "adapters").string() << "/\n";
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto* cmd = app.add_subcommand("sample", "Best-of-N: K samples per task from a policy, evaluated "
                                           "(DIR/samples.csv; DIR/summary.csv: rates per task, family and all)");
  add_common_options(cmd, *o,
                     {{"--k", "k", "samples per task"},
                      {"--temperature", "temperature", "sampling temperature (0: greedy)"},
                      {"--seed", "seed", "sampling seed"},
                      {"--run", "run", "the run's name in the CSV"}},
                     true,
                     "continue the sample run --out holds: a language model's answers come from its "
                     "endpoint_responses.jsonl, samples.csv is written again");
  cmd->callback([o] { run_sample(*o); });
}

void add_train_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto* cmd = app.add_subcommand("train", "RLVR: GRPO with LoRA over a task set (DIR/steps.csv, DIR/eval.csv with --eval-every, DIR/checkpoints/)");
  add_common_options(cmd, *o,
                     {{"--steps", "steps", "optimizer steps"},
                      {"--tasks-per-batch", "tasks_per_batch", "tasks per step"},
                      {"--group-size", "group_size", "rollouts per task per step"},
                      {"--temperature", "temperature", "sampling temperature"},
                      {"--learning-rate", "learning_rate", "Adam's learning rate"},
                      {"--lora-rank", "lora_rank", "LoRA rank"},
                      {"--checkpoint-every", "checkpoint_every", "adapter checkpoint every N steps (0: none)"},
                      {"--eval-every", "eval_every",
                       "evaluate every task (eval_k samples, fixed seeds) before the first step, every N steps "
                       "and after the last, into DIR/eval.csv (0: off)"},
                      {"--eval-k", "eval_k", "samples per task of those evaluations"},
                      {"--seed", "seed", "sampling and shuffling seed"},
                      {"--run", "run", "the run's name in the CSV"}});
  cmd->callback([o] { run_train(*o); });
}

void add_ttt_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto isolated = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("ttt", "Test-time training with Best-of-Adaptation (DIR/steps.csv, "
                                        "DIR/ttt_tasks.csv, DIR/adapters/)");
  add_common_options(cmd, *o,
                     {{"--k", "k", "rollouts per task per step"},
                      {"--steps", "steps", "updates (steps + 1 evaluated steps)"},
                      {"--temperature", "temperature", "sampling temperature"},
                      {"--update", "update", "grpo or sdpo"},
                      {"--teacher", "teacher",
                       "SDPO teacher: feedback (a correct sample of the batch and the rollout's feedback) or "
                       "prompt_only (neither)"},
                      {"--patience", "patience", "early stopping after N regressions of fast_1 (0: off)"},
                      {"--learning-rate", "learning_rate", "Adam's learning rate"},
                      {"--lora-rank", "lora_rank", "LoRA rank"},
                      {"--seed", "seed", "sampling seed"},
                      {"--run", "run", "the run's name in the CSVs"}});
  cmd->add_flag("--isolated", *isolated,
                "adapt each task alone, with a fresh adapter from the same starting weights");
  cmd->callback([o, isolated] { run_ttt_command(*o, *isolated); });
}

}  // namespace kbrl::cli
