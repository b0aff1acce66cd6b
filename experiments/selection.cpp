#include "selection.h"

#include <algorithm>
#include <map>

#include <kbrl/error.h>

namespace kbrl {
namespace {

std::vector<ScoredSample> correct_only(const std::vector<ScoredSample>& samples) {
  std::vector<ScoredSample> out;
  for (const auto& s : samples)
    if (s.correct) out.push_back(s);
  return out;
}

/// The speedup a pick by speedup compares: the gated one (0 unless correct).
double gated(const ScoredSample& s) { return s.correct ? s.speedup : 0.0; }

/// The probability that a pick by speedup is significantly fast when its speedup is `level`: the
/// pick is a uniformly random one of the samples tied at that level, so the fraction of those that
/// are (0 when none is at the level).
double sig_rate_at(const std::vector<ScoredSample>& samples, double level) {
  int at = 0, sig = 0;
  for (const auto& s : samples)
    if (gated(s) == level) {
      ++at;
      sig += s.significantly_fast();
    }
  return at ? static_cast<double>(sig) / at : 0.0;
}

/// The mean outcome over the samples whose mean_logprob equals the extreme (max or min).
Selection pick_extreme(const std::vector<ScoredSample>& correct, bool highest) {
  double best = highest ? -1e300 : 1e300;
  for (const auto& s : correct) best = highest ? std::max(best, s.mean_logprob) : std::min(best, s.mean_logprob);
  Selection sel;
  int ties = 0;
  for (const auto& s : correct) {
    if (s.mean_logprob != best) continue;
    ++ties;
    sel.fast += s.fast();
    sel.sig_fast += s.significantly_fast();
    sel.speedup += s.speedup;
  }
  sel.fast /= ties;
  sel.sig_fast /= ties;
  sel.speedup /= ties;
  return sel;
}

/// The expected best speedup (and fast probability of the best) of the first m samples when the
/// samples are ordered by descending surprisal and samples of equal surprisal come in a uniformly
/// random order. Groups of ties are taken whole while they fit; in the group that straddles m,
/// r of its g members are drawn at random: the expectation over those draws is computed exactly
/// from the order statistics of the group. The significance of the best is exact too, except where
/// the best drawn speedup equals the best taken one: the pick is then among both, and the rate of
/// the two pooled stands for it (exact when samples of one speedup agree, as copies of one kernel do).
Selection best_of_top(std::vector<ScoredSample> samples, int m) {
  std::map<double, std::vector<ScoredSample>> groups;  // mean_logprob ascending = surprisal descending
  for (const auto& s : samples) groups[s.mean_logprob].push_back(s);
  std::vector<ScoredSample> taken;  // the whole groups taken
  double taken_best = 0;  // best gated speedup among them
  bool taken_fast = false;
  int left = m;
  Selection sel;
  for (auto& [lp, group] : groups) {
    if (left <= 0) break;
    const int g = static_cast<int>(group.size());
    if (g <= left) {
      for (const auto& s : group) {
        taken_best = std::max(taken_best, gated(s));
        taken_fast = taken_fast || s.fast();
        taken.push_back(s);
      }
      left -= g;
      continue;
    }
    // r of g drawn at random: E[max(taken_best, max of the r drawn)] over the C(g, r) subsets.
    const int r = left;
    std::vector<double> v;
    for (const auto& s : group) v.push_back(gated(s));
    std::sort(v.begin(), v.end());
    const double taken_sig = sig_rate_at(taken, taken_best);
    std::vector<ScoredSample> pooled = taken;
    pooled.insert(pooled.end(), group.begin(), group.end());
    // P(the max of the draw is v[i]) = C(i, r-1) / C(g, r) for ascending v (index from 0).
    double expected = 0, p_fast = 0, p_sig = 0;
    double w = static_cast<double>(r) / g;  // weight of the largest: C(g-1, r-1)/C(g, r)
    for (int i = g - 1; i >= r - 1; --i) {
      const double x = v[static_cast<size_t>(i)];
      expected += w * std::max(taken_best, x);
      p_fast += w * ((taken_fast || x > 1.0) ? 1.0 : 0.0);
      p_sig += w * (x > taken_best ? sig_rate_at(group, x) : x < taken_best ? taken_sig : sig_rate_at(pooled, x));
      if (i > 0) w = w * (i - (r - 1)) / i;
    }
    sel.speedup = expected;
    sel.fast = p_fast;
    sel.sig_fast = p_sig;
    sel.evaluations = m;
    return sel;
  }
  sel.speedup = taken_best;
  sel.fast = taken_fast ? 1.0 : 0.0;
  sel.sig_fast = sig_rate_at(taken, taken_best);
  sel.evaluations = m - std::max(left, 0);
  return sel;
}

}  // namespace

std::string_view to_string(SelectionStrategy s) { return enum_name(s); }

const std::vector<SelectionStrategy>& all_selection_strategies() {
  static const std::vector<SelectionStrategy> all = {
      SelectionStrategy::oracle, SelectionStrategy::surprisal_top3, SelectionStrategy::surprisal,
      SelectionStrategy::random_correct, SelectionStrategy::confidence};
  return all;
}

Selection select_sample(const std::vector<ScoredSample>& samples, SelectionStrategy strategy) {
  const std::vector<ScoredSample> correct = correct_only(samples);
  Selection sel;
  sel.evaluations = static_cast<int>(samples.size());  // correctness of every sample is known
  if (correct.empty()) return sel;
  switch (strategy) {
    case SelectionStrategy::oracle:
      sel.timed = static_cast<int>(correct.size());
      for (const auto& s : correct) {
        sel.speedup = std::max(sel.speedup, s.speedup);
        sel.fast = std::max(sel.fast, s.fast() ? 1.0 : 0.0);
      }
      sel.sig_fast = sig_rate_at(correct, sel.speedup);  // the fastest one's, not any one's
      break;
    case SelectionStrategy::random_correct:
      for (const auto& s : correct) {
        sel.fast += s.fast();
        sel.sig_fast += s.significantly_fast();
        sel.speedup += s.speedup;
      }
      sel.fast /= static_cast<double>(correct.size());
      sel.sig_fast /= static_cast<double>(correct.size());
      sel.speedup /= static_cast<double>(correct.size());
      break;
    case SelectionStrategy::confidence: {
      const Selection p = pick_extreme(correct, true);
      sel.fast = p.fast;
      sel.sig_fast = p.sig_fast;
      sel.speedup = p.speedup;
      break;
    }
    case SelectionStrategy::surprisal: {
      const Selection p = pick_extreme(correct, false);
      sel.fast = p.fast;
      sel.sig_fast = p.sig_fast;
      sel.speedup = p.speedup;
      break;
    }
    case SelectionStrategy::surprisal_top3: {
      sel.timed = std::min(3, static_cast<int>(correct.size()));
      const Selection p = best_of_top(correct, 3);
      sel.fast = p.fast;
      sel.sig_fast = p.sig_fast;
      sel.speedup = p.speedup;
      break;
    }
  }
  return sel;
}

Selection select_top_surprisal_evaluated(const std::vector<ScoredSample>& samples, int m) {
  KBRL_CHECK_INPUT(m >= 1, "top-m selection: m {} must be >= 1", m);
  return best_of_top(samples, std::min<int>(m, static_cast<int>(samples.size())));
}

Selection best_of_random_k(const std::vector<ScoredSample>& samples, int k) {
  KBRL_CHECK_INPUT(k >= 1 && k <= static_cast<int>(samples.size()),
                   "best-of-k selection: k {} must be in [1, {}] (the samples)", k, samples.size());
  std::vector<ScoredSample> one_group = samples;  // one surprisal for all: the k are a random draw
  for (ScoredSample& s : one_group) s.mean_logprob = 0.0;
  return best_of_top(std::move(one_group), k);
}

}  // namespace kbrl
