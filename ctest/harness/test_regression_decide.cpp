// The per-kernel decision of the regression checks (harness/regression.h): outcomes, precision
// findings, and timing beyond the threshold and the noise.
#include <gtest/gtest.h>

#include <ctest/text_testing.h>
#include <harness/regression.h>
#include "regression_testing.h"

namespace kbrl {
namespace {

using kbrl::testing::contains;
using kbrl::testing::decide_one;
using kbrl::testing::timed;
using kbrl::testing::with_outcome;

// --- decide: outcomes ---

TEST(RegressionDecide, LeavingOkIsARegression) {
  EvalRecord now = with_outcome(Outcome::wrong_answer);
  now.outcome_detail = "max abs error 3.5";
  const KernelVerdict v = decide_one(timed(1.0, 0.98, 1.02), now);
  EXPECT_EQ(v.verdict, Verdict::regression) << v.detail;
  EXPECT_TRUE(contains(v.detail, "ok -> wrong_answer"));
  EXPECT_TRUE(contains(v.detail, "max abs error 3.5"));
  EXPECT_EQ(v.name, "k.cu");
  EXPECT_EQ(v.task_id, 19);
  ASSERT_TRUE(v.baseline.has_value());
  EXPECT_EQ(v.baseline->outcome, Outcome::ok);
  EXPECT_EQ(v.now.outcome, Outcome::wrong_answer);
}

TEST(RegressionDecide, CompileOnlyKernelThatStopsCompilingIsARegression) {
  const KernelVerdict v =
      decide_one(with_outcome(Outcome::not_run, true), with_outcome(Outcome::compile_error, false));
  EXPECT_EQ(v.verdict, Verdict::regression) << v.detail;
  EXPECT_TRUE(contains(v.detail, "not_run -> compile_error"));
}

TEST(RegressionDecide, CompileOnlyKernelStillCompilingIsUnchanged) {
  const KernelVerdict v = decide_one(with_outcome(Outcome::not_run, true), with_outcome(Outcome::not_run, true));
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_TRUE(contains(v.detail, "compiles"));
}

TEST(RegressionDecide, BecomingOkIsAnImprovement) {
  const KernelVerdict v = decide_one(with_outcome(Outcome::compile_error, false), timed(1.0, 0.98, 1.02));
  EXPECT_EQ(v.verdict, Verdict::improvement) << v.detail;
  EXPECT_TRUE(contains(v.detail, "compile_error -> ok"));
}

TEST(RegressionDecide, StillFailingIsUnchanged) {
  const KernelVerdict v =
      decide_one(with_outcome(Outcome::compile_error, false), with_outcome(Outcome::wrong_answer));
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_TRUE(contains(v.detail, "still wrong_answer"));
}

TEST(RegressionDecide, ANewPrecisionFindingIsARegressionAnExistingOneIsNot) {
  EvalRecord was = timed(1.0, 0.98, 1.02);
  was.compile.precision_findings = {"fast-math: __expf"};
  const KernelVerdict kept = decide_one(was, was);
  EXPECT_EQ(kept.verdict, Verdict::unchanged) << kept.detail;

  EvalRecord added = was;
  added.compile.precision_findings = {"fast-math: __expf", "half accumulation: __hadd"};
  const KernelVerdict v = decide_one(was, added);
  EXPECT_EQ(v.verdict, Verdict::regression) << v.detail;
  EXPECT_TRUE(contains(v.detail, "new precision finding: half accumulation: __hadd"));
  EXPECT_FALSE(contains(v.detail, "__expf"));
}

// --- decide: speedups ---

TEST(RegressionDecide, SlowerBeyondThresholdAndNoiseIsARegression) {
  const KernelVerdict v = decide_one(timed(1.00, 0.98, 1.02, 2.0), timed(0.90, 0.88, 0.92, 2.2), 0.05);
  EXPECT_EQ(v.verdict, Verdict::regression) << v.detail;
  EXPECT_TRUE(contains(v.detail, "slower: 2 ms -> 2.2 ms (+10.0%), speedup 1.000x [0.980, 1.020] -> 0.900x")) << v.detail;
}

TEST(RegressionDecide, SlowerWithOverlappingSpeedupIntervalsIsInconclusive) {
  // A GPU clocked lower in this run: the kernel's time moved, the paired speedup did not.
  const KernelVerdict v = decide_one(timed(1.00, 0.98, 1.02, 2.0), timed(0.99, 0.97, 1.01, 2.2), 0.05);
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_TRUE(contains(v.detail, "inconclusive"));
  EXPECT_TRUE(contains(v.detail, "+10.0%"));
}

TEST(RegressionDecide, SlowerWithOverlappingQuartilesIsInconclusive) {
  // A kernel whose times spread 20% either side: its median moved 10%, inside its own spread.
  const KernelVerdict v = decide_one(timed(1.00, 0.98, 1.02, 2.0, 0.2), timed(0.90, 0.88, 0.92, 2.2, 0.2), 0.05);
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_TRUE(contains(v.detail, "inconclusive"));
}

TEST(RegressionDecide, ASpeedupThatFellWhileTheKernelsTimeDidNotIsUnchanged) {
  // The reference got faster between the runs (as torch's GEMM did on an H100): intervals apart,
  // the kernel's own time unchanged.
  const KernelVerdict v = decide_one(timed(0.875, 0.864, 0.882, 3.144, 0.001), timed(0.843, 0.840, 0.857, 3.145, 0.001));
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_FALSE(contains(v.detail, "inconclusive"));
  EXPECT_TRUE(contains(v.detail, "+0.0%")) << v.detail;
}

TEST(RegressionDecide, ASmallSignificantMoveInsideTheThresholdIsUnchanged) {
  const KernelVerdict v = decide_one(timed(1.00, 0.99, 1.01, 1.0, 0.001), timed(0.97, 0.96, 0.98, 1.03, 0.001), 0.05);
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_FALSE(contains(v.detail, "inconclusive"));
  EXPECT_TRUE(contains(v.detail, "+3.0%"));
  // The same move with a threshold below it is a regression.
  EXPECT_EQ(decide_one(timed(1.00, 0.99, 1.01, 1.0, 0.001), timed(0.97, 0.96, 0.98, 1.03, 0.001), 0.02).verdict,
            Verdict::regression);
}

TEST(RegressionDecide, TheDefaultThresholdFlagsAFivePercentSlowerKernel) {
  EXPECT_EQ(decide_one(timed(1.00, 0.99, 1.01, 1.0, 0.001), timed(0.952, 0.94, 0.96, 1.05, 0.001)).verdict,
            Verdict::regression);
  EXPECT_EQ(decide_one(timed(1.00, 0.99, 1.01, 1.0, 0.001), timed(0.98, 0.97, 0.985, 1.02, 0.001)).verdict,
            Verdict::unchanged);
}

TEST(RegressionDecide, FasterBeyondThresholdAndNoiseIsAnImprovement) {
  const KernelVerdict v = decide_one(timed(1.00, 0.98, 1.02, 2.2), timed(1.10, 1.08, 1.12, 2.0), 0.05);
  EXPECT_EQ(v.verdict, Verdict::improvement) << v.detail;
  EXPECT_TRUE(contains(v.detail, "faster"));
  EXPECT_TRUE(contains(v.detail, "-9.1%")) << v.detail;
}

TEST(RegressionDecide, ARecordWithoutTimesIsNotCompared) {
  EvalRecord now = timed(0.5, 0.49, 0.51);
  now.runtime.reset();
  const KernelVerdict v = decide_one(timed(1.0, 0.98, 1.02), now);
  EXPECT_EQ(v.verdict, Verdict::unchanged) << v.detail;
  EXPECT_TRUE(contains(v.detail, "no interval to compare"));
}

TEST(RegressionDecide, NoBaselineIsANewKernel) {
  const KernelVerdict v = decide("k.cu", std::nullopt, timed(1.0, 0.98, 1.02), 0.05);
  EXPECT_EQ(v.verdict, Verdict::new_kernel);
  EXPECT_FALSE(v.baseline.has_value());
  EXPECT_TRUE(contains(v.detail, "not in the baseline"));
  EXPECT_EQ(to_string(Verdict::new_kernel), "new");
}

}  // namespace
}  // namespace kbrl
