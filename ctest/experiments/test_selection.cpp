// Selection strategies (experiments/selection.h) on hand-built sample sets whose expected picks
// are worked out in the comments, and the correlation p-value against t-table values.
#include <gtest/gtest.h>

#include <experiments/rank_statistics.h>
#include <experiments/selection.h>
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
