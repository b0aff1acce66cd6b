// Policies and learning algorithms on CPU against a synthetic environment (a fixed reward table
// over the knob spaces; experiments/environment.h): sampling, log-probs, temperature, masks, LoRA,
// checkpoints and the baselines; the learning algorithms are in test_learning.cpp.
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <unistd.h>

#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <kernels/generator.h>
#include <policies/baseline_policies.h>
#include <policies/schedule_policy.h>
#include <reference/task_registry.h>

#include "policy_testing.h"

namespace kbrl {
namespace {

using namespace testing;

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
