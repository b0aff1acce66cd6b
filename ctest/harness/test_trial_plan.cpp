// What the check runs, without a GPU: the trial plan (gpu_session.h) and the accuracy limit against
// float64 (gpu/accuracy.h).
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <set>
#include <string>

#include <harness/gpu/accuracy.h>
#include <harness/gpu/gpu_session.h>

namespace kbrl {
namespace {

std::map<InputSet, int> kinds(const std::vector<TrialPlan>& plan) {
  std::map<InputSet, int> count;
  for (const auto& p : plan) ++count[p.set];
  return count;
}

TEST(TrialPlan, KernelBenchChecksDrawOnlyKernelBenchInputs) {
  CheckSettings check;
  check.trials = 4;
  check.secret = 3;
  const auto plan = trial_plan(check, 19);
  ASSERT_EQ(plan.size(), 4u);
  for (size_t k = 0; k < plan.size(); ++k) {
    EXPECT_EQ(plan[k].set, InputSet::kernelbench);
    EXPECT_EQ(plan[k].seed_id, "trial-" + std::to_string(k));
    EXPECT_EQ(plan[k].seed, trial_seed(3, 19, static_cast<int>(k)));
  }
}

TEST(TrialPlan, RobustChecksRunEveryKindInAnOrderDrawnFromTheSecret) {
  CheckSettings check;
  check.trials = 5;
  check.robust_inputs = true;
  std::set<std::vector<InputSet>> orders;
  std::set<InputSet> first;
  for (uint64_t secret = 0; secret < 64; ++secret) {
    check.secret = secret;
    const auto plan = trial_plan(check, 23);
    ASSERT_EQ(plan.size(), 6u);
    const auto count = kinds(plan);
    EXPECT_EQ(count.at(InputSet::stress), 1);
    EXPECT_GE(count.at(InputSet::kernelbench), 1);
    EXPECT_GE(count.at(InputSet::outliers), 1);
    EXPECT_GE(count.at(InputSet::mixture), 1);
    std::vector<InputSet> order;
    std::set<uint64_t> seeds;
    for (const auto& p : plan) {
      order.push_back(p.set);
      seeds.insert(p.seed);
    }
    EXPECT_EQ(seeds.size(), plan.size()) << "two trials share a seed";
    orders.insert(order);
    first.insert(plan.front().set);
    EXPECT_EQ(trial_plan(check, 23).front().seed_id, plan.front().seed_id) << "not deterministic";
    EXPECT_LT(changed_input_trial(check, 23, plan.size()), plan.size());
  }
  EXPECT_GT(orders.size(), 20u) << "the order hardly depends on the secret";
  EXPECT_EQ(first.size(), 4u) << "some kind never comes first";
  check.secret = 5;
  const auto plan = trial_plan(check, 23);
  for (size_t k = 0; k < plan.size(); ++k) {
    const std::string name = plan[k].set == InputSet::kernelbench ? "trial" : std::string(to_string(plan[k].set));
    EXPECT_EQ(plan[k].seed_id, name + "-" + std::to_string(k));
  }
}

TEST(TrialPlan, FewTrialsStillStartWithKernelBenchsDraw) {
  CheckSettings check;
  check.robust_inputs = true;
  check.trials = 1;
  const auto count = kinds(trial_plan(check, 1));
  EXPECT_EQ(count.size(), 2u);
  EXPECT_EQ(count.at(InputSet::kernelbench), 1);
  EXPECT_EQ(count.at(InputSet::stress), 1);
  check.trials = 0;
  EXPECT_TRUE(trial_plan(check, 1).empty());
}

TEST(TrialPlan, AccuracyIsMeasuredOnTheFirstKernelBenchTrialKeyedByItsInputs) {
  CheckSettings check;
  check.robust_inputs = true;
  check.trials = 5;
  int changed_seen = 0;
  for (uint64_t secret = 1; secret <= 60; ++secret) {
    check.secret = secret;
    const auto plan = trial_plan(check, 37);
    const size_t changed = changed_input_trial(check, 37, plan.size());
    const auto at = accuracy_trial(plan, changed);
    ASSERT_TRUE(at.has_value());
    EXPECT_EQ(plan[at->trial].set, InputSet::kernelbench);
    for (size_t k = 0; k < at->trial; ++k) EXPECT_NE(plan[k].set, InputSet::kernelbench) << "not the first";
    EXPECT_EQ(at->changed, at->trial == changed);
    // The changed inputs are other inputs: their float64 facts are kept under another key.
    if (at->changed) EXPECT_NE(at->key, plan[at->trial].seed);
    else EXPECT_EQ(at->key, plan[at->trial].seed);
    changed_seen += at->changed;
    EXPECT_NE(changed_input_seed(check, 37, 0), changed_input_seed(check, 37, 1));
  }
  EXPECT_GT(changed_seen, 0) << "some secret makes the accuracy trial the changed one";
  // Without a trial of KernelBench's draw (timing only), nothing.
  check.trials = 0;
  EXPECT_FALSE(accuracy_trial(trial_plan(check, 37), 0).has_value());
}

TEST(TimedInputSet, FastModeMeetsEverySetAndLaterBlocksKeepTheShares) {
  CheckSettings check;
  check.robust_inputs = true;
  std::set<std::vector<InputSet>> orders;
  for (uint64_t secret = 1; secret <= 40; ++secret) {
    std::map<InputSet, int> first, later;
    std::vector<InputSet> order;
    for (int draw = 0; draw < 5; ++draw) {
      const InputSet set = timed_input_set(check, secret, 19, draw);
      ++first[set];
      order.push_back(set);
    }
    orders.insert(order);
    EXPECT_EQ(first[InputSet::kernelbench], 2);
    for (InputSet set : {InputSet::stress, InputSet::outliers, InputSet::mixture}) EXPECT_EQ(first[set], 1);
    for (int block = 0; block < 3; ++block) {
      std::map<InputSet, int> counts;
      for (int at = 0; at < 6; ++at) ++counts[timed_input_set(check, secret, 19, 5 + 6 * block + at)];
      EXPECT_EQ(counts[InputSet::kernelbench], 3);
      for (InputSet set : {InputSet::stress, InputSet::outliers, InputSet::mixture}) EXPECT_EQ(counts[set], 1);
    }
    // Another task of the same run has its own order, reproducible from the secret.
    EXPECT_EQ(timed_input_set(check, secret, 23, 3), timed_input_set(check, secret, 23, 3));
  }
  EXPECT_GT(orders.size(), 10u) << "the order must come from the secret";
  check.robust_inputs = false;
  for (int draw = 0; draw < 20; ++draw) EXPECT_EQ(timed_input_set(check, 7, 19, draw), InputSet::kernelbench);
}

TEST(AccuracyLimit, AnEstimateFailsAndHonestRoundingPasses) {
  // An exact reference (ReLU): only the float32 floor counts.
  EXPECT_FALSE(accuracy_failure(Family::elementwise, 0.0, 0.0));
  EXPECT_FALSE(accuracy_failure(Family::elementwise, 4 * kAccuracyFloor, 0.0));
  EXPECT_TRUE(accuracy_failure(Family::elementwise, 100 * kAccuracyFloor, 0.0));
  // estimated_norm (kernels/adversarial/) against the H100's measurement: 1.2e-4 against 4.6e-8.
  const auto failure = accuracy_failure(Family::norm, 1.2e-4, 4.6e-8);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("2013 times"), std::string::npos) << *failure;
  EXPECT_NE(failure->find("norm kernels may be 1024 times"), std::string::npos) << *failure;
  // Partials added into one float: a few hundred times the reference's error, honest.
  EXPECT_FALSE(accuracy_failure(Family::norm, 1.4e-5, 4.6e-8));
  // A loss accumulated in fp32 (the generators' accumulate=fp32): 1,542 times, honest.
  EXPECT_FALSE(accuracy_failure(Family::loss, 9.2e-5, 5.85e-8));
  // A column summed serially over 4,096 rows: 7 times.
  EXPECT_FALSE(accuracy_failure(Family::reduction, 7.1 * 6e-8, 6e-8));
  // Nothing to compare with: no verdict.
  EXPECT_FALSE(accuracy_failure(Family::norm, 1.0, std::numeric_limits<double>::quiet_NaN()));
  for (Family f : {Family::gemm, Family::elementwise, Family::softmax, Family::norm, Family::reduction,
                   Family::arg_reduction, Family::pooling, Family::scan, Family::loss, Family::conv,
                   Family::attention})
    EXPECT_GE(accuracy_factor(f), 16) << to_string(f);
}

}  // namespace
}  // namespace kbrl
