// Runtime statistics against hand-computed values, and the adaptive stopping rule.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>
#include <kbrl/error.h>

#include <harness/stats.h>

namespace kbrl {
namespace {

using namespace std::chrono_literals;

TEST(Summarize, OddCount) {
  const RuntimeStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3.0);
  EXPECT_DOUBLE_EQ(s.std_ms, std::sqrt(10.0 / 4.0));  // sample std: squares 4+1+0+1+4 over n-1
  EXPECT_DOUBLE_EQ(s.min_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.max_ms, 5.0);
  EXPECT_DOUBLE_EQ(s.q1_ms, 2.0);  // h = 4 * 0.25 = 1
  EXPECT_DOUBLE_EQ(s.q3_ms, 4.0);  // h = 3
  EXPECT_DOUBLE_EQ(s.iqr_ms, 2.0);
  EXPECT_DOUBLE_EQ(relative_std(s), std::sqrt(2.5) / 3.0);
}

TEST(Summarize, EvenCountInterpolates) {
  const RuntimeStats s = summarize({4, 3, 2, 1});
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);  // h = 1.5
  EXPECT_DOUBLE_EQ(s.q1_ms, 1.75);     // h = 0.75: 1 + 0.75 * (2 - 1)
  EXPECT_DOUBLE_EQ(s.q3_ms, 3.25);     // h = 2.25: 3 + 0.25 * (4 - 3)
  EXPECT_DOUBLE_EQ(s.iqr_ms, 1.5);
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
  EXPECT_DOUBLE_EQ(s.std_ms, std::sqrt(5.0 / 3.0));

  const RuntimeStats two = summarize({10, 20});
  EXPECT_DOUBLE_EQ(two.median_ms, 15.0);
  EXPECT_DOUBLE_EQ(two.q1_ms, 12.5);
  EXPECT_DOUBLE_EQ(two.q3_ms, 17.5);
}

TEST(Summarize, OutlierMovesTheMeanNotTheMedian) {
  const RuntimeStats s = summarize({1.0, 1.1, 0.9, 1.0, 100.0});
  EXPECT_DOUBLE_EQ(s.median_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.mean_ms, 104.0 / 5.0);
  EXPECT_DOUBLE_EQ(s.q1_ms, 1.0);
  EXPECT_DOUBLE_EQ(s.q3_ms, 1.1);
}

TEST(Summarize, SingleSample) {
  const RuntimeStats s = summarize({7.0});
  EXPECT_EQ(s.n, 1);
  EXPECT_EQ(s.median_ms, 7.0);
  EXPECT_EQ(s.q1_ms, 7.0);
  EXPECT_EQ(s.q3_ms, 7.0);
  EXPECT_EQ(s.std_ms, 0.0);
  EXPECT_EQ(s.iqr_ms, 0.0);
  EXPECT_EQ(relative_std(s), 0.0);
}

TEST(Summarize, RejectsWhatTimingNeverProduces) {
  EXPECT_THROW(summarize({}), InputError);
  EXPECT_THROW(summarize({1.0, -0.5}), InputError);
  EXPECT_THROW(summarize({1.0, std::numeric_limits<double>::quiet_NaN()}), InputError);
  EXPECT_THROW(summarize({std::numeric_limits<double>::infinity()}), InputError);
}

TEST(TimingMode, NamesRoundTrip) {
  for (TimingMode m : {TimingMode::fast, TimingMode::full, TimingMode::adaptive})
    EXPECT_EQ(parse_timing_mode(to_string(m)), m);
  EXPECT_EQ(to_string(TimingMode::full), "full");
  EXPECT_THROW(parse_timing_mode("slow"), InputError);
}

TEST(TimingMode, FixedModesTakeExactlyTheirCount) {
  for (auto [mode, count] : {std::pair{TimingMode::fast, 5}, std::pair{TimingMode::full, 50}}) {
    AdaptiveStop stop(stop_config(mode));
    for (int i = 1; i < count; ++i) EXPECT_FALSE(stop.add(1.0)) << i;  // constant: no early stop
    EXPECT_TRUE(stop.add(1.0));
    EXPECT_EQ(stop.reason(), StopReason::max_samples);
    EXPECT_EQ(stop.samples().size(), static_cast<size_t>(count));
  }
  EXPECT_EQ(stop_config(TimingMode::adaptive), AdaptiveStopConfig{});
}

TEST(AdaptiveStop, QuietSamplesConvergeAtTheMinimumCount) {
  AdaptiveStop stop;
  for (int i = 1; i < 10; ++i) EXPECT_FALSE(stop.add(2.0 + 1e-4 * (i % 2)));
  EXPECT_TRUE(stop.add(2.0));
  EXPECT_EQ(stop.reason(), StopReason::converged);
  EXPECT_LT(stop.current_rel_std(), 0.005);
  EXPECT_THROW(stop.add(2.0), InputError);  // stopped means stopped
}

TEST(AdaptiveStop, NoisySamplesStopAtTheMaximum) {
  AdaptiveStop stop;
  int n = 0;
  while (!stop.add(n % 2 ? 1.0 : 2.0)) ++n;
  EXPECT_EQ(stop.samples().size(), 200u);
  EXPECT_EQ(stop.reason(), StopReason::max_samples);
}

TEST(AdaptiveStop, WindowForgetsAnEarlyNoisyPhase) {
  // 20 noisy samples, then a constant 1.5. Over a window of 10, noise is 0 once the last 10 are
  // constant (sample 30); over all samples it stays above 10% up to the maximum.
  const auto feed = [](AdaptiveStop& stop) {
    for (int i = 0; !stop.done(); ++i) stop.add(i < 20 ? (i % 2 ? 1.0 : 2.0) : 1.5);
  };
  AdaptiveStopConfig windowed;
  windowed.window = 10;
  AdaptiveStop with_window(windowed);
  feed(with_window);
  EXPECT_EQ(with_window.reason(), StopReason::converged);
  EXPECT_EQ(with_window.samples().size(), 30u);
  AdaptiveStop all_samples;
  feed(all_samples);
  EXPECT_EQ(all_samples.reason(), StopReason::max_samples);
  EXPECT_GT(all_samples.current_rel_std(), 0.1);
}

TEST(AdaptiveStop, TimeBudgetStopsEvenBeforeTheMinimum) {
  auto now = std::chrono::steady_clock::time_point{};
  AdaptiveStopConfig config;
  config.time_budget = 5s;
  AdaptiveStop stop(config, [&now] { return now; });
  for (int i = 1; i <= 4; ++i) {
    now += 1s;
    EXPECT_FALSE(stop.add(i % 2 ? 1.0 : 2.0));
  }
  now += 1s;
  EXPECT_TRUE(stop.add(1.0));
  EXPECT_EQ(stop.reason(), StopReason::time_budget);
  EXPECT_EQ(stop.samples().size(), 5u);
}

TEST(AdaptiveStop, RejectsBadSettingsAndSamples) {
  AdaptiveStopConfig bad;
  bad.min_samples = 300;  // above max_samples
  EXPECT_THROW(AdaptiveStop{bad}, InputError);
  bad = {};
  bad.window = 1;
  EXPECT_THROW(AdaptiveStop{bad}, InputError);
  AdaptiveStop stop;
  EXPECT_THROW(stop.add(-1.0), InputError);
  EXPECT_TRUE(stop.samples().empty());
}

TEST(PairedSpeedupInterval, IdenticalRatiosGiveAPointIntervalWithoutAResolution) {
  const auto ci = paired_speedup_interval({2.0, 4.0, 3.0}, {1.0, 2.0, 1.5}, 0.0);
  EXPECT_NEAR(ci.low, 2.0, 1e-12);
  EXPECT_NEAR(ci.high, 2.0, 1e-12);
}

TEST(PairedSpeedupInterval, NeverNarrowerThanTheResolution) {
  const auto ci = paired_speedup_interval({2.0, 4.0, 3.0}, {1.0, 2.0, 1.5});
  EXPECT_NEAR(ci.low, 2.0 / 1.01, 1e-12);
  EXPECT_NEAR(ci.high, 2.0 * 1.01, 1e-12);
  // A candidate 0.5% faster with very quiet samples is not significantly faster than the reference.
  const auto parity = paired_speedup_interval({1.005, 1.005, 1.005, 1.005, 1.005}, {1.0, 1.0, 1.0, 1.0, 1.0});
  EXPECT_LT(parity.low, 1.0);
  EXPECT_THROW(paired_speedup_interval({1.0, 1.0}, {1.0, 1.0}, -0.1), InputError);
}

TEST(PairedSpeedupInterval, MatchesTheTIntervalOfTheLogRatios) {
  // log ratios: log(1.1), log(0.9), log(1.0), log(1.05), log(0.95)
  const std::vector<double> ref{1.1, 0.9, 1.0, 1.05, 0.95}, cand(5, 1.0);  // wider than 1%
  double m = 0, ss = 0;
  for (double r : ref) m += std::log(r) / 5;
  for (double r : ref) ss += (std::log(r) - m) * (std::log(r) - m);
  const double half = 2.7764 * std::sqrt(ss / 4) / std::sqrt(5.0);
  const auto ci = paired_speedup_interval(ref, cand);
  EXPECT_NEAR(ci.low, std::exp(m - half), 1e-9);
  EXPECT_NEAR(ci.high, std::exp(m + half), 1e-9);
  EXPECT_LT(ci.low, 1.0);
  EXPECT_GT(ci.high, 1.0);
}

TEST(PairedSpeedupInterval, CommonDriftCancels) {
  // Both sides slow down together by 50% half-way through: the ratio stays 2, so the interval is tight.
  const std::vector<double> ref{2.0, 2.0, 3.0, 3.0}, cand{1.0, 1.0, 1.5, 1.5};
  const auto ci = paired_speedup_interval(ref, cand, 0.0);
  EXPECT_NEAR(ci.low, 2.0, 1e-12);
  EXPECT_NEAR(ci.high, 2.0, 1e-12);
}

TEST(PairedSpeedupInterval, RejectsWhatCannotBePaired) {
  EXPECT_THROW(paired_speedup_interval({1.0}, {1.0}), InputError);
  EXPECT_THROW(paired_speedup_interval({1.0, 2.0}, {1.0}), InputError);
  EXPECT_THROW(paired_speedup_interval({1.0, 0.0}, {1.0, 1.0}), InputError);
}

TEST(StudentT, TableAndExpansionAgreeWhereTheyMeet) {
  EXPECT_NEAR(student_t_975(4), 2.7764, 1e-4);
  EXPECT_NEAR(student_t_975(31), 2.0395, 2e-4);
  EXPECT_NEAR(student_t_975(100), 1.9840, 2e-4);
  EXPECT_NEAR(student_t_975(1000000), 1.96, 1e-3);
  EXPECT_THROW(student_t_975(0), InputError);
}

}  // namespace
}  // namespace kbrl
