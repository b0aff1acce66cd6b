// The scheduler's batching rule (serve/fair_share.h): one item per client in turn, and at most
// --client-batch items of one client in a batch, so a client sending many compile bombs holds at
// most that many compiles of a GPU's batch, whoever else is queued.
#include <gtest/gtest.h>

#include <serve/fair_share.h>

namespace kbrl::serving {
namespace {

using Queues = std::map<std::string, std::deque<int>>;

TEST(FairShare, ClientsTakeTurnsFromWhereTheLastBatchStopped) {
  Queues queues{{"a", {1, 2, 3}}, {"b", {10, 20}}};
  std::string next;
  size_t queued = 5;
  EXPECT_EQ(take_fair_batch(queues, next, queued, 3, 64), (std::vector<int>{1, 10, 2}));
  EXPECT_EQ(queued, 2u);
  EXPECT_EQ(take_fair_batch(queues, next, queued, 3, 64), (std::vector<int>{20, 3}));
  EXPECT_EQ(queued, 0u);
  EXPECT_TRUE(queues.empty());
}

TEST(FairShare, OneClientGetsAtMostItsShareOfABatch) {
  Queues queues{{"bombs", {1, 2, 3, 4, 5, 6}}};
  std::string next;
  size_t queued = 6;
  EXPECT_EQ(take_fair_batch(queues, next, queued, 64, 2), (std::vector<int>{1, 2}));  // alone: still 2
  EXPECT_EQ(queued, 4u);
  queues["honest"] = {100, 200, 300};
  queued += 3;
  EXPECT_EQ(take_fair_batch(queues, next, queued, 64, 2), (std::vector<int>{100, 3, 200, 4}));
  EXPECT_EQ(take_fair_batch(queues, next, queued, 64, 2), (std::vector<int>{300, 5, 6}));
  EXPECT_EQ(queued, 0u);
}

TEST(FairShare, NoCapIsTheWholeBatch) {
  Queues queues{{"a", {1, 2, 3, 4}}};
  std::string next;
  size_t queued = 4;
  EXPECT_EQ(take_fair_batch(queues, next, queued, 64, 64).size(), 4u);
}

}  // namespace
}  // namespace kbrl::serving
