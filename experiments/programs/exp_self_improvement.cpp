// per_task_ttt: the self-improvement report's main experiment. E1 (the base policy, greedy), E3
// (best-of-N at K = 64), E4 (TTT on each task alone at K = 64 per step for 15 steps) and E5 (their
// equal-budget comparison per task: same checkpoint, K and temperature), with Figure F3's bars.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>
#include <experiments/statistics.h>
#include <policies/baseline_policies.h>
#include <reference/task_registry.h>

#include "programs.h"

namespace kbrl {
namespace {

/// What one method gave on one task: the rates over its samples and whether its best sample (the
/// oracle's pick: best-of-N's selection, the BoA step's best) is fast.
struct TaskOutcome {
  double correct_rate = 0, fast_1 = 0, sig_fast_1 = 0;
  bool task_success = false, sig_task_success = false;
  double best_speedup = 0;  // over correct samples; 0 when none
};

TaskOutcome outcome_of(const std::vector<Rollout>& rollouts) {
  const StepMetrics m = score_rollouts(rollouts);
  TaskOutcome o{m.correct_rate, m.fast_1, m.sig_fast_1, false, false, 0};
  for (const Rollout& r : rollouts) {
    o.task_success = o.task_success || r.fast();
    o.sig_task_success = o.sig_task_success || r.significantly_fast();
    if (r.correct()) o.best_speedup = std::max(o.best_speedup, r.speedup());
  }
  return o;
}

/// The RLVR checkpoint of step `step`: base_policy's starting weights with that step's adapter
/// merged (the report starts search and adaptation from its step-10 checkpoint); with --from loaded
/// the policy as given.
std::unique_ptr<TrainablePolicy> rlvr_checkpoint(const ExperimentContext& ctx, int step) {
  if (ctx.from_loaded) return ctx.new_policy();
  auto policy = ctx.load_policy(ctx.input("base_policy", "checkpoints/base.pt"));
  policy->load_adapter(ctx.input("base_policy", fmt::format("checkpoints/adapter_step_{}.pt", step)));
  policy->merge_adapter();
  return policy;
}

void per_task_ttt(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  const int k = b.per_task_ttt_k;
  const double temperature = b.per_task_ttt_temperature;
  CsvTable table(ctx.dir / "per_task_ttt.csv", schemas::per_task_ttt());
  CsvTable steps(ctx.dir / "ttt_steps.csv", schemas::training_steps());
  CsvTable samples(ctx.dir / "samples.csv", schemas::samples());
  // Per method, per task: the outcomes over seeds (the bootstrap's clusters are the tasks).
  std::map<std::string, std::map<int, std::vector<TaskOutcome>>> by_method;
  for (uint64_t seed : b.seeds) {
    ctx.env->set_observation(seed_observation(seed));  // each seed times its samples itself
    auto base = rlvr_checkpoint(ctx, b.per_task_ttt_checkpoint_step);
    GreedyPolicy greedy(*base);
    const auto greedy_rollouts = sample_and_evaluate(ctx, greedy, ctx.policy_label(ctx.start_stage() + "_greedy"), b.subset1, 1,
                                                     temperature, seed, &samples, fmt::format("greedy_seed{}", seed));
    const auto bon_rollouts = sample_and_evaluate(ctx, *base, ctx.policy_label(ctx.start_stage()), b.subset1, k, temperature,
                                                  seed, &samples, fmt::format("best_of_n_seed{}", seed));
    for (size_t t = 0; t < b.subset1.size(); ++t) {
      const int id = b.subset1[t];
      auto policy = rlvr_checkpoint(ctx, b.per_task_ttt_checkpoint_step);
      TttConfig c = ctx.ttt_config({id}, seed, fmt::format("task{}_seed{}", id, seed));
      c.k = k;
      c.steps = b.per_task_ttt_steps;
      c.temperature = temperature;
      const TttResult r = run_ttt(*policy, *ctx.env, c, &steps, nullptr, {}, ctx.progress);
      const TaskOutcome g = outcome_of(greedy_rollouts[t]);
      const TaskOutcome bon = outcome_of(bon_rollouts[t]);
      const TaskOutcome ttt = outcome_of(r.rollouts.at(static_cast<size_t>(r.boa.best_step)));
      by_method["base_greedy"][id].push_back(g);
      by_method["best_of_n"][id].push_back(bon);
      by_method["ttt_boa"][id].push_back(ttt);
      table.row({cell(static_cast<int64_t>(seed)), cell(id), cell(g.task_success), cell(g.sig_task_success), cell(k),
                 cell(bon.correct_rate), cell(bon.fast_1), cell(bon.sig_fast_1), cell(bon.task_success),
                 cell(bon.sig_task_success), cell(bon.best_speedup), cell(k), cell(c.steps), cell(r.boa.best_step),
                 cell(ttt.correct_rate), cell(ttt.fast_1), cell(ttt.sig_fast_1), cell(ttt.task_success),
                 cell(ttt.sig_task_success), cell(ttt.best_speedup), cell(r.budget.rollouts),
                 cell(ttt.fast_1 - bon.fast_1)});
    }
  }
  // E5 and F3: per method, the mean over tasks of the per-task means over seeds, with 95% bootstrap
  // intervals over tasks (the seeds of a task are not independent draws of the task population);
  // then TTT minus best-of-N, paired by task.
  CsvTable summary(ctx.dir / "per_task_ttt_summary.csv", schemas::per_task_ttt_summary());
  auto per_task = [&](const std::string& method, auto&& field) {
    std::vector<double> out;
    for (int id : b.subset1) {
      double sum = 0;
      for (const TaskOutcome& o : by_method[method][id]) sum += field(o);
      out.push_back(sum / static_cast<double>(b.seeds.size()));
    }
    return out;
  };
  const auto fast = [](const TaskOutcome& o) { return o.fast_1; };
  const auto success = [](const TaskOutcome& o) { return o.task_success ? 1.0 : 0.0; };
  const uint64_t boot_seed = 2026;
  const std::map<std::string, int64_t> rollouts_per_task = {
      {"base_greedy", 1}, {"best_of_n", k}, {"ttt_boa", static_cast<int64_t>(k) * (b.per_task_ttt_steps + 1)}};
  for (const std::string method : {"base_greedy", "best_of_n", "ttt_boa"}) {
    const auto f = stats::bootstrap_mean(per_task(method, fast), boot_seed);
    const auto s = stats::bootstrap_mean(per_task(method, success), boot_seed);
    const auto mean = [&](auto&& field) { return stats::mean(per_task(method, field)); };
    summary.row({method, cell(rollouts_per_task.at(method)), cell(static_cast<int>(b.subset1.size())),
                 cell(mean([](const TaskOutcome& o) { return o.correct_rate; })), cell(f.estimate), cell(f.lower),
                 cell(f.upper), cell(mean([](const TaskOutcome& o) { return o.sig_fast_1; })), cell(s.estimate),
                 cell(s.lower), cell(s.upper),
                 cell(mean([](const TaskOutcome& o) { return o.sig_task_success ? 1.0 : 0.0; })),
                 cell(mean([](const TaskOutcome& o) { return o.best_speedup; }))});
  }
  const auto df = stats::paired_bootstrap(per_task("ttt_boa", fast), per_task("best_of_n", fast), boot_seed);
  const auto ds = stats::paired_bootstrap(per_task("ttt_boa", success), per_task("best_of_n", success), boot_seed);
  summary.row({"ttt_boa_minus_best_of_n", "", cell(static_cast<int>(b.subset1.size())), "", cell(df.estimate),
               cell(df.lower), cell(df.upper), "", cell(ds.estimate), cell(ds.lower), cell(ds.upper), "", ""});
}

}  // namespace

std::vector<Experiment> self_improvement_experiments() {
  return {
      {"per_task_ttt",
       "self-improvement report E1, E3-E5 and F3 (per-task TTT at K=64 x 15 steps vs best-of-N at K=64, from the "
       "step-10 RLVR checkpoint)",
       {"base_policy"}, per_task_ttt},
  };
}

}  // namespace kbrl
