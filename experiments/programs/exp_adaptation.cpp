// ttt (surprisal report 5.3: batch trajectory, per-task isolated TTT; Table 5.2's equal-budget
// comparison), oversharpening (5.3b), robustness (5.4 and the regime plot), transfer (5.5) and
// lr_sweep (6.4).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>
#include <experiments/statistics.h>
#include <kbrl/csv.h>
#include <kbrl/error.h>
#include <reference/task_registry.h>

#include "adaptation_common.h"
#include "programs.h"

namespace kbrl {

std::vector<double> per_task_fast_1(const std::vector<Rollout>& rollouts, const std::vector<int>& tasks) {
  std::vector<double> per_task;
  for (int id : tasks) per_task.push_back(score_rollouts(rollouts_of_task(rollouts, id)).fast_1);
  return per_task;
}

stats::BootstrapInterval step_interval(const std::vector<Rollout>& rollouts, const std::vector<int>& tasks) {
  return stats::bootstrap_mean(per_task_fast_1(rollouts, tasks), 2026);
}

std::vector<schemas::SampleRow> probe_samples(const ExperimentContext& ctx) {
  std::vector<schemas::SampleRow> fixed;
  const std::string run = fmt::format("subset1_seed{}", ctx.single_seed());
  for (schemas::SampleRow& r : schemas::read_samples(ctx.input("best_of_n", "samples.csv")))
    if (r.run == run) fixed.push_back(std::move(r));
  KBRL_CHECK_INPUT(fixed.size() >= 8, "{}: best_of_n has {} samples of {}", ctx.experiment, fixed.size(), run);
  return fixed;
}

std::vector<std::vector<std::string>> rho_rows(const ExperimentContext& ctx,
                                               const std::vector<schemas::SampleRow>& fixed,
                                               const std::filesystem::path& adapters, int steps) {
  std::vector<std::vector<std::string>> rows;
  // A task's samples repeat configurations: the first of each (task, tokens) alone gives the
  // p-value that does not count one sample many times (distinct_ columns).
  std::vector<size_t> distinct;
  {
    std::set<std::pair<int, std::vector<int>>> seen;
    for (size_t i = 0; i < fixed.size(); ++i)
      if (seen.emplace(fixed[i].task_id, fixed[i].tokens).second) distinct.push_back(i);
  }
  for (int step = 0; step <= steps; ++step) {
    auto scorer = ctx.load_policy(ctx.base_checkpoint());
    scorer->load_adapter(adapters / fmt::format("adapter_step_{}.pt", step));
    std::vector<double> nll, speedup;
    for (const schemas::SampleRow& r : fixed) {
      const auto lp = scorer->logprob(task_spec(r.task_id, ctx.scale), {r.tokens}, 1.0).at(0);
      double s = 0;
      for (double x : lp) s -= x;
      nll.push_back(s);
      speedup.push_back(r.speedup);
    }
    // The tail: the quartile of highest NLL (where surprisal-guided selection picks).
    std::vector<size_t> order(nll.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b2) { return nll[a] > nll[b2]; });
    std::vector<double> tail_nll, tail_speed;
    for (size_t i = 0; i < std::max<size_t>(3, order.size() / 4) && i < order.size(); ++i) {
      tail_nll.push_back(nll[order[i]]);
      tail_speed.push_back(speedup[order[i]]);
    }
    auto rho_p = [](const std::vector<double>& x, const std::vector<double>& y) -> std::pair<std::string, std::string> {
      try {
        const double rho = stats::spearman(x, y);
        return {cell(rho), cell(stats::correlation_p_value(rho, static_cast<int64_t>(x.size())))};
      } catch (const InputError&) {  // a constant vector: no correlation defined
        return {"nan", "nan"};
      }
    };
    const auto [rho, p] = rho_p(nll, speedup);
    const auto [trho, tp] = rho_p(tail_nll, tail_speed);
    std::vector<double> distinct_nll, distinct_speed;
    for (size_t i : distinct) {
      distinct_nll.push_back(nll[i]);
      distinct_speed.push_back(speedup[i]);
    }
    const auto [drho, dp] = rho_p(distinct_nll, distinct_speed);
    rows.push_back({cell(step), cell(static_cast<int64_t>(nll.size())), rho, p,
                    cell(static_cast<int64_t>(tail_nll.size())), trho, tp, cell(stats::mean(nll)),
                    cell(static_cast<int64_t>(distinct.size())), drho, dp});
  }
  return rows;
}

namespace {

/// (k, `column`) of best_of_n's scaling table for a subset: task_success, sig_task_success, ci_low
/// or ci_high.
std::vector<std::pair<double, double>> bon_curve(const ExperimentContext& ctx, const std::string& subset,
                                                 const std::string& column = "task_success") {
  const CsvRows csv = read_csv(ctx.input("best_of_n", "bon_scaling.csv"), schemas::bon_scaling());
  std::vector<std::pair<double, double>> curve;
  for (size_t row = 0; row < csv.rows.size(); ++row)
    if (csv.at(row, "subset") == subset) curve.emplace_back(std::stod(csv.at(row, "k")), std::stod(csv.at(row, column)));
  KBRL_CHECK_INPUT(!curve.empty(), "best_of_n/bon_scaling.csv has no rows for {}", subset);
  return curve;
}

/// The K at which the best-of-N curve reaches `value` (linear in log K between grid points):
/// "<1" below K = 1, ">K" above the largest K.
std::string equivalent_k(const std::vector<std::pair<double, double>>& curve, double value) {
  if (value < curve.front().second) return "<1";
  for (size_t i = 1; i < curve.size(); ++i) {
    const auto [k0, s0] = curve[i - 1];
    const auto [k1, s1] = curve[i];
    if (value <= s1) {
      if (s1 == s0) return cell(k0);
      const double t = (value - s0) / (s1 - s0);
      return cell(std::exp(std::log(k0) + t * (std::log(k1) - std::log(k0))));
    }
  }
  return fmt::format(">{}", cell(curve.back().first));
}

/// Table 5.2: TTT's BoA fast_1 placed on the best-of-N scaling curve (of fast_1; the significant
/// twins beside it): best-of-N's rows (pooled over its seeds), each seed's BoA step, unadapted step
/// 0 and BoA step on fresh samples, then their means over seeds with the standard deviation.
void write_equal_budget(const ExperimentContext& ctx, const std::vector<std::pair<uint64_t, TttResult>>& batches) {
  const ExperimentBudget& b = ctx.budget;
  const auto curve = bon_curve(ctx, "subset1");
  const auto sig_curve = bon_curve(ctx, "subset1", "sig_task_success");
  const auto low = bon_curve(ctx, "subset1", "ci_low"), high = bon_curve(ctx, "subset1", "ci_high");
  CsvTable eq(ctx.dir / "equal_budget.csv", schemas::equal_budget());
  const int64_t n_tasks = static_cast<int64_t>(b.subset1.size());
  eq.row({"subset1", fmt::format("best_of_n_k{}", static_cast<int>(curve.back().first)),
          cell(static_cast<int64_t>(curve.back().first) * n_tasks), cell(curve.back().second),
          cell(sig_curve.back().second), cell(curve.back().first), cell(low.back().second), cell(high.back().second),
          "all", ""});
  eq.row({"subset1", "best_of_n_k1", cell(n_tasks), cell(curve.front().second), cell(sig_curve.front().second),
          cell(1.0), cell(low.front().second), cell(high.front().second), "all", ""});
  // Per method: each seed's fast_1, sig_fast_1 and per-task fast shares (for the mean's interval).
  struct Across {
    std::vector<double> fast, sig;
    std::vector<double> per_task;  // summed over seeds, task by task
    double rollouts = 0;  // summed over seeds
  };
  std::map<std::string, Across> across;
  auto add = [&](const std::string& method, const std::string& label, uint64_t seed, int64_t rollouts,
                 const StepMetrics& m, const std::vector<Rollout>& sampled) {
    const std::vector<double> shares = per_task_fast_1(sampled, b.subset1);
    const auto ci = stats::bootstrap_mean(shares, 2026);  // step_interval's
    eq.row({"subset1", label, cell(rollouts), cell(m.fast_1), cell(m.sig_fast_1), equivalent_k(curve, m.fast_1),
            cell(ci.lower), cell(ci.upper), cell(static_cast<int64_t>(seed)), ""});
    Across& a = across[method];
    a.fast.push_back(m.fast_1);
    a.sig.push_back(m.sig_fast_1);
    a.rollouts += static_cast<double>(rollouts);
    a.per_task.resize(shares.size(), 0.0);
    for (size_t i = 0; i < shares.size(); ++i) a.per_task[i] += shares[i];
  };
  for (const auto& [seed, batch] : batches) {
    const auto boa_step = static_cast<size_t>(batch.boa.best_step);
    const int64_t boa_rollouts = static_cast<int64_t>(batch.boa.best_step + 1) * b.ttt_k * n_tasks;
    add("ttt_boa", fmt::format("ttt_boa_step{}", batch.boa.best_step), seed, boa_rollouts, batch.steps.at(boa_step),
        batch.rollouts.at(boa_step));
    add("base_step0", "base_step0", seed, b.ttt_k * n_tasks, batch.steps.front(), batch.rollouts.front());
    // The same step scored on fresh samples (drawn under its adapter, never trained on or selected
    // with): the in-batch fast_1 above is the highest of the steps' draws, biased upward by that choice.
    add("boa_fresh", fmt::format("boa_fresh_step{}", batch.boa.best_step), seed, boa_rollouts,
        batch.fresh.at(boa_step), batch.fresh_rollouts.at(boa_step));
  }
  for (const char* method : {"ttt_boa", "base_step0", "boa_fresh"}) {
    const Across& a = across.at(method);
    std::vector<double> per_task = a.per_task;  // each task's mean over seeds
    for (double& x : per_task) x /= static_cast<double>(a.fast.size());
    const auto ci = stats::bootstrap_mean(per_task, 2026);
    const double fast = stats::mean(a.fast), seeds = static_cast<double>(a.fast.size());
    eq.row({"subset1", std::string(method) + "_mean", cell(a.rollouts / seeds), cell(fast), cell(stats::mean(a.sig)),
            equivalent_k(curve, fast), cell(ci.lower), cell(ci.upper), "mean",
            a.fast.size() > 1 ? cell(stats::sample_stdev(a.fast)) : ""});
  }
}

void ttt(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable steps(ctx.dir / "ttt_steps.csv", schemas::training_steps());
  CsvTable tasks(ctx.dir / "ttt_tasks.csv", schemas::ttt_task_steps());
  // Batch TTT once per seed of the three-seed runs (the report's TTT row is a 3-seed mean): each
  // seed a fresh adapter from the same checkpoint, its own samples, its own run name.
  std::vector<std::pair<uint64_t, TttResult>> batches;
  for (uint64_t seed : b.sdpo_seeds) {
    ctx.env->set_observation(seed_observation(seed));  // each seed times its samples itself
    auto policy = ctx.load_policy(ctx.base_checkpoint());
    TttConfig c = ctx.ttt_config(b.subset1, seed, fmt::format("batch_subset1_seed{}", seed));
    c.fresh_k = b.ttt_k;  // BoA's step also scored on samples it was not chosen by
    batches.emplace_back(seed, run_ttt(*policy, *ctx.env, c, &steps, &tasks, {}, ctx.progress));
  }
  // Per-task isolated TTT (the report shows one seed's trajectories): each task alone, a fresh
  // adapter from the same checkpoint, the first seed.
  CsvTable iso_steps(ctx.dir / "ttt_isolated_steps.csv", schemas::training_steps());
  CsvTable iso_tasks(ctx.dir / "ttt_isolated_tasks.csv", schemas::ttt_task_steps());
  std::vector<std::pair<std::string, TttResult>> runs;
  ctx.env->set_observation(seed_observation(ctx.single_seed()));
  for (const auto& [seed, r] : batches) runs.emplace_back(fmt::format("batch_subset1_seed{}", seed), r);
  for (int id : b.subset1) {
    auto p = ctx.load_policy(ctx.base_checkpoint());
    const std::string run = fmt::format("isolated_task{}", id);
    runs.emplace_back(run, run_ttt(*p, *ctx.env, ctx.ttt_config({id}, run), &iso_steps, &iso_tasks, {},
                                   ctx.progress));
  }
  // The report's early stopping (stop after P consecutive regressions of fast_1) at P = 1, applied
  // to each run's full trajectory, against the step the whole trajectory's best (the oracle) picks:
  // "P = 1 matched oracle selection".
  CsvTable early(ctx.dir / "early_stopping.csv", schemas::early_stopping());
  int matches = 0;
  for (const auto& [run, r] : runs) {
    std::vector<double> scores;
    for (const StepMetrics& m : r.steps) scores.push_back(m.fast_1);
    const BoaDecision oracle = best_of_adaptation(scores, 0), p1 = best_of_adaptation(scores, 1);
    matches += p1.best_step == oracle.best_step;
    early.row({run, cell(static_cast<int64_t>(scores.size()) - 1), cell(oracle.best_step), cell(oracle.best_score),
               cell(p1.stop_step), cell(p1.best_step), cell(p1.best_score),
               p1.best_step == oracle.best_step ? "yes" : "no"});
  }
  early.row({"all", "", "", "", "", "", "", fmt::format("{} of {}", matches, runs.size())});
  write_equal_budget(ctx, batches);
}

void oversharpening(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  const std::vector<schemas::SampleRow> fixed = probe_samples(ctx);
  // A TTT trajectory on subset 1 with every step's adapter kept.
  const auto adapters = ctx.dir / "adapters";
  auto policy = ctx.load_policy(ctx.base_checkpoint());
  TttConfig c = ctx.ttt_config(b.subset1, "probe_subset1");
  c.steps = b.probe_steps;
  CsvTable steps(ctx.dir / "probe_ttt_steps.csv", schemas::training_steps());
  run_ttt(*policy, *ctx.env, c, &steps, nullptr, adapters, ctx.progress);
  CsvTable table(ctx.dir / "rho_trajectory.csv", schemas::rho_trajectory());
  for (const auto& row : rho_rows(ctx, fixed, adapters, c.steps)) table.row(row);
}

/// The fast and significantly fast fractions of a task's samples.
struct FastRates {
  double fast = 0, sig_fast = 0;
};

/// Per task: the fast fractions of best_of_n's samples (mean over seeds), from bon_selected.csv.
std::map<int, FastRates> bon_fast_by_task(const ExperimentContext& ctx, const std::string& subset) {
  const CsvRows csv = read_csv(ctx.input("best_of_n", "bon_selected.csv"), schemas::bon_selected());
  std::map<int, std::pair<FastRates, int>> acc;
  for (size_t row = 0; row < csv.rows.size(); ++row) {
    if (csv.at(row, "subset") != subset) continue;
    auto& [sum, n] = acc[std::stoi(csv.at(row, "task_id"))];
    const double samples = std::stod(csv.at(row, "samples"));
    sum.fast += std::stod(csv.at(row, "fast")) / samples;
    sum.sig_fast += std::stod(csv.at(row, "sig_fast")) / samples;
    ++n;
  }
  std::map<int, FastRates> out;
  for (const auto& [task, a] : acc) out[task] = {a.first.fast / a.second, a.first.sig_fast / a.second};
  return out;
}

/// Report 003's Figure 5: tasks whose base policy is fast on at least this share of samples are the
/// "high coverage" regime, where search already finds what adaptation would.
constexpr double kRegimeThreshold = 0.3;

void robustness(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable table(ctx.dir / "robustness.csv", schemas::robustness());
  CsvTable steps(ctx.dir / "ttt_steps.csv", schemas::training_steps());
  for (const auto& [subset, tasks] : {std::pair{std::string("subset1"), b.subset1}, std::pair{std::string("subset2"), b.subset2}}) {
    const std::map<int, FastRates> bon = bon_fast_by_task(ctx, subset);
    auto policy = ctx.load_policy(ctx.base_checkpoint());
    TttConfig c = ctx.ttt_config(tasks, "boa_" + subset);
    c.steps = 1;  // the report compares BoA step 1
    const TttResult r = run_ttt(*policy, *ctx.env, c, &steps, nullptr, {}, ctx.progress);
    // Per task, then the report's aggregates: the subset's mean, and the means of the two regimes of
    // Figure 5 (base coverage below 30% and at least 30%), each with its winner counts.
    struct Row {
      double base, base_sig, bon, bon_sig, boa, boa_sig;
    };
    std::vector<Row> rows;
    for (int id : tasks) {
      const StepMetrics base = score_rollouts(rollouts_of_task(r.rollouts.at(0), id));
      const StepMetrics boa =
          r.rollouts.size() > 1 ? score_rollouts(rollouts_of_task(r.rollouts.at(1), id)) : base;
      const FastRates bn = bon.count(id) ? bon.at(id) : FastRates{};
      rows.push_back({base.fast_1, base.sig_fast_1, bn.fast, bn.sig_fast, boa.fast_1, boa.sig_fast_1});
      table.row({subset, cell(id), cell(base.fast_1), cell(base.sig_fast_1), cell(bn.fast), cell(bn.sig_fast),
                 cell(boa.fast_1), cell(boa.sig_fast_1), cell(boa.fast_1 - bn.fast),
                 boa.fast_1 > bn.fast ? "boa" : (boa.fast_1 < bn.fast ? "best_of_n" : "tie"), "", ""});
    }
    auto aggregate = [&](const std::string& name, auto&& keep) {
      Row sum{0, 0, 0, 0, 0, 0};
      int n = 0, boa_wins = 0, bon_wins = 0;
      std::vector<double> differences;  // BoA minus best-of-N per task: the bootstrap's values
      for (const Row& x : rows) {
        if (!keep(x)) continue;
        ++n;
        differences.push_back(x.boa - x.bon);
        sum = {sum.base + x.base, sum.base_sig + x.base_sig, sum.bon + x.bon,
               sum.bon_sig + x.bon_sig, sum.boa + x.boa, sum.boa_sig + x.boa_sig};
        boa_wins += x.boa > x.bon;
        bon_wins += x.boa < x.bon;
      }
      if (n == 0) return;
      const double d = n;
      const stats::BootstrapInterval ci = stats::bootstrap_mean(differences, 2026);
      table.row({subset, name, cell(sum.base / d), cell(sum.base_sig / d), cell(sum.bon / d), cell(sum.bon_sig / d),
                 cell(sum.boa / d), cell(sum.boa_sig / d), cell((sum.boa - sum.bon) / d),
                 fmt::format("boa {} best_of_n {} tie {} of {}", boa_wins, bon_wins, n - boa_wins - bon_wins, n),
                 cell(ci.lower), cell(ci.upper)});
    };
    aggregate("mean", [](const Row&) { return true; });
    aggregate("mean_base_below_30pct", [](const Row& x) { return x.base < kRegimeThreshold; });
    aggregate("mean_base_at_least_30pct", [](const Row& x) { return x.base >= kRegimeThreshold; });
  }
}

void transfer(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable table(ctx.dir / "transfer.csv", schemas::transfer());
  CsvTable steps(ctx.dir / "ttt_steps.csv", schemas::training_steps());
  const std::vector<std::pair<std::string, std::vector<int>>> subsets = {{"subset1", b.subset1}, {"subset2", b.subset2}};
  for (size_t from = 0; from < 2; ++from) {
    const size_t to = 1 - from;
    auto base = ctx.load_policy(ctx.base_checkpoint());
    const auto base_rollouts = sample_and_evaluate(ctx, *base, ctx.policy_label(ctx.start_stage()), subsets[to].second, b.ttt_k,
                                                   b.temperature, 7, nullptr, "transfer_base");
    auto adapted = ctx.load_policy(ctx.base_checkpoint());
    run_ttt(*adapted, *ctx.env, ctx.ttt_config(subsets[from].second, "adapt_" + subsets[from].first), &steps,
            nullptr, {}, ctx.progress);  // leaves the BoA adapter loaded
    const auto adapted_rollouts = sample_and_evaluate(ctx, *adapted, ctx.policy_label("ttt"), subsets[to].second, b.ttt_k,
                                                      b.temperature, 7, nullptr, "transfer_adapted");
    std::vector<Rollout> a, d;
    std::vector<double> before_by_task, after_by_task;  // the delta's interval pairs them by task
    for (const auto& t : base_rollouts) {
      a.insert(a.end(), t.begin(), t.end());
      before_by_task.push_back(score_rollouts(t).fast_1);
    }
    for (const auto& t : adapted_rollouts) {
      d.insert(d.end(), t.begin(), t.end());
      after_by_task.push_back(score_rollouts(t).fast_1);
    }
    const StepMetrics before = score_rollouts(a), after = score_rollouts(d);
    const stats::BootstrapInterval delta = stats::paired_bootstrap(after_by_task, before_by_task, 2026);
    // Best-of-N on the evaluated subset, as the report quotes it beside base and adapted: the mean
    // over its tasks of best_of_n's per-task rates.
    const std::map<int, FastRates> bon = bon_fast_by_task(ctx, subsets[to].first);
    double bon_fast = 0, bon_sig = 0;
    int bon_tasks = 0;
    for (int id : subsets[to].second)
      if (auto it = bon.find(id); it != bon.end()) {
        bon_fast += it->second.fast;
        bon_sig += it->second.sig_fast;
        ++bon_tasks;
      }
    table.row({subsets[from].first, subsets[to].first, cell(before.fast_1), cell(before.sig_fast_1),
               cell(after.fast_1), cell(after.sig_fast_1), cell(after.fast_1 - before.fast_1),
               bon_tasks ? cell(bon_fast / bon_tasks) : "nan", bon_tasks ? cell(bon_sig / bon_tasks) : "nan",
               cell(delta.lower), cell(delta.upper)});
  }
}

void lr_sweep(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  CsvTable steps(ctx.dir / "lr_sweep_steps.csv", schemas::training_steps());
  CsvTable runs(ctx.dir / "lr_sweep.csv", schemas::adaptation_runs());
  for (double factor : b.lr_factors) {
    auto policy = ctx.load_policy(ctx.base_checkpoint());
    TttConfig c = ctx.ttt_config(b.subset1, "");
    c.optimizer.learning_rate = b.ttt_learning_rate * factor;
    c.run = fmt::format("lr={}", cell(c.optimizer.learning_rate));
    const TttResult r = run_ttt(*policy, *ctx.env, c, &steps, nullptr, {}, ctx.progress);
    runs.row(adaptation_row("lr_sweep", "ttt_grpo", cell(c.optimizer.learning_rate), c, r));
  }
}

}  // namespace

std::vector<Experiment> adaptation_experiments() {
  return {
      {"ttt", "surprisal report 5.3 (batch and per-task TTT trajectories) and Table 5.2 (equal budget)",
       {"base_policy", "best_of_n"}, ttt},
      {"oversharpening", "surprisal report 5.3b (rho(NLL, speedup) per TTT step)", {"base_policy", "best_of_n"},
       oversharpening},
      {"robustness", "surprisal report 5.4 (subset 2, BoN vs BoA step 1; regime plot)",
       {"base_policy", "best_of_n"}, robustness},
      {"transfer", "surprisal report 5.5 (cross-subset transfer of a TTT adapter)", {"base_policy", "best_of_n"},
       transfer},
      {"lr_sweep", "surprisal report 6.4 (TTT learning-rate sweep)", {"base_policy"}, lr_sweep},
  };
}

}  // namespace kbrl
