// Policies and learning algorithms on CPU against a synthetic environment (a fixed reward table
// over the knob spaces; experiments/environment.h): sampling, log-probs, temperature, masks, LoRA,
// checkpoints, GRPO, SFT, SDPO, Best-of-Adaptation and early stopping.
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

namespace kbrl {
namespace {

TaskSpec small(int id) { return task_spec(id, Scale::small); }

double total(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("kbrl-test-policies-" + std::to_string(::getpid()) + "-" + name);
}

/// Mean over tasks of the synthetic environment's expected reward.
double expected_reward(SyntheticEnvironment& env, Policy& p, const std::vector<int>& tasks, double t) {
  double sum = 0;
  for (int id : tasks) sum += env.expected_reward(p, small(id), t);
  return sum / static_cast<double>(tasks.size());
}

TEST(SchedulePolicy, SamplesAreLegalAndLogprobsMatchScoring) {
  SchedulePolicy policy({.seed = 1});
  for (int id : covered_tasks()) {
    const TaskSpec task = small(id);
    const KnobSpace& space = knob_space_of(task);
    const std::vector<Sample> samples = policy.sample(task, 16, 2.0, 7);  // hot: explores
    ASSERT_EQ(samples.size(), 16u);
    std::vector<std::vector<int>> tokens;
    for (const Sample& s : samples) {
      EXPECT_TRUE(space.is_legal(s.config)) << id << " " << s.config.str();
      EXPECT_EQ(space.tokenize(s.config), s.tokens);
      EXPECT_EQ(s.logprobs.size(), space.knobs().size());
      EXPECT_NEAR(s.logprob(), total(s.logprobs), 1e-12);
      tokens.push_back(s.tokens);
    }
    const auto scored = policy.logprob(task, tokens, 2.0);
    for (size_t i = 0; i < samples.size(); ++i)
      for (size_t k = 0; k < tokens[i].size(); ++k)
        EXPECT_NEAR(scored[i][k], samples[i].logprobs[k], 1e-5) << id;
  }
}

TEST(SchedulePolicy, LogprobsOfAllConfigurationsSumToOne) {
  SchedulePolicy policy({.seed = 3});
  for (int id : {19, 23, 47}) {
    const TaskSpec task = small(id);
    const KnobSpace& space = knob_space_of(task);
    std::vector<std::vector<int>> all;
    for (const Config& c : space.enumerate()) all.push_back(space.tokenize(c));
    double mass = 0;
    for (const auto& row : policy.logprob(task, all, 0.7)) mass += std::exp(total(row));
    EXPECT_NEAR(mass, 1.0, 1e-4) << id;
  }
}

TEST(SchedulePolicy, SameSeedSameSamplesAndTemperatureZeroIsGreedy) {
  SchedulePolicy policy({.seed = 2});
  const TaskSpec task = small(21);
  const auto a = policy.sample(task, 8, 1.0, 42);
  const auto b = policy.sample(task, 8, 1.0, 42);
  const auto c = policy.sample(task, 8, 1.0, 43);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].tokens, b[i].tokens);
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) differs |= a[i].tokens != c[i].tokens;
  EXPECT_TRUE(differs);
  // Sample i does not depend on how many are drawn.
  EXPECT_EQ(policy.sample(task, 3, 1.0, 42)[2].tokens, a[2].tokens);
  // Temperature 0 is argmax decoding; a tiny temperature gives the same.
  const auto greedy = policy.sample(task, 4, 0.0, 1);
  for (const Sample& s : greedy) {
    EXPECT_EQ(s.tokens, greedy[0].tokens);
    EXPECT_EQ(s.logprob(), 0.0);
  }
  for (const Sample& s : policy.sample(task, 16, 1e-4, 99)) EXPECT_EQ(s.tokens, greedy[0].tokens);
  // Greedy decoding picks the most likely legal value at every step.
  const auto& space = knob_space_of(task);
  std::vector<int> prefix;
  for (size_t k = 0; k < space.knobs().size(); ++k) {
    double best = -1e300;
    int arg = -1;
    const std::vector<bool> mask = space.legal_mask(prefix);
    for (size_t v = 0; v < mask.size(); ++v) {
      if (!mask[v]) continue;
      std::vector<int> probe = prefix;
      probe.push_back(static_cast<int>(v));
      // Complete the probe with the greedy continuation only to score token k.
      std::vector<int> full = probe;
      for (size_t j = probe.size(); j < space.knobs().size(); ++j) {
        const std::vector<bool> m = space.legal_mask(full);
        full.push_back(static_cast<int>(std::find(m.begin(), m.end(), true) - m.begin()));
      }
      const double lp = policy.logprob(task, {full}, 1.0)[0][k];
      if (lp > best) best = lp, arg = static_cast<int>(v);
    }
    EXPECT_EQ(arg, greedy[0].tokens[k]) << "knob " << k;
    prefix.push_back(greedy[0].tokens[k]);
  }
  GreedyPolicy g(policy);
  EXPECT_EQ(g.sample(task, 1, 1.0, 5)[0].tokens, greedy[0].tokens);
}

TEST(SchedulePolicy, BadInputIsAnInputError) {
  SchedulePolicy policy;
  const TaskSpec task = small(19);
  EXPECT_THROW(policy.sample(task, -1, 1.0, 0), InputError);
  EXPECT_THROW(policy.sample(task, 1, -0.5, 0), InputError);
  EXPECT_THROW(policy.logprob(task, {{0}}, 1.0), InputError);        // too short
  EXPECT_THROW(policy.logprob(task, {{99, 0, 0, 0, 0, 0, 0, 0}}, 1.0), InputError);
  EXPECT_THROW(policy.logprob(task, {policy.sample(task, 1, 1, 0)[0].tokens}, 0.0), InputError);
  EXPECT_THROW(SchedulePolicy({.device = "tpu"}), InputError);
  EXPECT_THROW(policy.reset_adapter(0), InputError);
  EXPECT_THROW(policy.load_base(temp_file("missing.pt")), InputError);
}

TEST(SchedulePolicy, FreshAdapterIsANoOpAndMergeKeepsTheFunction) {
  SchedulePolicy policy({.seed = 4});
  const TaskSpec task = small(23);
  const auto samples = policy.sample(task, 8, 1.0, 3);
  std::vector<std::vector<int>> tokens;
  for (const auto& s : samples) tokens.push_back(s.tokens);
  const auto before = policy.logprob(task, tokens, 1.0);
  const int64_t base_params = policy.parameter_count(false);
  policy.add_adapter({.rank = 4, .alpha = 8}, 11);
  EXPECT_TRUE(policy.has_adapter());
  EXPECT_LT(policy.parameter_count(true), base_params / 4);
  const auto with = policy.logprob(task, tokens, 1.0);
  for (size_t i = 0; i < tokens.size(); ++i)
    for (size_t k = 0; k < tokens[i].size(); ++k) EXPECT_FLOAT_EQ(with[i][k], before[i][k]);
  // Train the adapter a little, then merge: the merged base scores like base + adapter.
  SyntheticEnvironment env(5);
  UpdateConfig u;
  policy.set_optimizer({.learning_rate = 0.05});
  for (int step = 0; step < 3; ++step) {
    const auto group = env.evaluate(task, policy.sample(task, 8, 1.0, 100 + step), "t");
    std::vector<double> rewards;
    for (const auto& r : group) rewards.push_back(r.reward);
    policy.update(grpo_items(task, group, group_advantages(rewards, true)), u);
  }
  const auto adapted = policy.logprob(task, tokens, 1.0);
  EXPECT_NE(adapted, before);
  policy.merge_adapter();
  EXPECT_FALSE(policy.has_adapter());
  const auto merged = policy.logprob(task, tokens, 1.0);
  for (size_t i = 0; i < tokens.size(); ++i)
    for (size_t k = 0; k < tokens[i].size(); ++k) EXPECT_NEAR(merged[i][k], adapted[i][k], 1e-4);
}

TEST(SchedulePolicy, CheckpointsRoundTripBaseAndAdapterApart) {
  SchedulePolicy a({.seed = 5});
  a.add_adapter({.rank = 2, .alpha = 4}, 1);
  const TaskSpec task = small(47);
  SyntheticEnvironment env(1);
  a.set_optimizer({.learning_rate = 0.05});
  const auto group = env.evaluate(task, a.sample(task, 8, 1.0, 1), "t");
  std::vector<double> rewards;
  for (const auto& r : group) rewards.push_back(r.reward);
  a.update(grpo_items(task, group, group_advantages(rewards, true)), {});
  const auto base_file = temp_file("base.pt"), adapter_file = temp_file("adapter.pt");
  a.save_base(base_file);
  a.save_adapter(adapter_file);
  SchedulePolicy b({.seed = 99});  // different initial weights
  b.load_base(base_file);
  b.load_adapter(adapter_file);
  std::vector<std::vector<int>> tokens;
  for (const auto& s : a.sample(task, 8, 1.0, 2)) tokens.push_back(s.tokens);
  EXPECT_EQ(a.logprob(task, tokens, 1.0), b.logprob(task, tokens, 1.0));
  EXPECT_EQ(a.sample(task, 8, 0.5, 9)[3].tokens, b.sample(task, 8, 0.5, 9)[3].tokens);
  // The base alone is the adapter-free policy.
  SchedulePolicy c({.seed = 98});
  c.load_base(base_file);
  a.remove_adapter();
  EXPECT_EQ(a.logprob(task, tokens, 1.0), c.logprob(task, tokens, 1.0));
  // A checkpoint of another network size is refused with the reason.
  SchedulePolicy other({.hidden = 32});
  EXPECT_THROW(other.load_base(base_file), InputError);
  std::filesystem::remove(base_file);
  std::filesystem::remove(adapter_file);
}

TEST(SchedulePolicy, AdapterStateRestoresAnEarlierAdapterInMemory) {
  SchedulePolicy policy({.seed = 5});
  policy.add_adapter({.rank = 2, .alpha = 4}, 1);
  policy.set_optimizer({.learning_rate = 0.05});
  const TaskSpec task = small(47);
  SyntheticEnvironment env(1);
  std::vector<std::vector<int>> tokens;
  for (const auto& s : policy.sample(task, 8, 1.0, 2)) tokens.push_back(s.tokens);
  const std::string before = policy.adapter_state();
  const auto logp_before = policy.logprob(task, tokens, 1.0);
  for (int step = 0; step < 3; ++step) {
    const auto group = env.evaluate(task, policy.sample(task, 8, 1.0, static_cast<uint64_t>(step)), "t");
    std::vector<double> rewards;
    for (const auto& r : group) rewards.push_back(r.reward);
    policy.update(grpo_items(task, group, group_advantages(rewards, true)), {});
  }
  ASSERT_NE(policy.logprob(task, tokens, 1.0), logp_before);  // the updates moved the adapter
  policy.restore_adapter(before);
  EXPECT_EQ(policy.logprob(task, tokens, 1.0), logp_before);
  // The state and the file hold the same adapter: a policy loading either scores alike.
  const auto file = temp_file("adapter_state.pt");
  policy.save_adapter(file);
  const std::string now = policy.adapter_state();
  SchedulePolicy from_file({.seed = 5}), from_state({.seed = 5});
  from_file.load_adapter(file);
  from_state.restore_adapter(now);
  EXPECT_EQ(from_file.logprob(task, tokens, 1.0), logp_before);
  EXPECT_EQ(from_state.logprob(task, tokens, 1.0), logp_before);
  std::filesystem::remove(file);
  // Garbage is refused with a clear error and leaves the adapter as it was.
  EXPECT_THROW(policy.restore_adapter("not an archive"), InputError);
  EXPECT_THROW(policy.restore_adapter(""), InputError);
  EXPECT_EQ(policy.logprob(task, tokens, 1.0), logp_before);
  SchedulePolicy other({.hidden = 32});
  other.add_adapter({.rank = 2, .alpha = 4}, 1);
  EXPECT_THROW(other.restore_adapter(before), InputError);
}

TEST(Grpo, GroupAdvantages) {
  const auto a = group_advantages({1, 2, 3, 4}, false);
  EXPECT_EQ(a, (std::vector<double>{-1.5, -0.5, 0.5, 1.5}));
  const auto n = group_advantages({1, 2, 3, 4}, true);
  const double sd = std::sqrt(1.25);  // population standard deviation
  EXPECT_NEAR(n[0], -1.5 / sd, 1e-5);
  EXPECT_NEAR(n[3], 1.5 / sd, 1e-5);
  EXPECT_EQ(group_advantages({2, 2, 2}, true), (std::vector<double>{0, 0, 0}));
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
  // Contexts: the demonstration is the fastest other correct rollout; prompt_only has no feedback.
  const TeacherContext fb = sdpo_context(group, 0, SdpoTeacher::feedback);
  const TeacherContext po = sdpo_context(group, 0, SdpoTeacher::prompt_only);
  ASSERT_TRUE(po.demonstration.has_value());
  EXPECT_TRUE(fb.feedback.has_value());
  EXPECT_FALSE(po.feedback.has_value());
  EXPECT_EQ(fb.demonstration, po.demonstration);
  int best = -1;
  for (size_t j = 1; j < group.size(); ++j)
    if (group[j].correct && (best < 0 || group[j].speedup > group[static_cast<size_t>(best)].speedup))
      best = static_cast<int>(j);
  EXPECT_EQ(*po.demonstration, group[static_cast<size_t>(best)].sample.tokens);
  int64_t teacher_tokens = 0;
  sdpo_items(policy, task, group, SdpoTeacher::feedback, 1.0, 1.0, &teacher_tokens);
  EXPECT_EQ(teacher_tokens, 16 * static_cast<int64_t>(knob_space_of(task).knobs().size()));

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

TEST(Ttt, RunsWithBoaAndEarlyStoppingOnSyntheticRewards) {
  SchedulePolicy policy({.seed = 9});
  SyntheticEnvironment env(4);
  TttConfig c;
  c.tasks = {19, 23};
  c.scale = Scale::small;
  c.k = 8;
  c.steps = 4;
  c.temperature = 1.0;
  c.optimizer.learning_rate = 3e-2;
  c.lora_config = {.rank = 4, .alpha = 8};
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

TEST(Baselines, UniformIsUniformOverConfigurationsAndHeuristicCentersOnTheExpert) {
  UniformPolicy uniform;
  const TaskSpec task = small(23);
  const KnobSpace& space = knob_space_of(task);
  const double n = static_cast<double>(space.size());
  for (const Sample& s : uniform.sample(task, 20, 1.0, 1)) {
    EXPECT_TRUE(space.is_legal(s.config));
    EXPECT_NEAR(s.logprob(), -std::log(n), 1e-9);
  }
  HeuristicPolicy heuristic(0.2);
  const Config expert = generator_for(23).expert(task);
  EXPECT_EQ(heuristic.sample(task, 1, 0.0, 3)[0].config, expert);
  int at_expert = 0;
  for (const Sample& s : heuristic.sample(task, 200, 1.0, 4)) {
    at_expert += s.config == expert;
    EXPECT_NEAR(heuristic.logprob(task, {s.tokens})[0][0], s.logprobs[0], 1e-12);
  }
  // (1 - 0.2 + 0.2/|values|)^knobs of the draws keep every expert value: about a third here.
  EXPECT_GT(at_expert, 30);
  EXPECT_LT(at_expert, 150);
}

}  // namespace
}  // namespace kbrl
