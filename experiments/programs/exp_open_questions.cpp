// The surprisal report's 6.7 open questions, run: entropy_ttt (does an entropy bonus in TTT's
// objective, closer to TTT-Discover's entropic objective, prevent the over-sharpening of 5.3b?) and
// sparsification (does the best TTT step move later as the reward gets sparser: the dense speedup
// against thresholded speedups?).
#include <map>

#include <fmt/format.h>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>
#include <harness/reward.h>

#include "adaptation_common.h"
#include "programs.h"

namespace kbrl {
namespace {

void entropy_ttt(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  const std::vector<schemas::SampleRow> fixed = probe_samples(ctx);
  CsvTable steps(ctx.dir / "entropy_ttt_steps.csv", schemas::training_steps());
  CsvTable runs(ctx.dir / "entropy_ttt.csv", schemas::adaptation_runs());
  CsvTable rho(ctx.dir / "entropy_rho.csv", schemas::entropy_rho());
  for (double coef : b.entropy_coefs) {
    auto policy = ctx.load_policy(ctx.base_checkpoint());
    TttConfig c = ctx.ttt_config(b.subset1, fmt::format("entropy_coef={}", cell(coef)));
    c.steps = b.probe_steps;
    c.grpo.update.entropy_coef = coef;
    const auto adapters = ctx.dir / fmt::format("adapters_entropy_{}", cell(coef));
    const TttResult r = run_ttt(*policy, *ctx.env, c, &steps, nullptr, adapters, ctx.progress);
    runs.row(adaptation_row("entropy_ttt", "ttt_grpo_entropy", cell(coef), c, r));
    for (auto row : rho_rows(ctx, fixed, adapters, c.steps)) {
      row.insert(row.begin(), cell(coef));
      rho.row(row);
    }
  }
}

void sparsification(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable steps(ctx.dir / "sparsification_steps.csv", schemas::training_steps());
  CsvTable runs(ctx.dir / "sparsification.csv", schemas::sparsification());
  for (const std::string& spec : b.sparsification_rewards) {
    RewardedEnvironment env(*ctx.env, parse_reward(spec));
    double boa_sum = 0, density_sum = 0, boa_fast_sum = 0, boa_sig_sum = 0;
    for (uint64_t seed : b.sdpo_seeds) {
      env.set_observation(seed_observation(seed));  // each seed times its samples itself
      auto policy = ctx.load_policy(ctx.base_checkpoint());
      TttConfig c = ctx.ttt_config(b.subset1, seed, fmt::format("{}_seed{}", spec, seed));
      c.steps = b.probe_steps;
      const TttResult r = run_ttt(*policy, env, c, &steps, nullptr, {}, ctx.progress);
      int rewarded = 0;
      for (const Rollout& x : r.rollouts.front()) rewarded += x.reward > 0;
      const double density = static_cast<double>(rewarded) / static_cast<double>(r.rollouts.front().size());
      const StepMetrics& boa = r.steps.at(static_cast<size_t>(r.boa.best_step));
      const StepMetrics& first = r.steps.front();
      const StepMetrics& last = r.steps.back();
      runs.row({spec, cell(static_cast<int64_t>(seed)), cell(c.steps), cell(r.boa.best_step), cell(boa.fast_1),
                cell(boa.sig_fast_1), cell(first.fast_1), cell(first.sig_fast_1), cell(last.fast_1),
                cell(last.sig_fast_1), cell(density), cell(first.mean_reward)});
      boa_sum += r.boa.best_step;
      boa_fast_sum += boa.fast_1;
      boa_sig_sum += boa.sig_fast_1;
      density_sum += density;
    }
    const double n = static_cast<double>(b.sdpo_seeds.size());
    runs.row({spec, "mean", cell(b.probe_steps), cell(boa_sum / n), cell(boa_fast_sum / n), cell(boa_sig_sum / n), "", "",
              "", "", cell(density_sum / n), ""});
  }
}

}  // namespace

std::vector<Experiment> open_question_experiments() {
  return {
      {"entropy_ttt", "surprisal report 6.7 (entropy-regularized TTT: over-sharpening with an entropy bonus)",
       {"base_policy", "best_of_n"}, entropy_ttt},
      {"sparsification", "surprisal report 6.7 (reward sparsification: the best TTT step per reward density)",
       {"base_policy"}, sparsification},
  };
}

}  // namespace kbrl
