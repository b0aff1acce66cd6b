// `kbrl sweep`: every legal configuration of a task's knob space (or a seeded uniform sample of
// them, the expert configuration always included) through the evaluator; one CSV row per
// configuration and one per task, appended as each task finishes.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <kbrl/csv.h>
#include <kbrl/error.h>

#include "commands.h"
#include "out_dir.h"
#include <experiments/run_setup.h>
#include <experiments/schemas.h>
#include <harness/evaluate_actions.h>
#include <harness/evaluator.h>
#include <harness/gpu/gpu_session.h>
#include <harness/record/rollout_log.h>
#include <kernels/action.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>
#include "run_options.h"

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

struct SweepOptions {
  TaskFlags tasks;
  EvalFlags eval;
  int max_configs = 0;  // 0 = every legal configuration
  uint64_t seed = 0;
  std::string log_path;
  OutDirFlags out;
};

/// The precision category of a finding's text ("tf32 (ptx line 12: ...)" -> "tf32").
std::string category_of(const std::string& finding) { return finding.substr(0, finding.find(' ')); }

std::vector<std::string> categories_of(const EvalRecord& r) {
  std::vector<std::string> out;
  for (const auto& f : r.compile.precision_findings) {
    const std::string c = category_of(f);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

std::string opt_cell(std::optional<double> v) { return v ? cell(*v) : std::string(); }

/// Task ids already in a sweep_tasks.csv (for --resume).
std::set<int> finished_tasks(const fs::path& file) {
  std::set<int> done;
  if (!fs::exists(file)) return done;
  const CsvRows csv = read_csv(file, schemas::sweep_tasks());
  for (size_t row = 0; row < csv.rows.size(); ++row) {
    try {
      done.insert(std::stoi(csv.at(row, "task_id")));
    } catch (const std::logic_error&) {
      throw InputError(fmt::format("{}: a row without a task id", csv.where(row)));
    }
  }
  return done;
}

void run_sweep(const SweepOptions& o) {
  std::vector<int> ids = select_tasks(o.tasks.ids, o.tasks.split);
  ids = o.tasks.split.empty()
            ? covered_only(ids)
            : covered_only(ids, [](const std::string& w) { std::cerr << "kbrl: warning: " << w << "\n"; });
  KBRL_CHECK_INPUT(o.max_configs >= 0, "--max-configs must be >= 0 (got {})", o.max_configs);
  const EvalSettings settings = eval_settings(o.eval);
  std::string reason;
  if (!gpu_available(&reason))
    throw Error(fmt::format("kbrl sweep needs a GPU to evaluate configurations (no GPU: {})", reason));

  const fs::path dir = prepare_out_dir(o.out, "sweep");
  const fs::path tasks_file = dir / "sweep_tasks.csv";
  const std::set<int> done = o.out.resume ? finished_tasks(tasks_file) : std::set<int>{};
  CsvTable configs_csv(dir / "sweep_configs.csv", schemas::sweep_configs(), o.out.resume);
  CsvTable tasks_csv(tasks_file, schemas::sweep_tasks(), o.out.resume);
  Evaluator evaluator(settings);
  std::unique_ptr<RolloutLog> log;
  if (!o.log_path.empty()) {
    log = std::make_unique<RolloutLog>(o.log_path);
    evaluator.attach_log(log.get());
  }
  std::cout << fmt::format("{:>4}  {:<36} {:>6} {:>6} {:>7} {:>9} {:>9} {:>9}  {}\n", "task", "name", "space",
                           "evals", "correct", "best x", "fp32 x", "expert x", "best config");
  for (int id : ids) {
    if (done.count(id)) {
      std::cerr << "kbrl: sweep: task " << id << " already in " << tasks_file.string() << ": skipped\n";
      continue;
    }
    const TaskSpec task = task_spec(id, settings.scale);
    const Generator& generator = generator_for(id);
    const KnobSpace space = generator.space(task);
    const std::vector<Config> all = space.enumerate();
    KBRL_ASSERT(!all.empty(), "task {} has an empty knob space", id);
    const Config expert = space.parse(generator.expert(task).str());
    const auto expert_it = std::find(all.begin(), all.end(), expert);
    KBRL_ASSERT(expert_it != all.end(), "task {}: the expert configuration {} is not legal", id, expert.str());
    const size_t expert_index = static_cast<size_t>(expert_it - all.begin());
    const std::vector<size_t> picked = sweep_sample(all.size(), expert_index, o.max_configs, o.seed, id);
    std::cerr << fmt::format("kbrl: sweep: task {} ({}): {} of {} configurations\n", id, task.name, picked.size(),
                             all.size());

    std::vector<ActionSubmission> submissions;  // token_count: one per knob, as samples record it
    for (size_t i : picked)
      submissions.push_back({{ActionKind::knobs, all[i], {}}, static_cast<int64_t>(all[i].size()), {}});
    std::map<std::string, EvalRecord> records;  // by key
    const std::vector<SubmittedAction> done = evaluate_actions(evaluator, task, submissions, "sweep", {}, records);
    const DevicePeaks& peaks = evaluator.peaks();

    int compiled = 0, correct = 0;
    const EvalRecord* best = nullptr;
    const EvalRecord* best_fp32 = nullptr;
    std::string best_config, best_fp32_config;
    std::optional<double> best_sol;
    double expert_speedup = 0;
    for (size_t k = 0; k < picked.size(); ++k) {
      const EvalRecord& r = records.at(done[k].key);
      const Config& config = all[picked[k]];
      const bool is_expert = picked[k] == expert_index;
      const std::vector<std::string> categories = categories_of(r);
      const bool tf32 = std::find(categories.begin(), categories.end(), "tf32") != categories.end();
      std::optional<double> candidate_ms, reference_ms, sol;
      if (r.runtime) candidate_ms = r.runtime->median_ms;
      if (r.reference) reference_ms = r.reference->median_ms;
      if (candidate_ms && *candidate_ms > 0) {
        const double floor = floor_ms(task.flops, task.min_bytes, peaks, tf32);
        if (floor > 0) sol = floor / *candidate_ms;
      }
      const bool ok = r.outcome == Outcome::ok;
      compiled += r.compile.ok;
      correct += ok;
      if (is_expert) expert_speedup = r.speedup;
      if (ok && (!best || r.speedup > best->speedup)) {
        best = &r;
        best_config = config.str();
        best_sol = sol;
      }
      if (ok && categories.empty() && (!best_fp32 || r.speedup > best_fp32->speedup)) {
        best_fp32 = &r;
        best_fp32_config = config.str();
      }
      std::optional<double> speedup_low, speedup_high;
      if (r.speedup_ci) {
        speedup_low = r.speedup_ci->low;
        speedup_high = r.speedup_ci->high;
      }
      configs_csv.row({cell(id), config.str(), cell(is_expert), std::string(to_string(r.outcome)),
                       cell(r.compile.ok), cell(ok), cell(r.speedup), opt_cell(speedup_low), opt_cell(speedup_high),
                       opt_cell(candidate_ms), opt_cell(reference_ms), opt_cell(sol),
                       fmt::format("{}", fmt::join(r.compile.precision_findings, ";")),
                       fmt::format("{}", fmt::join(r.flags, ";"))});
    }
    std::string best_audit;
    if (best) {
      const std::vector<std::string> c = categories_of(*best);
      best_audit = c.empty() ? "fp32" : fmt::format("{}", fmt::join(c, ";"));
    }
    tasks_csv.row({cell(id), task.name, std::string(to_string(task.family)), cell(static_cast<int64_t>(all.size())),
                   cell(static_cast<int64_t>(picked.size())), cell(compiled), cell(correct),
                   cell(best ? best->speedup : 0.0), best_config, best_audit, opt_cell(best_sol),
                   cell(best_fp32 ? best_fp32->speedup : 0.0), best_fp32_config, cell(expert_speedup)});
    std::cout << fmt::format("{:>4}  {:<36} {:>6} {:>6} {:>7} {:>9.3f} {:>9.3f} {:>9.3f}  {}\n", id, task.name,
                             all.size(), picked.size(), correct, best ? best->speedup : 0.0,
                             best_fp32 ? best_fp32->speedup : 0.0, expert_speedup, best_config)
              << std::flush;
  }
  std::cout << "wrote " << configs_csv.path().string() << " and " << tasks_csv.path().string() << "\n";
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepOptions>();
  auto* cmd = app.add_subcommand("sweep", "Evaluate every legal configuration of each task's knob space (or a "
                                          "seeded sample) on the GPU (DIR/sweep_configs.csv, DIR/sweep_tasks.csv)");
  add_task_flags(cmd, o->tasks);
  cmd->add_option("--scale", o->eval.scale, "kernelbench or small")->capture_default_str();
  add_eval_flags(cmd, o->eval);
  cmd->add_option("--max-configs", o->max_configs,
                  "evaluate at most N configurations per task: a uniform sample without replacement that "
                  "always includes the expert's (0: all)")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "the sample's seed (splitmix64)")->capture_default_str();
  cmd->add_option("--log", o->log_path, "the evaluator's rollout log (JSONL; a rerun takes what it holds from it and evaluates nothing twice)");
  add_out_flags(cmd, o->out, "continue the sweep --out holds: append to its CSVs, skipping the tasks "
                             "sweep_tasks.csv already has");
  cmd->callback([o] { run_sweep(*o); });
}

}  // namespace kbrl::cli
