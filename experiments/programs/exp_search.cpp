// best_of_n (surprisal report Table 5.1, Table D.2), selection (Table 5.3 with effect sizes, tests
// and the deployable top-m curve) and length_control (5.2's Spearman and quartile tables).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>
#include <experiments/selection.h>
#include <experiments/statistics.h>
#include <kbrl/error.h>

#include "programs.h"

namespace kbrl {
namespace {

std::string run_name(const std::string& subset, uint64_t seed) {
  return fmt::format("{}_seed{}", subset, seed);
}

using stats::mean;
using stats::sample_stdev;

/// The 95% percentile-bootstrap interval of the mean of per-task values (bon_scaling's settings).
stats::BootstrapInterval mean_interval(const std::vector<double>& per_task) {
  return stats::bootstrap_mean(per_task, 20260301, {.resamples = 2000});
}

/// A rollout as selection sees it (no log-probability: best-of-k draws at random).
ScoredSample scored(const Rollout& r) {
  return {r.correct(), r.speedup(), 0.0, r.speedup_ci() ? r.speedup_ci()->low : 0.0};
}

std::vector<int> k_grid(int max_k) {
  std::vector<int> ks;
  for (int k = 1; k < max_k; k *= 2) ks.push_back(k);
  ks.push_back(max_k);
  return ks;
}

void best_of_n(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  // The policy after base_policy's RLVR (the schedule policy or lm:...), a served model as served,
  // or (--from loaded) the language model as --policy gives it.
  std::unique_ptr<Policy> policy;
  if (ctx.served_model())
    policy = ctx.served_policy();
  else
    policy = ctx.load_policy(ctx.base_checkpoint());
  const std::string label = ctx.served_model() ? policy->name() : ctx.policy_label(ctx.start_stage());
  CsvTable samples(ctx.dir / "samples.csv", schemas::samples());
  CsvTable selected(ctx.dir / "bon_selected.csv", schemas::bon_selected());
  CsvTable scaling(ctx.dir / "bon_scaling.csv", schemas::bon_scaling());
  for (const auto& [subset, tasks] : {std::pair{std::string("subset1"), b.subset1}, std::pair{std::string("subset2"), b.subset2}}) {
    // per seed, per task: the fast indicators and gated speedups of its K samples
    std::map<uint64_t, std::vector<std::vector<Rollout>>> by_seed;
    for (uint64_t seed : b.seeds) {
      ctx.env->set_observation(seed_observation(seed));  // each seed times its samples itself
      by_seed[seed] = sample_and_evaluate(ctx, *policy, label, tasks, b.bon_k,
                                          b.temperature,
                                          seed, &samples, run_name(subset, seed));
      for (size_t t = 0; t < tasks.size(); ++t) {
        const auto& rs = by_seed[seed][t];
        int correct = 0, fast = 0, sig_fast = 0;
        double best = 0;
        for (const Rollout& r : rs) {
          correct += r.correct();
          fast += r.fast();
          sig_fast += r.significantly_fast();
          best = std::max(best, r.speedup());
        }
        selected.row({subset, cell(static_cast<int64_t>(seed)), cell(tasks[t]), cell(static_cast<int64_t>(rs.size())),
                      cell(correct), cell(fast), cell(sig_fast), cell(best)});
      }
    }
    // Task success at k: the best of k samples (by speedup) is fast (pass@k); its significant twin:
    // that best sample is significantly fast (selection.h, best_of_random_k).
    for (int k : k_grid(b.bon_k)) {
      std::vector<double> per_seed, sig_per_seed, best_per_seed;
      std::vector<double> per_task(tasks.size(), 0.0), sig_per_task(tasks.size(), 0.0);
      for (const auto& [seed, per] : by_seed) {
        std::vector<double> success, sig_success, best;
        for (size_t t = 0; t < per.size(); ++t) {
          int64_t fast = 0;
          std::vector<double> speedups;
          std::vector<ScoredSample> samples;
          for (const Rollout& r : per[t]) {
            fast += r.fast();
            speedups.push_back(r.speedup());
            samples.push_back(scored(r));
          }
          const double p = stats::pass_at_k(static_cast<int64_t>(per[t].size()), fast, k);
          const double sig = best_of_random_k(samples, k).sig_fast;
          success.push_back(p);
          sig_success.push_back(sig);
          per_task[t] += p / static_cast<double>(by_seed.size());
          sig_per_task[t] += sig / static_cast<double>(by_seed.size());
          best.push_back(stats::expected_best_of_k(speedups, k));
        }
        per_seed.push_back(mean(success));
        sig_per_seed.push_back(mean(sig_success));
        best_per_seed.push_back(mean(best));
      }
      const auto ci = mean_interval(per_task);
      const auto sig_ci = mean_interval(sig_per_task);
      scaling.row({subset, cell(k), cell(mean(per_seed)), cell(sample_stdev(per_seed)), cell(ci.lower), cell(ci.upper),
                   cell(mean(sig_per_seed)), cell(sample_stdev(sig_per_seed)), cell(sig_ci.lower), cell(sig_ci.upper),
                   cell(mean(best_per_seed)), cell(static_cast<int64_t>(by_seed.size())), cell(b.bon_k)});
    }
  }
}

/// samples.csv rows grouped: subset -> (seed run) -> task -> scored samples.
using Grouped = std::map<std::string, std::map<std::string, std::map<int, std::vector<ScoredSample>>>>;

Grouped group_samples(const std::vector<schemas::SampleRow>& rows) {
  Grouped g;
  for (const schemas::SampleRow& r : rows) {
    const std::string subset = r.run.substr(0, r.run.find('_'));
    g[subset][r.run][r.task_id].push_back({r.correct, r.speedup, r.token_count ? r.logprob / r.token_count : 0.0,
                                           r.speedup_ci ? r.speedup_ci->low : 0.0});
  }
  return g;
}

void selection(ExperimentContext& ctx) {
  const Grouped g = group_samples(schemas::read_samples(ctx.best_of_n_samples()));
  CsvTable table(ctx.dir / "selection.csv", schemas::selection());
  CsvTable tests(ctx.dir / "selection_tests.csv", schemas::selection_tests());
  CsvTable topm(ctx.dir / "selection_topm.csv", schemas::selection_topm());
  for (const auto& [subset, runs] : g) {
    std::map<SelectionStrategy, std::vector<Selection>> pairs;  // over (run, task)
    for (SelectionStrategy st : all_selection_strategies()) {
      std::vector<double> fast_per_run, sig_per_run, speed_per_run, timed;
      std::map<int, std::vector<double>> fast_by_task;  // over seeds: the bootstrap's clusters are tasks
      int evaluations = 0;
      for (const auto& [run, tasks] : runs) {
        std::vector<double> f, sf, s;
        for (const auto& [task, samples] : tasks) {
          const Selection sel = select_sample(samples, st);
          fast_by_task[task].push_back(sel.fast);
          pairs[st].push_back(sel);
          f.push_back(sel.fast);
          sf.push_back(sel.sig_fast);
          s.push_back(sel.speedup);
          evaluations = sel.evaluations;
          timed.push_back(sel.timed);
        }
        fast_per_run.push_back(mean(f));
        sig_per_run.push_back(mean(sf));
        speed_per_run.push_back(mean(s));
      }
      std::vector<double> task_fast;
      for (const auto& [task, f] : fast_by_task) task_fast.push_back(mean(f));
      const stats::BootstrapInterval ci = stats::bootstrap_mean(task_fast, 2026);
      table.row({subset, std::string(to_string(st)), cell(mean(fast_per_run)), cell(sample_stdev(fast_per_run)),
                 cell(mean(sig_per_run)), cell(sample_stdev(sig_per_run)), cell(mean(speed_per_run)), cell(evaluations),
                 cell(mean(timed)), cell(ci.lower), cell(ci.upper)});
    }
    // Surprisal-guided vs the others, over (run, task) pairs.
    for (SelectionStrategy other : {SelectionStrategy::confidence, SelectionStrategy::random_correct}) {
      const auto& a = pairs[SelectionStrategy::surprisal];
      const auto& o = pairs[other];
      std::vector<double> fa, fo, sa, so, log_ratio, fast_diff;
      for (size_t i = 0; i < a.size(); ++i) {
        fa.push_back(a[i].fast);
        fo.push_back(o[i].fast);
        sa.push_back(a[i].sig_fast);
        so.push_back(o[i].sig_fast);
        fast_diff.push_back(a[i].fast - o[i].fast);
        if (a[i].speedup > 0 && o[i].speedup > 0) log_ratio.push_back(std::log(a[i].speedup / o[i].speedup));
      }
      const double p1 = mean(fa), p2 = mean(fo), sig_p1 = mean(sa), sig_p2 = mean(so);
      std::string w = "nan", w_plus = "nan", wp = "nan", method = "none";
      bool any_nonzero = false;
      for (double x : log_ratio) any_nonzero |= x != 0;
      if (any_nonzero) {
        const auto r = stats::wilcoxon_signed_rank(log_ratio);
        w = cell(r.statistic());
        w_plus = cell(r.w_plus);
        wp = cell(r.p_value);
        method = std::string(stats::to_string(r.method));
      }
      int64_t positives = 0, negatives = 0;
      for (double d : fast_diff) (d > 0 ? positives : negatives) += d != 0 ? 1 : 0;
      std::string sign_p = "nan", sign_p_one_sided = "nan";
      if (positives + negatives > 0) {
        const stats::SignTestResult sign = stats::sign_test(positives, negatives);
        sign_p = cell(sign.p_value);
        sign_p_one_sided = cell(sign.p_greater);  // H1: surprisal-guided is fast more often
      }
      tests.row({subset, fmt::format("surprisal_guided_vs_{}", to_string(other)), cell(p1), cell(p2),
                 cell(stats::cohens_h(p1, p2)), cell(sig_p1), cell(sig_p2), cell(stats::cohens_h(sig_p1, sig_p2)), w,
                 wp, method, cell(positives), cell(negatives), sign_p, cell(static_cast<int64_t>(a.size())), w_plus,
                 sign_p_one_sided});
    }
    // The deployable variant: evaluate only the m highest-surprisal samples of each task.
    int max_k = 0;
    for (const auto& [run, tasks] : runs)
      for (const auto& [task, samples] : tasks) max_k = std::max(max_k, static_cast<int>(samples.size()));
    std::vector<int> ms;
    for (int m = 1; m < max_k; m = m < 4 ? m + 1 : m * 2) ms.push_back(m);
    ms.push_back(max_k);
    for (int m : ms) {
      std::vector<double> f, sf, s;
      for (const auto& [run, tasks] : runs)
        for (const auto& [task, samples] : tasks) {
          const Selection sel = select_top_surprisal_evaluated(samples, m);
          f.push_back(sel.fast);
          sf.push_back(sel.sig_fast);
          s.push_back(sel.speedup);
        }
      topm.row({subset, cell(m), cell(m), cell(mean(f)), cell(mean(sf)), cell(mean(s))});
    }
  }
}

void length_control(ExperimentContext& ctx) {
  const std::vector<schemas::SampleRow> rows = schemas::read_samples(ctx.best_of_n_samples());
  // The K samples of a task repeat configurations (a few distinct ones among 64 draws), so their
  // p-values would count one sample many times: besides every correct sample (the reports'
  // analysis), the same on distinct samples only (a task's action seen once), and by task (the
  // clusters: one Spearman rho per task, their mean, and a two-sided sign test on their signs).
  std::vector<const schemas::SampleRow*> correct, distinct;
  std::set<std::string> seen;
  for (const schemas::SampleRow& r : rows) {
    if (!r.correct) continue;
    correct.push_back(&r);
    const std::string action = r.kind == ActionKind::text ? r.text : r.config;
    if (seen.insert(fmt::format("{}/{}/{}", r.task_id, to_string(r.kind), action)).second) distinct.push_back(&r);
  }
  CsvTable table(ctx.dir / "length_control.csv", schemas::length_control());
  auto analyses = [&](const std::vector<const schemas::SampleRow*>& samples, const std::string& suffix) {
    std::vector<double> logprob, speedup, length;
    for (const schemas::SampleRow* r : samples) {
      logprob.push_back(r->logprob);
      speedup.push_back(r->speedup);
      length.push_back(r->token_count);
    }
    const int64_t n = static_cast<int64_t>(logprob.size());
    auto emit = [&](const std::string& analysis, auto&& compute, int64_t df_n) {
      try {
        const double rho = compute();
        table.row({analysis + suffix, cell(rho), cell(stats::correlation_p_value(rho, df_n)), cell(n)});
      } catch (const InputError& e) {  // too few samples, or a constant variable
        table.row({analysis + suffix, "nan", "nan", cell(n)});
        if (ctx.progress) ctx.progress(fmt::format("length_control: {}{}: {}", analysis, suffix, e.what()));
      }
    };
    emit("raw_logprob_vs_speedup", [&] { return stats::spearman(logprob, speedup); }, n);
    emit("partial_controlling_length", [&] { return stats::partial_spearman(logprob, speedup, length); }, n - 1);
    emit("length_vs_speedup", [&] { return stats::spearman(length, speedup); }, n);
  };
  analyses(correct, "");
  analyses(distinct, "_distinct");
  std::map<int, std::vector<const schemas::SampleRow*>> by_task;
  for (const schemas::SampleRow* r : distinct) by_task[r->task_id].push_back(r);
  std::vector<double> rhos;
  for (const auto& [task, samples] : by_task) {
    if (samples.size() < 3) continue;
    std::vector<double> logprob, speedup;
    for (const schemas::SampleRow* r : samples) {
      logprob.push_back(r->logprob);
      speedup.push_back(r->speedup);
    }
    try {
      rhos.push_back(stats::spearman(logprob, speedup));
    } catch (const InputError&) {  // a constant variable within the task: no rank correlation
    }
  }
  int64_t positive = 0, negative = 0;
  for (double rho : rhos) (rho > 0 ? positive : negative) += rho != 0 ? 1 : 0;
  table.row({"raw_logprob_vs_speedup_by_task", rhos.empty() ? "nan" : cell(mean(rhos)),
             positive + negative > 0 ? cell(stats::sign_test(positive, negative).p_value) : "nan",
             cell(static_cast<int64_t>(rhos.size()))});

  // Quartiles of every sample by mean surprisal per token, highest first.
  std::vector<const schemas::SampleRow*> all;
  for (const schemas::SampleRow& r : rows) all.push_back(&r);
  auto mean_surprisal = [](const schemas::SampleRow* r) { return r->token_count ? -r->logprob / r->token_count : 0.0; };
  std::stable_sort(all.begin(), all.end(),
                   [&](const schemas::SampleRow* a, const schemas::SampleRow* b) { return mean_surprisal(a) > mean_surprisal(b); });
  CsvTable quart(ctx.dir / "surprisal_quartiles.csv", schemas::surprisal_quartiles());
  for (int q = 0; q < 4; ++q) {
    const size_t lo = all.size() * static_cast<size_t>(q) / 4, hi = all.size() * static_cast<size_t>(q + 1) / 4;
    double fast = 0, sig_fast = 0, speed = 0, tokens = 0, surprisal = 0;
    int correct = 0;
    for (size_t i = lo; i < hi; ++i) {
      fast += all[i]->correct && all[i]->speedup > 1.0;
      sig_fast += all[i]->significantly_fast();
      if (all[i]->correct) {
        speed += all[i]->speedup;
        ++correct;
      }
      tokens += all[i]->token_count;
      surprisal += mean_surprisal(all[i]);
    }
    const double count = static_cast<double>(hi - lo);
    quart.row({fmt::format("Q{}", q + 1), cell(static_cast<int64_t>(hi - lo)), cell(count ? fast / count : 0.0),
               cell(count ? sig_fast / count : 0.0), cell(correct ? speed / correct : 0.0),
               cell(count ? tokens / count : 0.0), cell(count ? surprisal / count : 0.0)});
  }
}

}  // namespace

std::vector<Experiment> search_experiments() {
  return {
      {"best_of_n", "surprisal report Table 5.1 (best-of-N scaling) and Table D.2", {"base_policy"}, best_of_n,
       true},
      {"selection", "surprisal report Table 5.3 (selection strategies), effect sizes, tests, top-m curve",
       {"best_of_n"}, selection, true},
      {"length_control", "surprisal report 5.2 (length-controlled Spearman, quartiles)", {"best_of_n"},
       length_control, true},
  };
}

}  // namespace kbrl
