// The learning commands: `kbrl sample` (best-of-N from a policy), `kbrl train` (RLVR: GRPO with
// LoRA over a task set), `kbrl ttt` (test-time training with Best-of-Adaptation) and `kbrl sft`
// (supervised fine-tuning on teacher samples). Each reads a JSON config (--config) that flags
// override, scores rollouts in the real evaluator (--env evaluator, a GPU) or a synthetic reward
// table (--env synthetic, CPU dry runs), writes its CSVs under --out and reports progress on stderr.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <kbrl/csv.h>
#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "commands.h"
#include "experiments/algorithms.h"
#include "experiments/environment.h"
#include "experiments/run_setup.h"
#include "experiments/schemas.h"
#include "experiments/training_loops.h"
#include "harness/evaluator.h"
#include "harness/gpu_session.h"
#include "harness/rollout_log.h"
#include "policies/baseline_policies.h"
#include "reference/task_registry.h"
#include "run_options.h"

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

/// What every learning command takes.
struct CommonOptions {
  std::string config_path;
  std::vector<std::string> sets;                      // --set KEY=VALUE
  std::vector<std::pair<std::string, std::string>> flag_overrides;  // (config key, value text)
  TaskFlags tasks;
  PolicyOptions policy;
  std::string env = "evaluator";
  uint64_t env_seed = 0;
  EvalFlags eval;
  bool scale_given = false;
  std::string log_path;
  std::string out;
};

void progress_line(const std::string& line) { std::cerr << "kbrl: " << line << "\n" << std::flush; }

/// The config object: the file's (or {}), then --set, then the named flags, then --task/--split
/// and --scale (`with_tasks`: the config has tasks/split/scale keys), read by `reader`. The file is
/// read alone first, so that an error in it names the file and one in an override names the
/// command line.
template <class Config>
Config read_config(const CommonOptions& o, bool with_tasks,
                   Config (*reader)(const nlohmann::json&, const std::string&), nlohmann::json& j) {
  j = nlohmann::json::object();
  if (!o.config_path.empty()) {
    j = read_json_file(o.config_path);
    reader(j, o.config_path);
  }
  for (const std::string& kv : o.sets) {
    const size_t eq = kv.find('=');
    KBRL_CHECK_INPUT(eq != std::string::npos, "--set takes KEY=VALUE (got '{}')", kv);
    set_config_value(j, kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const auto& [key, value] : o.flag_overrides) set_config_value(j, key, value);
  if (with_tasks) {
    if (!o.tasks.ids.empty() || !o.tasks.split.empty()) {
      select_tasks(o.tasks.ids, o.tasks.split);  // a bad id or split name is the flag's error
      j.erase("tasks");
      j.erase("split");
      if (!o.tasks.ids.empty()) j["tasks"] = o.tasks.ids;
      if (!o.tasks.split.empty()) j["split"] = o.tasks.split;
    }
    if (o.scale_given) j["scale"] = o.eval.scale;
  }
  return reader(j, o.config_path.empty() ? "the command line"
                                         : "the command line's overrides of " + o.config_path);
}

/// The tasks of a config: InputError when none were given; tasks no generator covers are an error
/// when named by id and skipped with a warning when they come from a split.
std::vector<int> tasks_of(const std::vector<int>& tasks, const nlohmann::json& j) {
  KBRL_CHECK_INPUT(!tasks.empty(), "no tasks: give --task ID or --split NAME (or 'tasks' or 'split' in the config)");
  if (j.contains("split")) return covered_only(tasks, [](const std::string& w) { progress_line("warning: " + w); });
  return covered_only(tasks);
}

/// An environment and what it needs alive.
struct EnvHandle {
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<RolloutLog> log;
  std::unique_ptr<Environment> env;
};

EnvHandle make_env(const CommonOptions& o, Scale scale) {
  EvalFlags flags = o.eval;
  flags.scale = std::string(to_string(scale));
  const EvalSettings settings = eval_settings(flags);  // checks the flags in either case
  EnvHandle h;
  if (o.env == "synthetic") {
    KBRL_CHECK_INPUT(o.log_path.empty(),
                     "--log records the evaluator's rollouts: it does not go with --env synthetic");
    h.env = std::make_unique<SyntheticEnvironment>(o.env_seed, 0.5, settings.reward);
    return h;
  }
  KBRL_CHECK_INPUT(o.env == "evaluator", "unknown --env '{}': expected evaluator or synthetic", o.env);
  EvalSettings run_settings = settings;
  std::string reason;
  if (!gpu_available(&reason)) {
    if (o.eval.arch.empty())
      throw Error(fmt::format("--env evaluator needs a GPU (no GPU: {}); give --arch (e.g. sm_90) to compile "
                              "only, or --env synthetic for a CPU reward table",
                              reason));
    run_settings.compile_only = true;
    progress_line(fmt::format("no GPU ({}): compiling only, for {}; a candidate that compiles gets outcome not_run",
                              reason, o.eval.arch));
  }
  h.evaluator = std::make_unique<Evaluator>(run_settings);
  if (!o.log_path.empty()) {
    h.log = std::make_unique<RolloutLog>(o.log_path);
    h.evaluator->attach_log(h.log.get());
  }
  h.env = std::make_unique<EvaluatorEnvironment>(*h.evaluator, o.log_path);
  return h;
}

fs::path out_dir(const CommonOptions& o) {
  KBRL_CHECK_INPUT(!o.out.empty(), "--out DIR is required");
  const fs::path dir(o.out);
  KBRL_CHECK_INPUT(!fs::exists(dir) || fs::is_directory(dir), "--out {} exists and is not a directory", o.out);
  fs::create_directories(dir);
  return dir;
}

/// DIR/run.json: the resolved config and the setup, for the record.
void write_run_json(const fs::path& dir, const std::string& command, const CommonOptions& o,
                    const nlohmann::json& config) {
  nlohmann::json j = {{"command", command},
                      {"config", config},
                      {"policy",
                       {{"name", o.policy.name},
                        {"checkpoint", o.policy.checkpoint},
                        {"adapter", o.policy.adapter},
                        {"noise", o.policy.noise},
                        {"device", o.policy.device},
                        {"seed", o.policy.seed}}},
                      {"env", o.env},
                      {"env_seed", o.env_seed},
                      {"kbrl_version", std::string(kbrl_version())}};
  std::ofstream(dir / "run.json") << j.dump(2) << "\n";
}

/// A per-(seed, task) sampling seed.
uint64_t task_seed(uint64_t seed, int task_id) {
  uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * static_cast<uint64_t>(task_id + 1));
  return splitmix64(s);
}


/// Adds the options every learning command takes; `key_flags` are (flag, config key, help).
void add_common_options(CLI::App* cmd, CommonOptions& o,
                        const std::vector<std::tuple<std::string, std::string, std::string>>& key_flags,
                        bool policy_flags = true) {
  cmd->add_option("--config", o.config_path, "JSON config (flat snake_case keys); flags override it")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", o.sets, "override any config key: KEY=VALUE (repeatable)");
  for (const auto& entry : key_flags) {
    // Each flag's text becomes the config key's value (typed by the config reader).
    const std::string key = std::get<1>(entry);
    cmd->add_option_function<std::string>(
        std::get<0>(entry), [&o, key](const std::string& v) { o.flag_overrides.emplace_back(key, v); },
        std::get<2>(entry) + " (config key " + key + ")");
  }
  add_task_flags(cmd, o.tasks);
  if (policy_flags) {
    cmd->add_option("--policy", o.policy.name,
                    "schedule, uniform, heuristic, or endpoint:URL[,model=NAME,...] (a language model on an "
                    "OpenAI-compatible server; README: Bring your own model)")
        ->capture_default_str();
    cmd->add_option("--checkpoint", o.policy.checkpoint, "schedule policy: base weights (.pt) to start from");
    cmd->add_option("--adapter", o.policy.adapter, "schedule policy: a LoRA adapter (.pt) to load on top");
    cmd->add_option("--noise", o.policy.noise, "heuristic policy: the chance of a random value per knob")
        ->capture_default_str();
    cmd->add_option("--policy-device", o.policy.device, "schedule policy's network: cpu or cuda[:N]")
        ->capture_default_str();
    cmd->add_option("--policy-seed", o.policy.seed, "schedule policy: weight initialization seed")
        ->capture_default_str();
  }
  cmd->add_option("--env", o.env, "evaluator (the GPU) or synthetic (a CPU reward table)")->capture_default_str();
  cmd->add_option("--env-seed", o.env_seed, "synthetic environment's seed")->capture_default_str();
  cmd->add_option_function<std::string>(
      "--scale", [&o](const std::string& s) { o.eval.scale = s; o.scale_given = true; },
      "kernelbench or small (default: the config's, else kernelbench)");
  add_eval_flags(cmd, o.eval);
  cmd->add_option("--log", o.log_path, "the evaluator's rollout log (JSONL; a resumed run skips what it holds)");
  cmd->add_option("--out", o.out, "output directory")->required();
}

// ---- kbrl sample ----

void run_sample(const CommonOptions& o) {
  nlohmann::json j;
  SampleConfig c = read_config(o, true, read_sample_config, j);
  c.tasks = tasks_of(c.tasks, j);
  const fs::path dir = out_dir(o);
  PolicyOptions policy_options = o.policy;
  KBRL_CHECK_INPUT(!is_endpoint_policy(policy_options.name) || o.env != "synthetic",
                   "--env synthetic scores knob configurations, not a language model's text: use --env "
                   "evaluator (on a GPU, or with --arch to compile only)");
  if (is_endpoint_policy(policy_options.name))  // what the server answered survives a failed run
    policy_options.response_log = (dir / "endpoint_responses.jsonl").string();
  std::unique_ptr<Policy> policy = make_policy(policy_options);
  EnvHandle env = make_env(o, c.scale);
  write_run_json(dir, "sample", o, j);
  CsvTable csv(dir / "samples.csv", schemas::samples());
  std::cout << fmt::format("{:>4}  {:<36} {:>7} {:>8} {:>7} {:>5} {:>8} {:>9}  {}\n", "task", "name", "samples",
                           "compiled", "correct", "fast", "sig fast", "best x", "best config");
  for (int id : c.tasks) {
    const TaskSpec task = task_spec(id, c.scale);
    const std::vector<Sample> samples = policy->sample(task, c.k, c.temperature, task_seed(c.seed, id));
    const std::vector<Rollout> rollouts = env.env->evaluate(task, samples, policy->name());
    int correct = 0, compiled = 0, fast = 0, sig_fast = 0;
    const Rollout* best = nullptr;
    for (size_t i = 0; i < rollouts.size(); ++i) {
      const Rollout& r = rollouts[i];
      csv.row(schemas::samples_row(c.run, policy->name(), static_cast<int>(i), r));
      correct += r.correct;
      compiled += r.compiled;
      fast += r.fast();
      sig_fast += r.significantly_fast();
      if (r.correct && (!best || r.speedup > best->speedup)) best = &r;
    }
    const std::string best_config =
        !best ? "-" : best->sample.kind == ActionKind::text ? fmt::format("sample {}", best - rollouts.data())
                                                            : best->sample.config.str();
    std::cout << fmt::format("{:>4}  {:<36} {:>7} {:>8} {:>7} {:>5} {:>8} {:>9}  {}\n", id, task.name, rollouts.size(),
                             compiled, correct, fast, sig_fast, best ? fmt::format("{:.3f}", best->speedup) : "-",
                             best_config)
              << std::flush;
    progress_line(fmt::format("sample: task {} done ({} of {} compiled, {} correct)", id, compiled, rollouts.size(),
                              correct));
  }
  std::cout << "wrote " << (dir / "samples.csv").string() << "\n";
}

// ---- kbrl train ----

void run_train(const CommonOptions& o) {
  nlohmann::json j;
  RlvrConfig c = read_config(o, true, read_rlvr_config, j);
  c.tasks = tasks_of(c.tasks, j);
  std::unique_ptr<TrainablePolicy> policy = make_trainable_policy(o.policy);
  const fs::path dir = out_dir(o);
  EnvHandle env = make_env(o, c.scale);
  write_run_json(dir, "train", o, j);
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
  const fs::path dir = out_dir(o);
  EnvHandle env = make_env(o, c.scale);
  write_run_json(dir, isolated ? "ttt --isolated" : "ttt", o, j);
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
                              run.update == TttUpdate::grpo ? "grpo" : "sdpo", env.env->name()));
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
  }
  std::cout << "wrote " << steps.path().string() << ", " << task_steps.path().string() << " and "
            << (dir / "adapters").string() << "/\n";
}

// ---- kbrl sft ----

struct SftOptions {
  std::string teacher;       // "heuristic" or ""
  std::string from_samples;  // a samples.csv
  int per_task = 32;
  double teacher_noise = 0.25;
};

/// The correct rows of a samples.csv, fastest first, at most `per_task` per task; tokens rebuilt
/// from the config column in each task's knob space.
std::vector<TrainItem> items_from_samples(const std::string& file, const std::vector<int>& only_tasks, Scale scale,
                                          int per_task) {
  std::map<int, std::vector<std::pair<double, std::string>>> by_task;  // task -> (speedup, config)
  for (const schemas::SampleRow& r : schemas::read_samples(file)) {
    if (!r.correct) continue;
    KBRL_CHECK_INPUT(r.kind == ActionKind::knobs,
                     "{}: task {} sample {} is a language model's text; SFT of the schedule policy trains on "
                     "knob configurations",
                     file, r.task_id, r.sample);
    if (!only_tasks.empty() && std::find(only_tasks.begin(), only_tasks.end(), r.task_id) == only_tasks.end()) continue;
    by_task[r.task_id].emplace_back(r.speedup, r.config);
  }
  std::vector<TrainItem> items;
  for (auto& [id, rows] : by_task) {
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const TaskSpec task = task_spec(id, scale);
    const KnobSpace& space = knob_space_of(task);
    std::vector<Sample> samples;
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < per_task; ++i) {
      Sample s;
      s.task_id = id;
      s.config = space.parse(rows[i].second);
      s.tokens = space.tokenize(s.config);
      samples.push_back(std::move(s));
    }
    const std::vector<TrainItem> more = sft_items(task, samples);
    items.insert(items.end(), more.begin(), more.end());
    progress_line(fmt::format("sft: task {}: {} of {} correct rows (fastest first)", id, samples.size(), rows.size()));
  }
  KBRL_CHECK_INPUT(!items.empty(), "{} holds no correct rows{}", file,
                   only_tasks.empty() ? "" : fmt::format(" for tasks {}", fmt::join(only_tasks, ",")));
  return items;
}

void run_sft_command(const CommonOptions& o, const SftOptions& s) {
  KBRL_CHECK_INPUT(s.teacher.empty() != s.from_samples.empty(),
                   "give the SFT data: --teacher heuristic or --from-samples FILE (exactly one)");
  KBRL_CHECK_INPUT(s.teacher.empty() || s.teacher == "heuristic", "unknown --teacher '{}': expected heuristic",
                   s.teacher);
  KBRL_CHECK_INPUT(s.per_task >= 1, "--per-task must be >= 1 (got {})", s.per_task);
  nlohmann::json j;
  const SftConfig c = read_config(o, false, read_sft_config, j);
  const Scale scale = parse_scale(o.eval.scale);
  std::vector<int> tasks;
  if (!o.tasks.ids.empty() || !o.tasks.split.empty()) {
    tasks = select_tasks(o.tasks.ids, o.tasks.split);
    tasks = o.tasks.split.empty() ? covered_only(tasks)
                                  : covered_only(tasks, [](const std::string& w) { progress_line("warning: " + w); });
  }
  KBRL_CHECK_INPUT(!s.teacher.empty() ? !tasks.empty() : true, "--teacher heuristic needs --task ID or --split NAME");
  std::unique_ptr<TrainablePolicy> policy = make_trainable_policy(o.policy);
  const fs::path dir = out_dir(o);
  std::vector<TrainItem> data;
  if (!s.from_samples.empty()) {
    data = items_from_samples(s.from_samples, tasks, scale, s.per_task);
  } else {
    KBRL_CHECK_INPUT(s.teacher_noise >= 0 && s.teacher_noise <= 1, "--teacher-noise must be in [0, 1] (got {})",
                     s.teacher_noise);
    EnvHandle env = make_env(o, scale);
    HeuristicPolicy teacher(s.teacher_noise);
    CsvTable teacher_csv(dir / "teacher_samples.csv", schemas::samples());
    for (int id : tasks) {
      const TaskSpec task = task_spec(id, scale);
      const std::vector<Sample> samples = teacher.sample(task, s.per_task, 1.0, task_seed(c.seed, id));
      const std::vector<Rollout> rollouts = env.env->evaluate(task, samples, teacher.name());
      std::vector<Sample> correct;
      for (size_t i = 0; i < rollouts.size(); ++i) {
        teacher_csv.row(schemas::samples_row("sft_teacher", teacher.name(), static_cast<int>(i), rollouts[i]));
        if (rollouts[i].correct) correct.push_back(rollouts[i].sample);
      }
      progress_line(fmt::format("sft: task {}: {} of {} teacher samples correct", id, correct.size(), samples.size()));
      const std::vector<TrainItem> more = sft_items(task, correct);
      data.insert(data.end(), more.begin(), more.end());
    }
    KBRL_CHECK_INPUT(!data.empty(), "no correct teacher samples to train on");
  }
  write_run_json(dir, "sft", o, j);
  CsvTable epochs(dir / "sft_epochs.csv", schemas::sft_epochs());
  const std::vector<SftEpoch> result = run_sft(*policy, data, c, &epochs, progress_line);
  policy->save_base(dir / "sft.pt");
  std::cout << fmt::format("sft on {} items, {} epochs: nll/token {:.4f} -> {:.4f}\n", data.size(),
                           result.size() - 1, result.front().nll_per_token, result.back().nll_per_token);
  std::cout << "wrote " << epochs.path().string() << " and " << (dir / "sft.pt").string() << "\n";
}

}  // namespace

void add_sample_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto* cmd = app.add_subcommand("sample", "Best-of-N: K samples per task from a policy, evaluated "
                                           "(DIR/samples.csv; per task the best speedup and correct count)");
  add_common_options(cmd, *o,
                     {{"--k", "k", "samples per task"},
                      {"--temperature", "temperature", "sampling temperature (0: greedy)"},
                      {"--seed", "seed", "sampling seed"},
                      {"--run", "run", "the run's name in the CSV"}});
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
                      {"--teacher", "teacher", "SDPO teacher: feedback or prompt_only"},
                      {"--patience", "patience", "early stopping after N regressions of fast_1 (0: off)"},
                      {"--learning-rate", "learning_rate", "Adam's learning rate"},
                      {"--lora-rank", "lora_rank", "LoRA rank"},
                      {"--seed", "seed", "sampling seed"},
                      {"--run", "run", "the run's name in the CSVs"}});
  cmd->add_flag("--isolated", *isolated,
                "adapt each task alone, with a fresh adapter from the same starting weights");
  cmd->callback([o, isolated] { run_ttt_command(*o, *isolated); });
}

void add_sft_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto s = std::make_shared<SftOptions>();
  auto* cmd = app.add_subcommand("sft", "SFT of the schedule policy on teacher samples (DIR/sft_epochs.csv, "
                                        "DIR/sft.pt)");
  add_common_options(cmd, *o,
                     {{"--epochs", "epochs", "passes over the data"},
                      {"--batch-size", "batch_size", "sequences per optimizer step"},
                      {"--learning-rate", "learning_rate", "Adam's learning rate"},
                      {"--temperature", "temperature", "the temperature of the log-likelihood"},
                      {"--seed", "seed", "shuffling and teacher sampling seed"}});
  cmd->add_option("--teacher", s->teacher,
                  "heuristic: --per-task samples per task from the heuristic policy, scored in --env; the "
                  "correct ones are the data");
  cmd->add_option("--from-samples", s->from_samples,
                  "a samples.csv (kbrl sample): its correct rows, fastest first, --per-task per task")
      ->check(CLI::ExistingFile);
  cmd->add_option("--per-task", s->per_task, "teacher samples (or rows) per task")->capture_default_str();
  cmd->add_option("--teacher-noise", s->teacher_noise, "the heuristic teacher's noise")->capture_default_str();
  cmd->callback([o, s] { run_sft_command(*o, *s); });
}

}  // namespace kbrl::cli
