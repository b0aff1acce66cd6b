// Selection strategies (experiments/selection.h) on hand-built sample sets whose expected picks
// are worked out in the comments, and the correlation p-value against t-table values.
#include <algorithm>

#include <gtest/gtest.h>

#include <experiments/rank_statistics.h>
#include <experiments/selection.h>
#include <experiments/statistics.h>
#include <kbrl/error.h>

namespace kbrl {
namespace {

ScoredSample s(bool correct, double speedup, double mean_logprob) {
  return {correct, correct ? speedup : 0.0, mean_logprob};
}

// A task with five samples: the most confident correct one is slow, the most surprising correct
// one is fast, one failure is the most surprising of all.
const std::vector<ScoredSample> kTask = {
    s(true, 0.8, -0.1),   // most confident correct
    s(true, 1.5, -0.5),
    s(true, 3.0, -2.0),   // highest-surprisal correct
    s(true, 0.9, -1.0),
    s(false, 0.0, -3.0),  // highest surprisal overall, wrong
};

TEST(Selection, StrategiesPickWhatTheyPromise) {
  auto pick = [](SelectionStrategy st) { return select_sample(kTask, st); };
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::oracle).speedup, 3.0);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::oracle).fast, 1.0);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::confidence).speedup, 0.8);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::confidence).fast, 0.0);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::surprisal).speedup, 3.0);
  // random correct: the mean over the 4 correct samples: (0.8 + 1.5 + 3.0 + 0.9) / 4, fast 2/4.
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::random_correct).speedup, 6.2 / 4);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::random_correct).fast, 0.5);
  // top-3 surprisal among correct: -2.0, -1.0, -0.5 -> best 3.0.
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::surprisal_top3).speedup, 3.0);
  // No correct sample: nothing fast, no speedup.
  const Selection none = select_sample({s(false, 0, -1), s(false, 0, -2)}, SelectionStrategy::oracle);
  EXPECT_EQ(none.fast, 0.0);
  EXPECT_EQ(none.speedup, 0.0);
}

TEST(Selection, TiesAreAveraged) {
  // Two correct samples share the highest surprisal: the pick is either, with probability 1/2.
  const std::vector<ScoredSample> tied = {s(true, 2.0, -1.0), s(true, 0.5, -1.0), s(true, 4.0, -0.2)};
  const Selection p = select_sample(tied, SelectionStrategy::surprisal);
  EXPECT_DOUBLE_EQ(p.speedup, 1.25);
  EXPECT_DOUBLE_EQ(p.fast, 0.5);
}

TEST(Selection, TopMBySurprisalBeforeEvaluation) {
  // Ranked by surprisal over ALL samples: wrong(-3.0), 3.0(-2.0), 0.9(-1.0), 1.5(-0.5), 0.8(-0.1).
  EXPECT_DOUBLE_EQ(select_top_surprisal_evaluated(kTask, 1).speedup, 0.0);  // only the failure
  EXPECT_DOUBLE_EQ(select_top_surprisal_evaluated(kTask, 2).speedup, 3.0);
  EXPECT_EQ(select_top_surprisal_evaluated(kTask, 2).evaluations, 2);
  EXPECT_DOUBLE_EQ(select_top_surprisal_evaluated(kTask, 99).speedup, 3.0);
  // A tie straddling m: three samples at one surprisal (speedups 0, 2, 4; 0 = wrong), m = 1:
  // a random one of the three is evaluated: E[speedup] = (0 + 2 + 4) / 3, P(fast) = 2/3.
  const std::vector<ScoredSample> tied = {s(false, 0, -1), s(true, 2, -1), s(true, 4, -1), s(true, 9, -0.1)};
  const Selection one = select_top_surprisal_evaluated(tied, 1);
  EXPECT_DOUBLE_EQ(one.speedup, 2.0);
  EXPECT_NEAR(one.fast, 2.0 / 3, 1e-12);
  // m = 2 of the three: the best of a random pair: pairs {0,2}->2, {0,4}->4, {2,4}->4: mean 10/3.
  EXPECT_NEAR(select_top_surprisal_evaluated(tied, 2).speedup, 10.0 / 3, 1e-12);
  EXPECT_THROW(select_top_surprisal_evaluated(tied, 0), InputError);
}

/// A correct sample with the lower end of its speedup's interval.
ScoredSample timed(double speedup, double low, double mean_logprob) { return {true, speedup, mean_logprob, low}; }

TEST(Selection, SignificantlyFastIsThePicksOwn) {
  // The fastest correct sample's interval holds 1; the second fastest's does not.
  const std::vector<ScoredSample> task = {timed(3.0, 0.9, -1.0), timed(2.0, 1.5, -2.0), s(false, 0, -3.0)};
  auto pick = [&](SelectionStrategy st) { return select_sample(task, st); };
  // The oracle picks by speedup (3.0): fast, not significantly; it does not go looking for the
  // significant one.
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::oracle).speedup, 3.0);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::oracle).fast, 1.0);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::oracle).sig_fast, 0.0);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::confidence).sig_fast, 0.0);  // picks 3.0 (-1.0)
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::surprisal).sig_fast, 1.0);   // picks 2.0 (-2.0)
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::random_correct).sig_fast, 0.5);
  EXPECT_DOUBLE_EQ(pick(SelectionStrategy::surprisal_top3).sig_fast, 0.0);  // best of both: 3.0
  // Without intervals nothing is significant; ties in speedup at the top are averaged.
  EXPECT_DOUBLE_EQ(select_sample(kTask, SelectionStrategy::oracle).sig_fast, 0.0);
  const std::vector<ScoredSample> tied = {timed(2.0, 1.2, -1.0), timed(2.0, 0.9, -2.0), timed(1.5, 1.2, -3.0)};
  EXPECT_DOUBLE_EQ(select_sample(tied, SelectionStrategy::oracle).sig_fast, 0.5);
  // Top-m with a tie straddling m: speedups 0 (wrong), 2 (significant), 4 (not) at one surprisal.
  // m = 1: a random one of the three: 1/3. m = 2: the best of a random pair: {0,2} -> 2 (yes),
  // {0,4} -> 4 (no), {2,4} -> 4 (no): 1/3.
  const std::vector<ScoredSample> straddle = {s(false, 0, -1), timed(2, 1.5, -1), timed(4, 0.8, -1), timed(9, 5, -0.1)};
  EXPECT_NEAR(select_top_surprisal_evaluated(straddle, 1).sig_fast, 1.0 / 3, 1e-12);
  EXPECT_NEAR(select_top_surprisal_evaluated(straddle, 2).sig_fast, 1.0 / 3, 1e-12);
  EXPECT_DOUBLE_EQ(select_top_surprisal_evaluated(straddle, 4).sig_fast, 1.0);  // all: 9 is picked
}

/// Best-of-k by enumeration: every k-subset, the pick its best gated speedup (ties averaged).
Selection brute_best_of_k(const std::vector<ScoredSample>& samples, int k) {
  const int n = static_cast<int>(samples.size());
  Selection sum;
  int subsets = 0;
  for (unsigned mask = 0; mask < (1u << n); ++mask) {
    if (__builtin_popcount(mask) != k) continue;
    ++subsets;
    double best = 0;
    for (int i = 0; i < n; ++i)
      if (mask & (1u << i)) best = std::max(best, samples[i].correct ? samples[i].speedup : 0.0);
    int at = 0;
    double fast = 0, sig = 0;
    for (int i = 0; i < n; ++i)
      if ((mask & (1u << i)) && (samples[i].correct ? samples[i].speedup : 0.0) == best) {
        ++at;
        fast += samples[i].fast();
        sig += samples[i].significantly_fast();
      }
    sum.speedup += best;
    sum.fast += fast / at;
    sum.sig_fast += sig / at;
  }
  sum.speedup /= subsets;
  sum.fast /= subsets;
  sum.sig_fast /= subsets;
  return sum;
}

TEST(Selection, BestOfRandomKMatchesEnumeration) {
  // Distinct speedups, some significant and some not, two wrong; then copies of one kernel (equal
  // speedup and interval), where the tie-averaging is exact too.
  const std::vector<std::vector<ScoredSample>> sets = {
      {timed(1.4, 0.95, -1), timed(1.2, 1.05, -2), s(false, 0, -1), timed(0.7, 0.6, -1), timed(2.5, 2.0, -3),
       timed(3.1, 0.99, -1), s(false, 0, -2), timed(1.05, 1.01, -1)},
      {timed(1.4, 1.2, -1), timed(1.4, 1.2, -1), timed(1.8, 0.9, -1), timed(1.8, 0.9, -1), s(false, 0, -1)},
  };
  for (const auto& set : sets) {
    const int n = static_cast<int>(set.size());
    int64_t fast = 0;
    std::vector<double> gated;
    for (const auto& x : set) {
      fast += x.fast();
      gated.push_back(x.correct ? x.speedup : 0.0);
    }
    for (int k = 1; k <= n; ++k) {
      SCOPED_TRACE(k);
      const Selection got = best_of_random_k(set, k), want = brute_best_of_k(set, k);
      EXPECT_NEAR(got.sig_fast, want.sig_fast, 1e-12);
      EXPECT_NEAR(got.fast, want.fast, 1e-12);
      EXPECT_NEAR(got.speedup, want.speedup, 1e-12);
      EXPECT_NEAR(got.fast, stats::pass_at_k(n, fast, k), 1e-12);
      EXPECT_NEAR(got.speedup, stats::expected_best_of_k(gated, k), 1e-12);
      EXPECT_EQ(got.evaluations, k);
    }
  }
  EXPECT_THROW(best_of_random_k(sets[1], 0), InputError);
  EXPECT_THROW(best_of_random_k(sets[1], 6), InputError);
}

TEST(CorrelationPValue, MatchesTheTTable) {
  // Student t critical values (Abramowitz & Stegun Table 26.10): t_{0.975, 18} = 2.100922 and
  // t_{0.995, 10} = 3.169273. r = t / sqrt(t^2 + df) has two-sided p = 0.05 and 0.01.
  const double r18 = 2.100922 / std::sqrt(2.100922 * 2.100922 + 18);
  EXPECT_NEAR(stats::correlation_p_value(r18, 20), 0.05, 1e-5);
  const double r10 = 3.169273 / std::sqrt(3.169273 * 3.169273 + 10);
  EXPECT_NEAR(stats::correlation_p_value(-r10, 12), 0.01, 1e-5);
  EXPECT_DOUBLE_EQ(stats::correlation_p_value(0.0, 50), 1.0);
  EXPECT_EQ(stats::correlation_p_value(1.0, 5), 0.0);
  EXPECT_THROW(stats::correlation_p_value(0.5, 2), InputError);
  // I_x(a, b) identities: I_x(1, 1) = x, I_x(a, 1) = x^a, I_0.5(a, a) = 1/2.
  EXPECT_NEAR(stats::regularized_incomplete_beta(0.3, 1, 1), 0.3, 1e-12);
  EXPECT_NEAR(stats::regularized_incomplete_beta(0.6, 3, 1), 0.216, 1e-12);
  EXPECT_NEAR(stats::regularized_incomplete_beta(0.5, 7.5, 7.5), 0.5, 1e-12);
}

}  // namespace
}  // namespace kbrl
