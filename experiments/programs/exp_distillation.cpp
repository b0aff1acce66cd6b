// sdpo (surprisal report Appendix E, with Appendix C's compute accounting) and ablations
// (self-improvement report 4.3: TTT steps, K, TTT without RLVR, temperature).
#include <map>

#include <fmt/format.h>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>
#include <experiments/statistics.h>

#include "adaptation_common.h"
#include "programs.h"

namespace kbrl {

std::vector<std::string> adaptation_row(const std::string& experiment, const std::string& method,
                                        const std::string& value, const TttConfig& c, const TttResult& r) {
  const StepMetrics& boa = r.steps.at(static_cast<size_t>(r.boa.best_step));
  const stats::BootstrapInterval ci = step_interval(r.rollouts.at(static_cast<size_t>(r.boa.best_step)), c.tasks);
  return {experiment,
          method,
          value,
          cell(static_cast<int64_t>(c.seed)),
          cell(static_cast<int>(c.tasks.size())),
          cell(r.boa.best_step),
          cell(boa.fast_1),
          cell(boa.sig_fast_1),
          cell(r.steps.front().fast_1),
          cell(r.steps.front().sig_fast_1),
          cell(r.steps.back().fast_1),
          cell(r.steps.back().sig_fast_1),
          cell(r.steps.back().correct_rate),
          cell(static_cast<int>(r.steps.size())),
          cell(r.budget.rollouts),
          cell(r.budget.tokens),
          cell(r.budget.teacher_tokens),
          cell(ci.lower),
          cell(ci.upper)};
}

namespace {

void sdpo(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable steps(ctx.dir / "sdpo_steps.csv", schemas::training_steps());
  CsvTable runs(ctx.dir / "sdpo.csv", schemas::adaptation_runs());
  struct Method {
    std::string name;
    TttUpdate update;
    SdpoTeacher teacher;
  };
  const std::vector<Method> methods = {{"boa_grpo", TttUpdate::grpo, SdpoTeacher::feedback},
                                       {"sdpo_feedback", TttUpdate::sdpo, SdpoTeacher::feedback},
                                       {"sdpo_prompt_only", TttUpdate::sdpo, SdpoTeacher::prompt_only}};
  std::map<std::string, Budget> spent;
  std::map<std::string, std::vector<std::vector<std::string>>> by_seed;  // Table D.1's rows per method
  std::map<std::string, std::vector<double>> speedups;
  for (uint64_t seed : b.sdpo_seeds)
    for (const Method& m : methods) {
      ctx.env->set_observation(seed_observation(seed));  // the methods of a seed are paired, the seeds not
      auto policy = ctx.load_policy(ctx.base_checkpoint());
      TttConfig c = ctx.ttt_config(b.subset1, seed, fmt::format("{}_seed{}", m.name, seed));
      c.update = m.update;
      c.teacher = m.teacher;
      const TttResult r = run_ttt(*policy, *ctx.env, c, &steps, nullptr, {}, ctx.progress);
      runs.row(adaptation_row("sdpo", m.name, "", c, r));
      spent[m.name] += r.budget;
      const StepMetrics& boa = r.steps.at(static_cast<size_t>(r.boa.best_step));
      by_seed[m.name].push_back({m.name, cell(static_cast<int64_t>(seed)), cell(r.boa.best_step), cell(boa.fast_1),
                                 cell(boa.mean_speedup_correct), ""});
      speedups[m.name].push_back(boa.mean_speedup_correct);
    }
  // Table D.1: the mean speedup over the correct samples of each run's BoA step, per seed, then the
  // mean and the sample standard deviation over seeds (nan with one seed).
  CsvTable d1(ctx.dir / "speedup_by_seed.csv", schemas::speedup_by_seed());
  for (const Method& m : methods) {
    for (const auto& row : by_seed[m.name]) d1.row(row);
    const std::vector<double>& x = speedups[m.name];
    d1.row({m.name, "mean", "", "", cell(stats::mean(x)), x.size() > 1 ? cell(stats::sample_stdev(x)) : "nan"});
  }
  // Appendix C: rollouts and tokens per method (summed over seeds). Before them, the report's two
  // reference rows, as rollout counts of the same settings: the base policy (one round of ttt_k
  // samples per task, TTT's step 0) and best-of-N at K = ttt_k * (steps + 1) per task, which spends
  // the rollouts of a TTT run that takes every step. Nothing is sampled for them here, so their
  // token and time columns are empty ("nan"): only what the TTT runs spent was measured.
  CsvTable compute(ctx.dir / "compute.csv", schemas::compute());
  const int64_t seeds = static_cast<int64_t>(b.sdpo_seeds.size());
  const int64_t tasks = static_cast<int64_t>(b.subset1.size());
  const int64_t round = seeds * tasks * b.ttt_k;
  compute.row({"base", cell(seeds), cell(round), "nan", "nan", "nan", "nan", "nan"});
  compute.row({"best_of_n", cell(seeds), cell(round * (b.ttt_steps + 1)), "nan", "nan", "nan", "nan", "nan"});
  for (const Method& m : methods) {
    const Budget& s = spent[m.name];
    compute.row({m.name, cell(seeds), cell(s.rollouts), cell(s.tokens), cell(s.teacher_tokens),
                 cell(s.tokens + s.teacher_tokens), cell(s.compile_seconds), cell(s.evaluator_seconds)});
  }
}

void ablations(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable steps(ctx.dir / "ablation_steps.csv", schemas::training_steps());
  CsvTable runs(ctx.dir / "ablations.csv", schemas::adaptation_runs());
  // The report adapts each task alone: every setting also runs per task (a fresh adapter on each
  // task of subset 1), one row per task and then their mean.
  CsvTable task_steps(ctx.dir / "ablation_task_steps.csv", schemas::training_steps());
  CsvTable task_runs(ctx.dir / "ablations_per_task.csv", schemas::ablations_per_task());
  auto run = [&](const std::string& ablation, const std::string& value, TttConfig c,
                 const std::filesystem::path& checkpoint) {
    auto policy = ctx.load_policy(checkpoint);
    c.run = ablation + "=" + value;
    const TttResult r = run_ttt(*policy, *ctx.env, c, &steps, nullptr, {}, ctx.progress);
    runs.row(adaptation_row("ablations", ablation, value, c, r));
    double boa = 0, boa_sig = 0, step0 = 0, step0_sig = 0, final = 0, final_sig = 0, correct = 0;
    int64_t rollouts = 0, tokens = 0;
    for (int id : c.tasks) {
      auto alone = ctx.load_policy(checkpoint);
      TttConfig t = c;
      t.tasks = {id};
      t.run = fmt::format("{}={}/task{}", ablation, value, id);
      const TttResult rt = run_ttt(*alone, *ctx.env, t, &task_steps, nullptr, {}, ctx.progress);
      std::vector<std::string> row = adaptation_row("ablations_per_task", ablation, value, t, rt);
      row.insert(row.begin(), cell(id));
      task_runs.row(row);
      const StepMetrics& best = rt.steps.at(static_cast<size_t>(rt.boa.best_step));
      boa += best.fast_1;
      boa_sig += best.sig_fast_1;
      step0 += rt.steps.front().fast_1;
      step0_sig += rt.steps.front().sig_fast_1;
      final += rt.steps.back().fast_1;
      final_sig += rt.steps.back().sig_fast_1;
      correct += rt.steps.back().correct_rate;
      rollouts += rt.budget.rollouts;
      tokens += rt.budget.tokens;
    }
    const double n = static_cast<double>(c.tasks.size());
    task_runs.row({"mean", "ablations_per_task", ablation, value, cell(static_cast<int64_t>(c.seed)), cell(static_cast<int>(n)),
                   "mean", cell(boa / n), cell(boa_sig / n), cell(step0 / n), cell(step0_sig / n), cell(final / n),
                   cell(final_sig / n), cell(correct / n), "", cell(rollouts), cell(tokens), "0", "", ""});
  };
  for (int s : b.ablation_steps) {
    TttConfig c = ctx.ttt_config(b.subset1, "");
    c.steps = s;
    run("ttt_steps", cell(s), c, ctx.base_checkpoint());
  }
  for (int k : b.ablation_k) {
    TttConfig c = ctx.ttt_config(b.subset1, "");
    c.k = k;
    run("k", cell(k), c, ctx.base_checkpoint());
  }
  if (ctx.from_loaded) {  // the start ablation compares base_policy's stages, which did not run
    if (ctx.progress) ctx.progress("--from loaded: no start ablation (sft_without_rlvr against rlvr needs base_policy)");
  } else {
    run("start", "sft_without_rlvr", ctx.ttt_config(b.subset1, ""), ctx.sft_checkpoint());
    run("start", "rlvr", ctx.ttt_config(b.subset1, ""), ctx.base_checkpoint());
  }
  for (double t : b.ablation_temperatures) {
    TttConfig c = ctx.ttt_config(b.subset1, "");
    c.temperature = t;
    run("temperature", cell(t), c, ctx.base_checkpoint());
  }
}

}  // namespace

std::vector<Experiment> distillation_experiments() {
  return {
      {"sdpo", "surprisal report Appendix E (SDPO feedback vs prompt-only), C (compute) and D.1 (speedup per seed)",
       {"base_policy"}, sdpo},
      {"ablations", "self-improvement report 4.3 (TTT steps, K, without RLVR, temperature)", {"base_policy"},
       ablations},
  };
}

}  // namespace kbrl
