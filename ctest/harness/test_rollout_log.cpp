// The rollout log: append-only JSONL, repair of a torn final line, resume by key.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include <harness/record/rollout_log.h>
#include <kernels/candidate.h>
#include "harness_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

class RolloutLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("kbrl_rollout_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    path_ = dir_ / "runs" / "rollouts.jsonl";
  }
  void TearDown() override { fs::remove_all(dir_); }

  static EvalRecord record(int i) {
    EvalRecord r = testing::sample_record();
    r.candidate.source += "// variant " + std::to_string(i) + "\n";
    r.key = record_key(r.candidate, Json{{"trials", 5}});
    r.reward = i;
    return r;
  }

  void append_raw(const std::string& text) {
    std::ofstream out(path_, std::ios::binary | std::ios::app);
    out << text;
  }

  std::string contents() const {
    std::ifstream in(path_, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  fs::path dir_;
  fs::path path_;
};

TEST(RecordKey, IsAStableHashOfTaskCandidateAndSettings) {
  const Candidate candidate = testing::sample_record().candidate;
  const Json settings = Json::parse(R"({"atol": 1e-4, "trials": 5, "mode": "full"})");
  const std::string key = record_key(candidate, settings);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(record_key(candidate, Json::parse(R"({"mode": "full", "trials": 5, "atol": 1e-4})")),
            key);  // key order does not matter
  Candidate other = candidate;
  other.launches[0].block.x = 128;
  EXPECT_NE(record_key(other, settings), key);
  EXPECT_NE(record_key(candidate, Json::parse(R"({"atol": 1e-2, "trials": 5, "mode": "full"})")),
            key);
  EXPECT_NE(record_key(candidate.task_id + 1, Json(candidate), settings), key);
  // SHA-256 of the fields "0", "null", "null", each after its 8-byte little-endian length
  // (computed independently, with Python's hashlib): pins the key's definition.
  EXPECT_EQ(record_key(0, Json(), Json()),
            "2f1fb30b8e406bf2eb93e437cba6fe80c3ceb6948d255d268f4505ca16f70ba5");
}

TEST_F(RolloutLogTest, RoundTrip) {
  {
    RolloutLog log(path_);
    EXPECT_EQ(log.size(), 0u);
    for (int i = 0; i < 3; ++i) log.append(record(i));
    EXPECT_EQ(log.size(), 3u);
    EXPECT_TRUE(log.contains(record(1).key));
  }
  const std::string text = contents();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);  // one line per record
  RolloutLog log(path_);
  EXPECT_EQ(log.size(), 3u);
  EXPECT_EQ(log.repaired_bytes(), 0u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(log.contains(record(i).key));
  EXPECT_FALSE(log.contains(record(3).key));
  const std::vector<EvalRecord> records = read_rollout_log(path_);
  ASSERT_EQ(records.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(records[static_cast<size_t>(i)], record(i));
}

TEST_F(RolloutLogTest, TruncatedFinalLineIsRepairedAtOpen) {
  { RolloutLog log(path_); log.append(record(0)); log.append(record(1)); }
  const std::string good = contents();
  const std::string torn = Json(record(2)).dump().substr(0, 100);
  append_raw(torn);
  EXPECT_EQ(read_rollout_log(path_).size(), 2u);  // reading alone skips it, changes nothing
  EXPECT_EQ(contents(), good + torn);
  {
    RolloutLog log(path_);
    EXPECT_EQ(log.size(), 2u);
    EXPECT_EQ(log.repaired_bytes(), torn.size());
    EXPECT_FALSE(log.contains(record(2).key));
    EXPECT_EQ(contents(), good);
    log.append(record(2));
  }
  const std::vector<EvalRecord> records = read_rollout_log(path_);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[2], record(2));
}

TEST_F(RolloutLogTest, FinalLineThatIsNotARecordIsRepaired) {
  { RolloutLog log(path_); log.append(record(0)); }
  const std::string good = contents();
  append_raw(std::string(16, '\0') + "\n");  // what a power loss can leave
  RolloutLog log(path_);
  EXPECT_EQ(log.size(), 1u);
  EXPECT_EQ(log.repaired_bytes(), 17u);
  EXPECT_EQ(contents(), good);
}

TEST_F(RolloutLogTest, BadLineInTheMiddleIsAnErrorAndTheFileIsLeftAlone) {
  { RolloutLog log(path_); log.append(record(0)); }
  append_raw("{\"not\": \"a record\"}\n");
  { std::ofstream(path_, std::ios::app) << Json(record(1)).dump() << "\n"; }
  const std::string before = contents();
  try {
    RolloutLog log(path_);
    FAIL() << "opened a log with a bad line";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":2:"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read_rollout_log(path_), InputError);
  EXPECT_EQ(contents(), before);
}

TEST_F(RolloutLogTest, ResumeSkipsWhatIsLogged) {
  int evaluations = 0;
  const auto run = [&](int kill_after) {
    RolloutLog log(path_);
    for (int i = 0; i < 5; ++i) {
      const EvalRecord r = record(i);
      if (log.contains(r.key)) continue;
      if (evaluations == kill_after) {
        append_raw(Json(r).dump().substr(0, 50));  // killed while writing
        return;
      }
      ++evaluations;
      log.append(r);
    }
  };
  run(3);
  EXPECT_EQ(evaluations, 3);
  run(-1);
  EXPECT_EQ(evaluations, 5);  // only the two missing ones were evaluated
  EXPECT_EQ(read_rollout_log(path_).size(), 5u);
}

TEST_F(RolloutLogTest, KilledWriterLosesNothingWritten) {
  fs::create_directories(path_.parent_path());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      RolloutLog log(path_);
      for (int i = 0;; ++i) log.append(record(i));
    } catch (...) {
    }
    ::_exit(1);
  }
  while (!fs::exists(path_) || fs::file_size(path_) < 20'000) ::usleep(1000);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  RolloutLog log(path_);
  EXPECT_GE(log.size(), 1u);
  const std::vector<EvalRecord> records = read_rollout_log(path_);
  ASSERT_EQ(records.size(), log.size());
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(records[i], record(static_cast<int>(i)));
}

TEST_F(RolloutLogTest, OneWriterAtATime) {
  RolloutLog log(path_);
  EXPECT_THROW(RolloutLog second(path_), InputError);
  RolloutLog moved = std::move(log);
  moved.append(record(0));
  EXPECT_EQ(moved.size(), 1u);
}

// A source with 0xFF bytes goes through the log and comes back byte for byte (it used to come back
// with U+FFFD in their place, so a replay evaluated other bytes), on one valid line; its key is not
// that of the source with U+FFFD written in.
TEST_F(RolloutLogTest, BytesThatAreNotUtf8RoundTripExactly) {
  EvalRecord r = record(0);
  r.candidate.source = "// \xff\xfe\n" + r.candidate.source;
  r.raw_action = r.candidate.source;
  r.compile.log = "bad byte \xff here\nsecond line";
  r.key = record_key(r.candidate, Json{{"trials", 5}});
  EvalRecord replaced = r;
  replaced.candidate.source = "// \xef\xbf\xbd\xef\xbf\xbd\n" + record(0).candidate.source;
  EXPECT_NE(record_key(replaced.candidate, Json{{"trials", 5}}), r.key);
  {
    RolloutLog log(path_);
    log.append(r);
    ASSERT_TRUE(log.find(r.key).has_value());
    EXPECT_EQ(log.find(r.key)->candidate.source, r.candidate.source);
  }
  const std::vector<EvalRecord> records = read_rollout_log(path_);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], r);
  EXPECT_EQ(records[0].raw_action, r.raw_action);
  const std::string text = contents();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(text.find('\xff'), std::string::npos) << "the line is UTF-8";
  RolloutLog reopened(path_);  // the line reads as a record: nothing repaired
  EXPECT_EQ(reopened.size(), 1u);
  EXPECT_EQ(reopened.repaired_bytes(), 0u);
}

TEST_F(RolloutLogTest, RecordWithoutKeyIsRejected) {
  RolloutLog log(path_);
  EvalRecord r = record(0);
  r.key.clear();
  EXPECT_THROW(log.append(r), InputError);
  EXPECT_EQ(log.size(), 0u);
}

}  // namespace
}  // namespace kbrl
