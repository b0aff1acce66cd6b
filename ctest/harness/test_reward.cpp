// Reward kinds, gates (correctness, speed of light, precision), and KernelBench's fast_p.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <kbrl/error.h>

#include <harness/reward.h>

namespace kbrl {
namespace {

using Flags = std::vector<std::string>;

// A compiled, correct candidate timed at `candidate_ms` against a 2 ms reference.
RewardInput timed(double candidate_ms, double reference_ms = 2.0) {
  RewardInput in;
  in.task_id = 7;
  in.compiled = true;
  in.correct = true;
  in.reference_ms = reference_ms;
  in.candidate_ms = candidate_ms;
  return in;
}

RewardConfig kind(RewardKind k) {
  RewardConfig config;
  config.kind = k;
  return config;
}

TEST(Speedup, IsReferenceOverCandidateGatedByCorrectness) {
  EXPECT_DOUBLE_EQ(measured_speedup(2.0, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(measured_speedup(1.0, 4.0), 0.25);
  EXPECT_EQ(measured_speedup(0.0, 1.0), 0.0);
  EXPECT_EQ(measured_speedup(1.0, 0.0), 0.0);

  const RewardResult fast = compute_reward(timed(1.0), {});
  EXPECT_DOUBLE_EQ(fast.speedup, 2.0);
  EXPECT_DOUBLE_EQ(fast.reward, 2.0);
  EXPECT_TRUE(fast.accepted);
  EXPECT_EQ(fast.flags, Flags{});

  RewardInput wrong = timed(1.0);
  wrong.correct = false;
  const RewardResult gated = compute_reward(wrong, {});
  EXPECT_EQ(gated.speedup, 0.0);
  EXPECT_EQ(gated.reward, 0.0);
  EXPECT_FALSE(gated.accepted);

  RewardInput not_compiled = timed(1.0);
  not_compiled.compiled = false;  // correct without compiling cannot count
  EXPECT_EQ(compute_reward(not_compiled, {}).reward, 0.0);
}

TEST(Composite, FollowsTheGrpoReportsFormula) {
  const RewardConfig config = kind(RewardKind::composite);  // alpha .5, beta 1, gamma .5, r_max 3
  RewardInput in = timed(1.0);
  EXPECT_DOUBLE_EQ(compute_reward(in, config).reward, 0.5 + 1.0 + 0.5 * 2.0);
  in = timed(0.4);  // speedup 5, capped at r_max = 3
  EXPECT_DOUBLE_EQ(compute_reward(in, config).reward, 0.5 + 1.0 + 0.5 * 3.0);
  in.correct = false;  // compiled only
  EXPECT_DOUBLE_EQ(compute_reward(in, config).reward, 0.5);
  in.compiled = false;
  EXPECT_DOUBLE_EQ(compute_reward(in, config).reward, 0.0);

  RewardConfig custom = config;
  custom.alpha = 0.1;
  custom.beta = 0.2;
  custom.gamma = 1.0;
  custom.r_max = 10.0;
  EXPECT_DOUBLE_EQ(compute_reward(timed(0.5), custom).reward, 0.1 + 0.2 + 4.0);
}

TEST(Threshold, RewardsOneAboveTheThresholdOnly) {
  const RewardConfig config = parse_reward("threshold:1.5");
  EXPECT_EQ(compute_reward(timed(1.0), config).reward, 1.0);  // 2x
  EXPECT_EQ(compute_reward(timed(2.0 / 1.5), config).reward, 0.0);  // exactly 1.5x: not above
  EXPECT_EQ(compute_reward(timed(1.9), config).reward, 0.0);
  RewardInput wrong = timed(0.1);
  wrong.correct = false;
  EXPECT_EQ(compute_reward(wrong, config).reward, 0.0);
}

TEST(RewardSpec, ParsesEveryFormAndRoundTrips) {
  EXPECT_EQ(parse_reward("speedup").kind, RewardKind::speedup);
  EXPECT_EQ(parse_reward("normalized").kind, RewardKind::normalized);
  const RewardConfig bare = parse_reward("composite");
  EXPECT_EQ(bare, kind(RewardKind::composite));
  const RewardConfig custom = parse_reward("composite:0.2,1,0.25,4");
  EXPECT_EQ(custom.alpha, 0.2);
  EXPECT_EQ(custom.beta, 1.0);
  EXPECT_EQ(custom.gamma, 0.25);
  EXPECT_EQ(custom.r_max, 4.0);
  EXPECT_EQ(parse_reward("threshold:2").threshold, 2.0);
  // The spec of a default is the bare name (record keys of default rewards never change).
  for (const char* spec : {"speedup", "normalized", "composite", "composite:0.2,1,0.25,4", "threshold:1.5"})
    EXPECT_EQ(reward_spec(parse_reward(spec)), spec);
  EXPECT_EQ(reward_spec(parse_reward("composite:0.5,1,0.5,3")), "composite");
  // Gates and flags of the base config are kept; the kind's parameters are reset.
  RewardConfig base;
  base.precision = PrecisionPolicy::reject;
  base.alpha = 9;
  const RewardConfig kept = parse_reward("composite", base);
  EXPECT_EQ(kept.precision, PrecisionPolicy::reject);
  EXPECT_EQ(kept.alpha, 0.5);
  // Bad specs name the forms.
  for (const char* bad : {"fast", "composite:1,2,3", "composite:1,2,3,0", "composite:a,1,1,1", "composite:1,,1,1",
                          "threshold", "threshold:0", "threshold:-1", "threshold:1,2", "speedup:2", "normalized:1",
                          "threshold:1e999", ""}) {
    try {
      parse_reward(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("reward"), std::string::npos) << e.what();
    }
  }
}

TEST(Normalized, IsClippedLog2OfSpeedupOverTheTaskBaseline) {
  RewardConfig config = kind(RewardKind::normalized);  // L = 3
  const auto reward_at = [&](double speedup) {
    return compute_reward(timed(2.0 / speedup), config).reward;
  };
  EXPECT_DOUBLE_EQ(reward_at(1.0), 1.0);  // parity with the reference (no task baseline)
  EXPECT_DOUBLE_EQ(reward_at(2.0), 1.0 + 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(reward_at(0.5), 1.0 - 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(reward_at(8.0), 2.0);
  EXPECT_DOUBLE_EQ(reward_at(64.0), 2.0);    // clipped
  EXPECT_DOUBLE_EQ(reward_at(0.125), 0.0);
  EXPECT_DOUBLE_EQ(reward_at(0.01), 0.0);    // clipped
  config.task_baselines[7] = 2.0;            // this task's baseline speedup
  EXPECT_DOUBLE_EQ(reward_at(2.0), 1.0);
  EXPECT_DOUBLE_EQ(reward_at(4.0), 1.0 + 1.0 / 3.0);
  RewardInput wrong = timed(1.0);
  wrong.correct = false;
  EXPECT_EQ(compute_reward(wrong, config).reward, 0.0);
}

TEST(SpeedOfLight, FloorIsTheSlowerOfBandwidthAndCompute) {
  const DevicePeaks peaks{3e12, 60e12, 400e12};
  EXPECT_DOUBLE_EQ(floor_ms(0.0, 3e9, peaks, false), 1.0);      // 3 GB at 3 TB/s
  EXPECT_DOUBLE_EQ(floor_ms(1.2e11, 3e9, peaks, false), 2.0);   // 120 GFLOP at 60 TFLOP/s
  EXPECT_DOUBLE_EQ(floor_ms(1.2e11, 3e9, peaks, true), 1.0);    // tf32: 0.3 ms, memory wins
  EXPECT_DOUBLE_EQ(floor_ms(1.2e11, 0.0, {0, 60e12, 0}, true), 2.0);  // unknown tf32 -> fp32
  EXPECT_EQ(floor_ms(1e12, 1e12, DevicePeaks{}, false), 0.0);   // nothing known: no floor

  EXPECT_TRUE(is_impossible(0.85, 1.0, 0.10));
  EXPECT_FALSE(is_impossible(0.95, 1.0, 0.10));
  EXPECT_FALSE(is_impossible(0.85, 1.0));  // inside the default 20% margin
  EXPECT_TRUE(is_impossible(0.75, 1.0));
  EXPECT_FALSE(is_impossible(1e-9, 0.0));  // unknown floor
}

TEST(SpeedOfLight, ImpossibleCandidatesEarnNothing) {
  for (RewardKind k : {RewardKind::speedup, RewardKind::composite, RewardKind::normalized, RewardKind::threshold}) {
    SCOPED_TRACE(to_string(k));
    RewardInput in = timed(0.5);
    in.floor_ms = 1.0;
    const RewardResult r = compute_reward(in, kind(k));
    EXPECT_TRUE(r.impossible);
    EXPECT_FALSE(r.accepted);
    EXPECT_EQ(r.reward, 0.0);
    EXPECT_EQ(r.speedup, 0.0);
    EXPECT_EQ(r.flags, Flags{"impossible"});
    in.candidate_ms = 0.95;  // within the margin: fine
    EXPECT_FALSE(compute_reward(in, kind(k)).impossible);
    EXPECT_GT(compute_reward(in, kind(k)).reward, 0.0);
  }
}

TEST(Precision, PolicyDecidesBetweenNothingAFlagAndZero) {
  RewardInput in = timed(1.0);
  in.reduced_precision = true;
  RewardConfig config;
  config.precision = PrecisionPolicy::allow;
  EXPECT_EQ(compute_reward(in, config), (RewardResult{2.0, 2.0, true, false, {}}));
  config.precision = PrecisionPolicy::flag;
  EXPECT_EQ(compute_reward(in, config), (RewardResult{2.0, 2.0, true, false, {"reduced_precision"}}));
  config.precision = PrecisionPolicy::reject;
  EXPECT_EQ(compute_reward(in, config), (RewardResult{0.0, 0.0, false, false, {"reduced_precision"}}));
  config.kind = RewardKind::composite;  // not even the compile bonus
  EXPECT_EQ(compute_reward(in, config).reward, 0.0);
}

TEST(Flags, ExcessiveSpeedupIsFlaggedNotFailed) {
  const RewardResult r = compute_reward(timed(0.1), {});  // 20x
  EXPECT_DOUBLE_EQ(r.reward, 20.0);
  EXPECT_TRUE(r.accepted);
  EXPECT_EQ(r.flags, Flags{"excessive_speedup"});
}

TEST(RewardConfig, NamesAndRanges) {
  for (RewardKind k : {RewardKind::speedup, RewardKind::composite, RewardKind::normalized, RewardKind::threshold})
    EXPECT_EQ(parse_reward_kind(to_string(k)), k);
  for (PrecisionPolicy p : {PrecisionPolicy::allow, PrecisionPolicy::flag, PrecisionPolicy::reject})
    EXPECT_EQ(parse_precision_policy(to_string(p)), p);
  EXPECT_THROW(parse_reward_kind("fast"), InputError);
  EXPECT_THROW(parse_precision_policy("maybe"), InputError);
  RewardConfig bad;
  bad.r_max = 0.0;
  EXPECT_THROW(compute_reward(timed(1.0), bad), InputError);
  bad = {};
  bad.sol_margin = 1.0;
  EXPECT_THROW(compute_reward(timed(1.0), bad), InputError);
  bad = {};
  bad.task_baselines[3] = 0.0;
  EXPECT_THROW(compute_reward(timed(1.0), bad), InputError);
}

TEST(FastP, CountsCorrectTasksStrictlyAboveP) {
  const std::vector<TaskScore> scores = {
      {1, true, 1.5},   // fast_1
      {2, true, 1.0},   // exactly 1.0: not > 1
      {3, false, 3.0},  // fast but wrong
      {4, true, 0.5},   // correct, slow
  };
  EXPECT_DOUBLE_EQ(fast_p(scores, 1.0), 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(fast_p(scores, 0.0), 3.0 / 4.0);  // fast_0: correctness rate
  EXPECT_DOUBLE_EQ(fast_p(scores, 0.5), 2.0 / 4.0);  // 0.5 is not > 0.5
  EXPECT_DOUBLE_EQ(fast_p(scores, 2.0), 0.0);
  // Denominator: ALL tasks, including those without a score.
  EXPECT_DOUBLE_EQ(fast_p(scores, 1.0, 10), 1.0 / 10.0);
  EXPECT_DOUBLE_EQ(fast_p({}, 1.0, 5), 0.0);
}

TEST(FastP, RejectsBadDenominators) {
  const std::vector<TaskScore> scores = {{1, true, 2.0}, {2, true, 2.0}};
  EXPECT_THROW(fast_p(scores, 1.0, 1), InputError);  // fewer tasks than scores
  EXPECT_THROW(fast_p({}, 1.0), InputError);         // zero tasks
  const std::vector<TaskScore> repeated = {{1, true, 2.0}, {1, true, 2.0}};
  EXPECT_THROW(fast_p(repeated, 1.0), InputError);
}

}  // namespace
}  // namespace kbrl
