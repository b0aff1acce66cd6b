// `kbrl tasks`, `kbrl splits` and `kbrl prompt` as a user runs them.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "cli_testing.h"

namespace kbrl::testing {
namespace {

TEST(CliTasks, CsvHasHeaderAndHundredRows) {
  auto r = run_cli("tasks --csv");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_lines(r.output), 101);
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')),
            "id,name,family,split,scale,inputs,outputs,parameters,flops,min_bytes");
  EXPECT_NE(r.output.find("\n19,19_ReLU,elementwise,"), std::string::npos);
}

TEST(CliTasks, SmallScaleAndSplitFilter) {
  auto r = run_cli("tasks --csv --scale small --split eval");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_lines(r.output), 21);
  EXPECT_NE(r.output.find(",small,"), std::string::npos);
}

TEST(CliTasks, TableNamesTheScale) {
  auto r = run_cli("tasks --id 1 --id 19");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 tasks at scale kernelbench"), std::string::npos) << r.output;
}

TEST(CliTasks, UnknownIdFailsClearly) {
  auto r = run_cli("tasks --id 101");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown task id 101"), std::string::npos) << r.output;
}

TEST(CliTasks, UnknownOptionAndBadValuesFail) {
  EXPECT_NE(run_cli("tasks --bogus").status, 0);
  EXPECT_NE(run_cli("tasks --id seven").status, 0);
  auto r = run_cli("tasks --scale huge");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown scale 'huge'"), std::string::npos) << r.output;
  EXPECT_NE(run_cli("nosuchcommand").status, 0);
}

TEST(CliSplits, ListsTheNamedSplits) {
  auto r = run_cli("splits");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* name : {"train", "eval", "subset1", "subset2", "all"})
    EXPECT_NE(r.output.find(name), std::string::npos) << name;
}

// `kbrl prompt`: what a language-model policy sends (kernels/prompt.h).
TEST(CliPrompt, PrintsVersionSystemUserAndTheSignature) {
  auto r = run_cli("prompt --task 19");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')), "kbrl-prompt-1/body/shots=1/system=reasoning");
  const size_t system = r.output.find("\n=== system ===\n"), user = r.output.find("\n=== user ===\n");
  ASSERT_NE(system, std::string::npos);
  ASSERT_NE(user, std::string::npos);
  EXPECT_LT(system, user);
  EXPECT_NE(r.output.find("extern \"C\" __global__ void kbrl_forward(const float* __restrict__ x, "
                          "float* __restrict__ y) {"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("constexpr long long x_size1 = 393216LL;"), std::string::npos);

  auto small = run_cli("prompt --task 19 --scale small --style file --shots 0 --system none --json");
  ASSERT_EQ(small.status, 0) << small.output;
  EXPECT_EQ(small.output.rfind("{\n  \"version\": \"kbrl-prompt-1/file/shots=0/system=none\",", 0), 0u)
      << small.output.substr(0, 200);
  EXPECT_NE(small.output.find("\"system\": \"\""), std::string::npos);
  EXPECT_NE(small.output.find("[64,1000]"), std::string::npos);
}

TEST(CliPrompt, FeedbackFromTheFirstRecordOfALog) {
  const std::string path = ::testing::TempDir() + "kbrl_prompt_feedback.jsonl";
  {
    std::ofstream out(path);
    out << R"({"schema_version": 2, "key": "00", "task_id": 19, "task_name": "19_ReLU", )"
           R"("scale": "small", "policy": null, "raw_action": "", "action": {"kind": "text", )"
           R"("code": "", "token_count": 0, "prompt_version": ""}, "candidate": {"launches": [], )"
           R"("options": [], "scratch": [], "source": "", "task_id": 19}, "compile": {"ok": false, )"
           R"("log": "kbrl_model.cu(4): error: identifier \"yy\" is undefined", "seconds": 0.1, )"
           R"("cache_hit": false, "precision_findings": []}, "trials": [], "runtime": null, )"
           R"("reference": null, "speedup": 0.0, "reward": 0.0, "outcome": "compile_error", )"
           R"("outcome_detail": "identifier \"yy\" is undefined", "flags": [], "device": "", )"
           R"("kbrl_version": "0.1.0", "timestamp": "2026-03-05T12:34:56.789Z"})"
        << "\n{\"second\": \"line\"}\n";
  }
  auto r = run_cli("prompt --task 19 --feedback " + path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("/feedback/teacher\n"), std::string::npos);  // a teacher's prompt, as SDPO builds it
  EXPECT_NE(r.output.find("\nCorrectly solve the original question.\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("outcome: compile_error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kbrl_model.cu(4): error: identifier \"yy\" is undefined"), std::string::npos);
  auto prompt_only = run_cli("prompt --task 19 --teacher");
  EXPECT_EQ(prompt_only.output.substr(0, prompt_only.output.find('\n')),
            "kbrl-prompt-1/body/shots=1/system=reasoning/teacher");
  auto other_task = run_cli("prompt --task 20 --feedback " + path);
  EXPECT_EQ(other_task.status, 2);
  EXPECT_NE(other_task.output.find("the record is of task 19, not of task 20"), std::string::npos);
  std::filesystem::remove(path);
}

TEST(CliPrompt, BadInputExitsTwo) {
  for (const char* args : {"prompt --task 101", "prompt --task 19 --shots 5",
                           "prompt --task 19 --style prose", "prompt --task 19 --system chatty",
                           "prompt --task 19 --feedback /nonexistent/record.json",
                           "prompt --task 19 --demonstration /nonexistent/solution.cu"}) {
    auto r = run_cli(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("kbrl: error:"), std::string::npos) << args << "\n" << r.output;
  }
  const std::string path = ::testing::TempDir() + "kbrl_prompt_not_a_record.json";
  std::ofstream(path) << "{\"task_id\": 19}\n";
  auto r = run_cli("prompt --task 19 --feedback " + path);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: " + path), std::string::npos) << r.output;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kbrl::testing
