// The learning algorithms on CPU against the synthetic environment (experiments/environment.h):
// GRPO, SFT, SDPO, Best-of-Adaptation and early stopping, with the schedule policy.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include <gtest/gtest.h>

#include <experiments/algorithms.h>
#include <experiments/environment.h>
#include <experiments/training_loops.h>
#include <kbrl/error.h>
#include <kernels/generator.h>
#include <policies/baseline_policies.h>
#include <policies/schedule_policy.h>
#include <reference/task_registry.h>

#include "policy_testing.h"

namespace kbrl {
namespace {

using namespace testing;

TEST(Grpo, GroupAdvantages) {
  const auto a = group_advantages({1, 2, 3, 4}, false);
  EXPECT_EQ(a, (std::vector<double>{-1.5, -0.5, 0.5, 1.5}));
  const auto n = group_advantages({1, 2, 3, 4}, true);
  const double sd = std::sqrt(1.25);  // population standard deviation
  EXPECT_NEAR(n[0], -1.5 / sd, 1e-5);
  EXPECT_NEAR(n[3], 1.5 / sd, 1e-5);
  EXPECT_EQ(group_advantages({2, 2, 2}, true), (std::vector<double>{0, 0, 0}));
  // Equal rewards whose mean rounds (0.1 summed eight times is not 0.8) give exact zeros, not 1e-10.
  EXPECT_EQ(group_advantages(std::vector<double>(8, 0.1), true), std::vector<double>(8, 0.0));
  EXPECT_EQ(group_advantages(std::vector<double>(7, 0.3), false), std::vector<double>(7, 0.0));
}

// A rollout the harness could not judge (harness_error: the GPU out of memory for the harness, a
// worker fault) teaches nothing: the group's advantages come from the judged rollouts alone.
TEST(Grpo, GroupItemsLeaveOutWhatTheHarnessCouldNotJudge) {
  const TaskSpec task = task_spec(19, Scale::small);
  auto rollout = [](Outcome outcome, double reward, int token) {
    EvalRecord record;
    record.outcome = outcome;
    Rollout r = rollout_from({}, std::move(record));
    r.reward = reward;
    r.sample.tokens = {token, token + 1};
    r.sample.logprobs = {-0.5, -0.5};
    return r;
  };
  const std::vector<Rollout> group = {rollout(Outcome::ok, 2.0, 10), rollout(Outcome::harness_error, 0.0, 20),
                                      rollout(Outcome::wrong_answer, 0.0, 30)};
  EXPECT_EQ(judged_only(group).size(), 2u);
  const auto items = grpo_group_items(task, group, false);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].tokens, (std::vector<int>{10, 11}));
  EXPECT_EQ(items[1].tokens, (std::vector<int>{30, 31}));
  EXPECT_EQ(items[0].advantages, (std::vector<double>{1.0, 1.0}));  // mean over the two judged: 1
  EXPECT_EQ(items[1].advantages, (std::vector<double>{-1.0, -1.0}));
  EXPECT_TRUE(grpo_group_items(task, {rollout(Outcome::harness_error, 0.0, 1)}, true).empty());
}

// GRPO at this budget (25 steps of 4 tasks x 8, lr 3e-2) is high-variance from one starting point
// to another: some seeds sharpen onto a mediocre configuration (over-sharpening) while most climb.
// So the claim is about the average over eight starting weights, not one lucky seed.
TEST(Grpo, RaisesExpectedRewardOnASyntheticTable) {
  SyntheticEnvironment env(2026);
  const std::vector<int> tasks = {19, 21, 23, 47};
  double sum_before = 0, sum_after = 0;
  int improved = 0;
  for (const uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
    SchedulePolicy policy({.seed = seed});
    RlvrConfig c;
    c.tasks = tasks;
    c.scale = Scale::small;
    c.tasks_per_batch = 4;
    c.group_size = 8;
    c.steps = 25;
    c.temperature = 1.0;
    c.optimizer.learning_rate = 3e-2;
    c.lora_config = {.rank = 4, .alpha = 8};
    const double before = expected_reward(env, policy, tasks, 1.0);
    const auto steps = run_rlvr(policy, env, c, nullptr, {});
    ASSERT_EQ(steps.size(), 25u);
    const double after = expected_reward(env, policy, tasks, 1.0);
    std::printf("policy seed %d: expected reward %.4f -> %.4f; KL to start at the last step %.4f\n",
                static_cast<int>(seed), before, after, steps.back().update.kl);
    EXPECT_GT(steps.back().update.kl, 0.0);
    EXPECT_FALSE(policy.has_adapter());  // merged at the end
    sum_before += before;
    sum_after += after;
    improved += after > 1.1 * before;
  }
  EXPECT_GT(sum_after, 1.5 * sum_before);  // measured: 8.47 -> 18.84 (2.2x)
  EXPECT_GE(improved, 4);                   // measured: 5 of 8 by more than 10%
}

// The entropy bonus: with zero advantages, steps on it alone raise the policy's entropy.
TEST(Grpo, AnEntropyBonusRaisesTheEntropy) {
  SchedulePolicy policy({.seed = 3});
  policy.add_adapter({.rank = 4, .alpha = 8}, 1);
  policy.set_optimizer({.learning_rate = 3e-2});
  const TaskSpec task = task_spec(19, Scale::small);
  std::vector<TrainItem> items;
  for (const Sample& s : policy.sample(task, 8, 0.5, 4)) {
    TrainItem it;
    it.task = task;
    it.tokens = s.tokens;
    it.old_logprobs = s.logprobs;
    it.advantages.assign(s.tokens.size(), 0.0);
    items.push_back(it);
  }
  UpdateConfig bonus;
  bonus.temperature = 0.5;
  bonus.entropy_coef = 1.0;
  const double before = policy.measure(items, 0.5).entropy;
  for (int i = 0; i < 5; ++i) policy.update(items, bonus);
  EXPECT_GT(policy.measure(items, 0.5).entropy, before + 1e-3);
}

TEST(Sft, LowersTheNllOfItsData) {
  SchedulePolicy policy({.seed = 7});
  HeuristicPolicy teacher(0.1);
  std::vector<TrainItem> data;
  for (int id : {19, 23, 47}) {
    const TaskSpec task = small(id);
    const auto items = sft_items(task, teacher.sample(task, 16, 1.0, 5));
    data.insert(data.end(), items.begin(), items.end());
  }
  SftConfig c;
  c.epochs = 4;
  c.batch_size = 16;
  c.optimizer.learning_rate = 1e-2;
  const auto epochs = run_sft(policy, data, c, nullptr);
  ASSERT_EQ(epochs.size(), 5u);
  EXPECT_LT(epochs.back().nll_per_token, 0.7 * epochs.front().nll_per_token);
  // The student now prefers the teacher's expert configuration.
  const TaskSpec task = small(23);
  EXPECT_EQ(policy.sample(task, 1, 0.0, 0)[0].config, generator_for(23).expert(task));
}

TEST(Sdpo, MovesTheStudentTowardTheTeacher) {
  SchedulePolicy policy({.seed = 8});
  SyntheticEnvironment env(3);
  const TaskSpec task = small(21);
  policy.add_adapter({.rank = 4, .alpha = 8}, 2);
  policy.set_optimizer({.learning_rate = 1e-2});
  const auto group = env.evaluate(task, policy.sample(task, 16, 1.0, 1), "t");
  // Contexts: the feedback teacher's demonstration is the fastest other correct rollout, beside the
  // rollout's feedback; the prompt-only teacher's context is empty (report 003's unconditional one),
  // which for the schedule policy is the student itself: no advantage.
  const TeacherContext fb = sdpo_context(group, 0, SdpoTeacher::feedback);
  ASSERT_TRUE(fb.demonstration.has_value());
  EXPECT_TRUE(fb.feedback.has_value());
  EXPECT_TRUE(sdpo_context(group, 0, SdpoTeacher::prompt_only).empty());
  int best = -1;
  for (size_t j = 1; j < group.size(); ++j)
    if (group[j].correct() && (best < 0 || group[j].speedup() > group[static_cast<size_t>(best)].speedup()))
      best = static_cast<int>(j);
  EXPECT_EQ(*fb.demonstration, group[static_cast<size_t>(best)].sample.tokens);
  int64_t teacher_tokens = 0;
  sdpo_items(policy, task, group, SdpoTeacher::feedback, 1.0, 1.0, &teacher_tokens);
  EXPECT_EQ(teacher_tokens, 16 * static_cast<int64_t>(knob_space_of(task).knobs().size()));
  for (const TrainItem& it : sdpo_items(policy, task, group, SdpoTeacher::prompt_only, 1.0, 1.0))
    for (double a : it.advantages) EXPECT_NEAR(a, 0.0, 1e-6);
  // The demonstration alone as the fixed teacher context below.
  TeacherContext po;
  po.demonstration = fb.demonstration;

  // On-policy SDPO steps with one fixed teacher context: the reverse KL(student || teacher), the
  // objective SDPO's token advantages follow, shrinks, and the student puts more mass on the
  // demonstration the teacher prefers.
  const KnobSpace& space = knob_space_of(task);
  std::vector<std::vector<int>> all;
  for (const Config& c : space.enumerate()) all.push_back(space.tokenize(c));
  auto reverse_kl = [&] {
    const auto t = policy.teacher_logprob(task, all, po, 1.0);
    const auto st = policy.logprob(task, all, 1.0);
    double d = 0;
    for (size_t i = 0; i < all.size(); ++i) d += std::exp(total(st[i])) * (total(st[i]) - total(t[i]));
    return d;
  };
  auto p_demo = [&] { return std::exp(total(policy.logprob(task, {*po.demonstration}, 1.0)[0])); };
  const double kl0 = reverse_kl(), p0 = p_demo();
  for (int step = 0; step < 15; ++step) {
    std::vector<TrainItem> items;
    for (const Sample& s : policy.sample(task, 16, 1.0, 200 + step)) {
      TrainItem it;
      it.task = task;
      it.tokens = s.tokens;
      it.old_logprobs = s.logprobs;
      const auto t = policy.teacher_logprob(task, {s.tokens}, po, 1.0)[0];
      for (size_t k = 0; k < s.tokens.size(); ++k) it.advantages.push_back(t[k] - s.logprobs[k]);
      items.push_back(std::move(it));
    }
    policy.update(items, {});
  }
  const double kl1 = reverse_kl(), p1 = p_demo();
  std::printf("KL(student || teacher) %.4f -> %.4f; p(demonstration) %.4g -> %.4g\n", kl0, kl1, p0, p1);
  EXPECT_LT(kl1, 0.8 * kl0);
  EXPECT_GT(p1, 2 * p0);
}

TEST(BestOfAdaptation, PicksTheBestStepAndStopsAtTheFirstRegression) {
  const auto d = best_of_adaptation({0.1, 0.3, 0.2, 0.5}, 1);
  EXPECT_EQ(d.best_step, 1);
  EXPECT_EQ(d.stop_step, 2);
  const auto no_stop = best_of_adaptation({0.1, 0.3, 0.2, 0.5}, 0);
  EXPECT_EQ(no_stop.best_step, 3);
  EXPECT_EQ(no_stop.stop_step, -1);
  const auto p2 = best_of_adaptation({0.4, 0.3, 0.35, 0.2, 0.1}, 2);
  EXPECT_EQ(p2.best_step, 0);
  EXPECT_EQ(p2.stop_step, 4);
  EXPECT_EQ(best_of_adaptation({0.2, 0.2, 0.2}, 1).best_step, 0);  // ties: the earliest
}

/// TTT of the schedule policy on tasks 19 and 23 at small scale, 8 samples a task and step.
TttConfig small_ttt(int steps) {
  TttConfig c;
  c.tasks = {19, 23};
  c.scale = Scale::small;
  c.k = 8;
  c.steps = steps;
  c.temperature = 1.0;
  c.optimizer.learning_rate = 3e-2;
  c.lora_config = {.rank = 4, .alpha = 8};
  return c;
}

TEST(Ttt, RunsWithBoaAndEarlyStoppingOnSyntheticRewards) {
  SchedulePolicy policy({.seed = 9});
  SyntheticEnvironment env(4);
  TttConfig c = small_ttt(4);
  const TttResult r = run_ttt(policy, env, c, nullptr, nullptr, {});
  ASSERT_GE(r.steps.size(), 1u);
  EXPECT_LE(r.steps.size(), 5u);
  EXPECT_EQ(r.budget.rollouts, static_cast<int64_t>(r.steps.size()) * 16);
  std::vector<double> scores;
  for (const auto& s : r.steps) scores.push_back(s.fast_1);
  EXPECT_EQ(r.boa.best_step, best_of_adaptation(scores, 0).best_step);
  EXPECT_TRUE(policy.has_adapter());  // the BoA step's adapter is loaded
  // The loaded adapter is the BoA step's: it scores that step's samples as they were scored when
  // drawn (and, where the BoA step is not the last, unlike the last step's adapter).
  const auto& boa_rollouts = r.rollouts.at(static_cast<size_t>(r.boa.best_step));
  for (const int id : c.tasks) {
    std::vector<std::vector<int>> tokens;
    std::vector<std::vector<double>> drawn;
    for (const Rollout& ro : boa_rollouts)
      if (ro.sample.task_id == id) {
        tokens.push_back(ro.sample.tokens);
        drawn.push_back(ro.sample.logprobs);
      }
    const auto now = policy.logprob(task_spec(id, Scale::small), tokens, c.temperature);
    for (size_t i = 0; i < tokens.size(); ++i)
      for (size_t k = 0; k < tokens[i].size(); ++k) EXPECT_NEAR(now[i][k], drawn[i][k], 1e-5);
  }
  c.patience = 1;
  c.update = TttUpdate::sdpo;
  const TttResult s = run_ttt(policy, env, c, nullptr, nullptr, {});
  EXPECT_GT(s.budget.teacher_tokens, 0);
}

// Fresh samples (fresh_k) score every step apart from the samples it trains on and selects with:
// the same trajectory, BoA step and adapter as without them, fresh_k more rollouts per task and step
// in the run's budget, drawn with seeds of their own.
TEST(Ttt, FreshSamplesScoreEachStepAndChangeNothingOfTheTrajectory) {
  TttConfig c = small_ttt(3);
  SchedulePolicy plain_policy({.seed = 9}), fresh_policy({.seed = 9});
  SyntheticEnvironment env(4);
  const TttResult plain = run_ttt(plain_policy, env, c, nullptr, nullptr, {});
  c.fresh_k = 6;
  const TttResult fresh = run_ttt(fresh_policy, env, c, nullptr, nullptr, {});
  ASSERT_EQ(fresh.steps.size(), plain.steps.size());
  for (size_t i = 0; i < plain.steps.size(); ++i) {
    EXPECT_EQ(fresh.steps[i].fast_1, plain.steps[i].fast_1) << "step " << i;
    EXPECT_EQ(fresh.steps[i].mean_reward, plain.steps[i].mean_reward) << "step " << i;
    EXPECT_EQ(fresh.steps[i].budget.rollouts, plain.steps[i].budget.rollouts) << "step " << i;
  }
  EXPECT_EQ(fresh.boa.best_step, plain.boa.best_step);
  EXPECT_TRUE(plain.fresh.empty());
  ASSERT_EQ(fresh.fresh.size(), fresh.steps.size());
  ASSERT_EQ(fresh.fresh_rollouts.size(), fresh.steps.size());
  bool other_samples = false;
  for (size_t i = 0; i < fresh.fresh.size(); ++i) {
    EXPECT_EQ(fresh.fresh[i].step, static_cast<int>(i));
    EXPECT_EQ(fresh.fresh[i].rollouts, 12);  // 6 a task
    EXPECT_EQ(fresh.fresh_rollouts[i].size(), 12u);
    for (size_t j = 0; j < fresh.fresh_rollouts[i].size() && j < fresh.rollouts[i].size(); ++j)
      other_samples = other_samples || fresh.fresh_rollouts[i][j].sample.tokens != fresh.rollouts[i][j].sample.tokens;
  }
  EXPECT_TRUE(other_samples) << "the fresh samples are the trained ones";
  EXPECT_EQ(fresh.budget.rollouts, plain.budget.rollouts + static_cast<int64_t>(fresh.steps.size()) * 12);
  // The adapter loaded at the end is the same BoA step's.
  const TaskSpec relu = task_spec(19, Scale::small);
  const auto& tokens = plain.rollouts.front().front().sample.tokens;
  EXPECT_EQ(plain_policy.logprob(relu, {tokens}, 1.0), fresh_policy.logprob(relu, {tokens}, 1.0));
}

}  // namespace
}  // namespace kbrl
