// An update's passes (policies/lm/micro_batches.h): a prompt with many completions keeps its passes,
// prompts with few are pooled behind their common prefix; and an update over pooled passes gives the
// loss, gradient, statistics and adapter of one pass per completion (a random Llama-shaped model).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include <kbrl/error.h>

#include <policies/lm/micro_batches.h>

#include "lm_policy_testing.h"

namespace kbrl::lm {
namespace {

using Tokens = std::vector<int>;

/// Every item in exactly one pass, no pass over `size` rows, one tail per row, and each row's shared
/// prompt and tail making its item's whole prompt.
void expect_a_plan(const std::vector<MicroBatch>& plan, const std::vector<Tokens>& prompts,
                   const std::vector<size_t>& prompt_of, size_t size) {
  std::multiset<size_t> seen;
  for (const MicroBatch& m : plan) {
    EXPECT_FALSE(m.prompt.empty());
    EXPECT_LE(m.items.size(), size);
    ASSERT_EQ(m.tails.size(), m.items.size());
    for (size_t r = 0; r < m.items.size(); ++r) {
      Tokens whole = m.prompt;
      whole.insert(whole.end(), m.tails[r].begin(), m.tails[r].end());
      EXPECT_EQ(whole, prompts[prompt_of[m.items[r]]]) << "item " << m.items[r];
      seen.insert(m.items[r]);
    }
  }
  EXPECT_EQ(seen.size(), prompt_of.size());
  EXPECT_EQ(std::set<size_t>(seen.begin(), seen.end()).size(), prompt_of.size()) << "an item in two passes";
}

TEST(MicroBatches, APromptOfManyCompletionsKeepsItsPassesAndFewArePooledBehindTheirCommonPrefix) {
  const std::vector<Tokens> prompts = {{1, 2, 3, 4, 5}, {1, 2, 3, 9}, {1, 2, 7, 7, 7}};
  const std::vector<size_t> prompt_of = {0, 0, 1, 0, 2, 0, 2, 0}, lengths = {3, 9, 2, 1, 4, 7, 6, 5};
  const auto plan = plan_micro_batches(prompts, prompt_of, lengths, 4);
  expect_a_plan(plan, prompts, prompt_of, 4);
  ASSERT_EQ(plan.size(), 3u);
  // Prompt 0's five completions: its own passes, longest first, the whole prompt shared.
  EXPECT_EQ(plan[0].prompt, prompts[0]);
  EXPECT_EQ(plan[0].items, (std::vector<size_t>{1, 5, 7, 0}));
  EXPECT_EQ(plan[1].items, (std::vector<size_t>{3}));
  // Prompts 1 and 2 (one and two completions): one pass behind {1, 2}, rows longest first (tail
  // and completion: 3 + 6, 3 + 4, 2 + 2).
  EXPECT_EQ(plan[2].prompt, (Tokens{1, 2}));
  EXPECT_EQ(plan[2].items, (std::vector<size_t>{6, 4, 2}));
  EXPECT_EQ(plan[2].tails, (std::vector<Tokens>{{7, 7, 7}, {7, 7, 7}, {3, 9}}));

  // One row a pass: every completion alone with its whole prompt.
  const auto alone = plan_micro_batches(prompts, prompt_of, lengths, 1);
  expect_a_plan(alone, prompts, prompt_of, 1);
  ASSERT_EQ(alone.size(), prompt_of.size());
  for (const MicroBatch& m : alone) EXPECT_TRUE(m.tails[0].empty());

  // Not pooled (pool=off, a CPU's default): every prompt its own passes.
  const auto own = plan_micro_batches(prompts, prompt_of, lengths, 4, /*pool=*/false);
  expect_a_plan(own, prompts, prompt_of, 4);
  ASSERT_EQ(own.size(), 4u);
  for (const MicroBatch& m : own)
    for (const Tokens& tail : m.tails) EXPECT_TRUE(tail.empty());
  EXPECT_THROW(parse_lm_spec("lm:random:1x64,pool=maybe"), InputError);
  EXPECT_EQ(parse_lm_spec("lm:random:1x64,pool=on").pool, "on");
}

TEST(MicroBatches, PromptsThatShareNothingGetPassesOfTheirOwn) {
  const std::vector<Tokens> prompts = {{1, 2}, {3, 4, 5}};
  const std::vector<size_t> prompt_of = {0, 1}, lengths = {2, 2};
  const auto plan = plan_micro_batches(prompts, prompt_of, lengths, 8);
  expect_a_plan(plan, prompts, prompt_of, 8);
  ASSERT_EQ(plan.size(), 2u);
  for (const MicroBatch& m : plan) EXPECT_TRUE(m.tails[0].empty());
}

// Three tasks' prompts with one or two completions each: pooled into one pass of four rows, the
// same update as four passes of one row (GRPO with the KL and entropy terms, then SFT's likelihood).
TEST(MicroBatches, PooledPassesGiveTheUpdateOfOnePassPerCompletion) {
  LmOptions one = parse_lm_spec("lm:random:1x64:7,shots=0,system=none");
  one.max_tokens = 16;
  LmOptions pooled = one;
  one.micro_batch = 1;
  pooled.micro_batch = 8;
  pooled.pool = "on";  // off by default on a CPU
  LmPolicy a(one), b(pooled);
  for (LmPolicy* p : {&a, &b}) {
    p->add_adapter({4, 8.0}, 3);
    p->set_optimizer({.learning_rate = 1e-2});
  }
  std::vector<TrainItem> items;
  std::vector<Tokens> prompts;
  std::vector<size_t> prompt_of, lengths;
  const std::vector<std::pair<int, int>> tasks = {{19, 2}, {21, 1}, {22, 1}};  // task, completions
  for (const auto& [id, n] : tasks) {
    const TaskSpec task = task_spec(id, Scale::small);
    const auto samples = a.sample(task, n, 1.0, static_cast<uint64_t>(id));
    for (const TrainItem& it : testing::items_with(task, samples, std::vector<double>(n, id == 21 ? -1.0 : 0.5))) {
      items.push_back(it);
      prompt_of.push_back(prompts.size());
      lengths.push_back(it.tokens.size());
    }
    prompts.push_back(a.prompt_tokens(task, a.options().prompt));
  }
  const auto plan = plan_micro_batches(prompts, prompt_of, lengths, 8);
  ASSERT_EQ(plan.size(), 1u) << "the three prompts were not pooled";
  EXPECT_FALSE(plan[0].tails[0].empty());

  UpdateConfig grpo;
  grpo.kl_coef = 0.1;
  grpo.entropy_coef = 0.01;
  UpdateConfig sft;
  sft.objective = Objective::likelihood;
  sft.aggregation = Aggregation::token_mean;
  for (const UpdateConfig& config : {sft, grpo}) {  // GRPO's KL term away from 0 after SFT's step
    const UpdateStats x = a.update(items, config), y = b.update(items, config);
    EXPECT_GT(x.grad_norm, 0.0);
    EXPECT_NEAR(x.grad_norm, y.grad_norm, 1e-4 * x.grad_norm);
    EXPECT_NEAR(x.loss, y.loss, 1e-5 * std::max(1.0, std::abs(x.loss)));
    EXPECT_NEAR(x.entropy, y.entropy, 1e-5 * std::max(1.0, x.entropy));
    EXPECT_EQ(x.clip_fraction, y.clip_fraction);
    EXPECT_EQ(x.tokens, y.tokens);
    if (config.kl_coef > 0) {
      EXPECT_NEAR(x.kl, y.kl, 1e-5 * std::max(1.0, x.kl));
      EXPECT_GT(x.kl, 1e-6) << "the KL term is tested at 0 only";
    } else {  // no KL term, no reference pass: not measured (never a 0 that was not measured)
      EXPECT_TRUE(std::isnan(x.kl) && std::isnan(y.kl)) << x.kl << " " << y.kl;
    }
  }
  const UpdateStats mx = a.measure(items, 1.0), my = b.measure(items, 1.0);
  EXPECT_EQ(mx.tokens, my.tokens);
  EXPECT_NEAR(mx.entropy, my.entropy, 1e-5 * std::max(1.0, mx.entropy));
  EXPECT_NEAR(mx.kl, my.kl, 1e-5 * std::max(1.0, mx.kl));
  for (size_t i = 0; i < items.size(); ++i) {  // the same adapters after the two steps
    const auto la = a.logprob(items[i].task, {items[i].tokens}), lb = b.logprob(items[i].task, {items[i].tokens});
    for (size_t j = 0; j < la[0].size(); ++j) EXPECT_NEAR(la[0][j], lb[0][j], 1e-4) << "item " << i << " token " << j;
  }
}

}  // namespace
}  // namespace kbrl::lm
