// `kbrl eval` and `kbrl replay` as a user runs them. Without a GPU: bad input fails with a clear
// error and exit 2, a compile error is still reported, a runnable candidate says "no GPU". The gpu
// cases (KbrlCliGpu) run only where there is a GPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_testing.h"
#include "harness/gpu_session.h"

namespace kbrl::testing {
namespace {

std::string kernel(const std::string& relative) {
  return std::string(KBRL_SOURCE_DIR) + "/kernels/" + relative;
}

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(CliEval, BadInputFailsClearly) {
  auto r = run_cli("eval --task 101 --kernel " + kernel("known_good/relu.cu"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown task id 101"), std::string::npos) << r.output;
  r = run_cli("eval --task 19 --kernel /no/such/file.cu");
  EXPECT_NE(r.status, 0);
  r = run_cli("eval --task 19 --kernel " + kernel("known_good/relu.cu") + " --mode slow");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("slow"), std::string::npos) << r.output;
  // A plan naming a tensor the task does not have: the file's line is named.
  const std::string bad = temp("kbrl-cli-bad-plan.cu");
  std::ofstream(bad) << "// kbrl: launch k grid=1 block=32 args=in:nope\n"
                        "extern \"C\" __global__ void k(const float* x) {}\n";
  r = run_cli("eval --task 19 --kernel " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find(":1:"), std::string::npos) << r.output;
}

TEST(CliEval, CompileErrorIsReportedAsAnOutcome) {
  const std::string broken = temp("kbrl-cli-broken.cu");
  std::ofstream(broken) << "// kbrl: launch k grid=1 block=32 args=in:x,out:y\n"
                           "extern \"C\" __global__ void k(const float* x, float* y) { nonsense }\n";
  const std::string json = temp("kbrl-cli-broken.json");
  auto r = run_cli("eval --task 19 --arch sm_90a --kernel " + broken + " --json " + json);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("outcome   compile_error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--- compile log ---"), std::string::npos) << r.output;
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"outcome\": \"compile_error\""), std::string::npos) << text;
}

TEST(CliEval, RunnableCandidateWithoutAGpuSaysSo) {
  if (gpu_available()) GTEST_SKIP() << "this machine has a GPU";
  auto r = run_cli("eval --task 19 --arch sm_90a --kernel " + kernel("known_good/relu.cu"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("no GPU"), std::string::npos) << r.output;
}

TEST(KbrlCliGpu, EvalLogsAndReplayAgrees) {
  std::string reason;
  if (!gpu_available(&reason)) GTEST_SKIP() << "no GPU: " << reason;
  const std::string log = temp("kbrl-cli-eval.jsonl");
  std::filesystem::remove(log);
  auto r = run_cli("eval --task 19 --kernel " + kernel("known_good/relu.cu") + " --log " + log);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("outcome   ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("speedup"), std::string::npos) << r.output;
  r = run_cli("eval --task 19 --kernel " + kernel("adversarial/nan_output.cu") + " --log " + log);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("outcome   wrong_answer"), std::string::npos) << r.output;
  r = run_cli("replay " + log);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 of 2 records replayed to the same outcome"), std::string::npos) << r.output;
  std::printf("%s\n", r.output.c_str());
}

}  // namespace
}  // namespace kbrl::testing
