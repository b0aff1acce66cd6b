// KeyedWork (harness/record/keyed_work.h): where identical candidates meet, for evaluate_actions
// and kbrl serve's scheduler alike.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <harness/record/keyed_work.h>

namespace kbrl {
namespace {

struct Store {  // a known-records store as the scheduler's: find returns a copy
  std::map<std::string, EvalRecord> records;
  std::optional<EvalRecord> find(const std::string& key) const {
    auto it = records.find(key);
    return it == records.end() ? std::nullopt : std::optional<EvalRecord>(it->second);
  }
  void remember(const std::string& key, const EvalRecord& r) { records[key] = r; }
};
using Work = KeyedWork<int, Store>;

EvalRecord record(const std::string& key, Outcome outcome) {
  EvalRecord r;
  r.key = key;
  r.outcome = outcome;
  return r;
}

TEST(KeyedWork, TheFirstLeadsTheRestJoinAndAllAreAnsweredLeaderFirst) {
  Work work(Store{});
  EXPECT_EQ(work.claim("a", 1), Work::Claim::leads);
  EXPECT_EQ(work.claim("a", 2), Work::Claim::joined);
  EXPECT_EQ(work.claim("b", 3), Work::Claim::leads);
  EXPECT_EQ(work.claim("a", 4), Work::Claim::joined);
  EXPECT_TRUE(work.in_flight("a"));
  EXPECT_EQ(work.finish("a", record("a", Outcome::ok)), (std::vector<int>{1, 2, 4}));
  EXPECT_FALSE(work.in_flight("a"));
  // Known now: answered at once with the record, never in flight again.
  std::optional<EvalRecord> known;
  EXPECT_EQ(work.claim("a", 5, &known), Work::Claim::known);
  ASSERT_TRUE(known.has_value());
  EXPECT_EQ(known->key, "a");
  EXPECT_FALSE(work.in_flight("a"));
  EXPECT_EQ(work.finish("b", record("b", Outcome::wrong_answer)), (std::vector<int>{3}));
  EXPECT_EQ(work.known().records.size(), 2u);
}

TEST(KeyedWork, AFaultNotRememberedAndAReleasedKeyAreTriedAgain) {
  Work work(Store{});
  ASSERT_EQ(work.claim("a", 1), Work::Claim::leads);
  ASSERT_EQ(work.claim("a", 2), Work::Claim::joined);
  EXPECT_EQ(work.finish("a", record("a", Outcome::harness_error), /*remember=*/false), (std::vector<int>{1, 2}));
  EXPECT_EQ(work.claim("a", 3), Work::Claim::leads);  // a harness fault: tried again
  EXPECT_EQ(work.release("a"), (std::vector<int>{3}));  // e.g. given back to the queue
  EXPECT_TRUE(work.release("a").empty());
  EXPECT_EQ(work.claim("a", 4), Work::Claim::leads);
  EXPECT_TRUE(work.known().records.empty());
}

}  // namespace
}  // namespace kbrl
