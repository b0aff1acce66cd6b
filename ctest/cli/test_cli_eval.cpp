// `kbrl eval` and `kbrl replay` as a user runs them. Without a GPU: bad input fails with a clear
// error and exit 2, a compile error is still reported, a runnable candidate says "no GPU". The gpu
// cases (KbrlCliGpu) run only where there is a GPU.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_testing.h"
#include <harness/gpu/gpu_session.h>
#include <harness/record/eval_record.h>
#include <nlohmann/json.hpp>

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

// --kernel takes a regular file of at most 16 MiB: /dev/zero used to be read without end and a
// FIFO to block; both are now input errors (exit 2, `kbrl: error: ...`).
TEST(CliEval, KernelMustBeARegularFileOfBoundedSize) {
  const auto dir = std::filesystem::temp_directory_path() / ("kbrl-cli-kernel-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "fifo.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = run_cli_bounded("eval --task 19 --arch sm_90a --kernel " + fifo.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: candidate file '" + fifo.string() +
                          "' is a FIFO (named pipe), not a regular file"),
            std::string::npos) << r.output;
  r = run_cli_bounded("eval --task 19 --arch sm_90a --kernel /dev/zero", "ulimit -d 8388608");
  EXPECT_EQ(r.status, 2) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("'/dev/zero' is a character device, not a regular file"), std::string::npos)
      << r.output.substr(0, 2000);
  const auto big = dir / "big.cu";
  std::ofstream(big) << "// kbrl: launch k grid=1 block=32 args=in:x\n";
  std::filesystem::resize_file(big, (16u << 20) + 1);  // sparse
  r = run_cli_bounded("eval --task 19 --arch sm_90a --kernel " + big.string());
  EXPECT_EQ(r.status, 2) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("has 16777217 bytes: at most 16777216 (16 MiB) are read"), std::string::npos)
      << r.output.substr(0, 2000);
  std::filesystem::remove_all(dir);
}

// A plan expression 30,000 parentheses deep crashed `kbrl eval` (segmentation fault, no message);
// a long one with a bad token at its end echoed all of it.
TEST(CliEval, DeepOrLongPlanExpressionsAreShortErrors) {
  const std::string source = "extern \"C\" __global__ void k(const float* x, float* y) {}\n";
  const std::string deep = temp("kbrl-cli-deep-plan.cu");
  std::ofstream(deep) << "// kbrl: launch k grid=" << std::string(30000, '(') << "1" << std::string(30000, ')')
                      << " block=32 args=in:x,out:y\n" << source;
  auto r = run_cli_bounded("eval --task 19 --arch sm_90a --kernel " + deep);
  EXPECT_EQ(r.status, 2) << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("kbrl: error: kbrl-cli-deep-plan.cu:1: bad expression"), std::string::npos)
      << r.output.substr(0, 2000);
  EXPECT_NE(r.output.find("longer than 4096 characters"), std::string::npos) << r.output.substr(0, 2000);
  EXPECT_LT(r.output.size(), 1000u);
  const std::string nested = temp("kbrl-cli-nested-plan.cu");
  std::ofstream(nested) << "// kbrl: launch k grid=" << std::string(65, '-') << "1 block=32 args=in:x,out:y\n"
                        << source;
  r = run_cli_bounded("eval --task 19 --arch sm_90a --kernel " + nested);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("expression nesting deeper than 64"), std::string::npos) << r.output;
  std::string sum = "1";
  while (sum.size() < 4000) sum += "+1";
  const std::string bad_end = temp("kbrl-cli-bad-end-plan.cu");
  std::ofstream(bad_end) << "// kbrl: launch k grid=" << sum << "+q block=32 args=in:x,out:y\n" << source;
  r = run_cli_bounded("eval --task 19 --arch sm_90a --kernel " + bad_end);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown name 'q'"), std::string::npos) << r.output;
  EXPECT_LT(r.output.size(), 500u) << r.output;
}

TEST(CliEval, CompileErrorIsReportedAsAnOutcome) {
  const std::string broken = temp("kbrl-cli-broken.cu");
  std::ofstream(broken) << "// kbrl: launch k grid=1 block=32 args=in:x,out:y\n"
                           "extern \"C\" __global__ void k(const float* x, float* y) { nonsense }\n";
  const std::string json = temp("kbrl-cli-broken.json");
  auto r = run_cli("eval --task 19 --arch sm_90a --kernel " + broken + " --json " + json);
  EXPECT_EQ(r.status, 4) << r.output;  // evaluated, not correct
  EXPECT_NE(r.output.find("outcome   compile_error"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--- compile log ---"), std::string::npos) << r.output;
  // The messages point into the user's file (line 2 holds the error), not NVRTC's program name.
  EXPECT_NE(r.output.find(broken + "(2): error"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("candidate.cu"), std::string::npos) << r.output;
  // Without --arch and without a GPU the default architecture is used: still a compile error.
  if (!gpu_available()) {
    const auto d = run_cli("eval --task 19 --kernel " + broken);
    EXPECT_EQ(d.status, 4) << d.output;
    EXPECT_NE(d.output.find(broken + "(2): error"), std::string::npos) << d.output;
  }
  std::ifstream in(json);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"outcome\": \"compile_error\""), std::string::npos) << text;
}

TEST(CliEval, RunnableCandidateWithoutAGpuCompilesAndSaysSo) {
  if (gpu_available()) GTEST_SKIP() << "this machine has a GPU";
  auto r = run_cli("eval --task 19 --kernel " + kernel("known_good/relu.cu"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("compiling"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("relu.cu for sm_90 only"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("outcome   not_run: compiled for sm_90; no GPU to run it"), std::string::npos) << r.output;
  r = run_cli("eval --task 19 --arch sm_80 --kernel " + kernel("known_good/relu.cu"));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("compiled for sm_80"), std::string::npos) << r.output;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// `--json` naming the kernel file used to overwrite the kernel with the record. Now refused (exit 2)
// before evaluating, by any name of the file, and the kernel is left as it was.
TEST(CliEval, JsonNamingTheKernelFileIsRefused) {
  const auto dir = fresh_dir("kbrl-cli-json", "self");
  const std::string file = (dir / "relu.cu").string();
  std::filesystem::copy_file(kernel("known_good/relu.cu"), file);
  const std::string before = read_bytes(file);
  for (const std::string& json : {file, (dir / "." / "relu.cu").string(), (dir / ".." / "self" / "relu.cu").string()}) {
    const CliResult r = run_cli("eval --task 19 --arch sm_90 --kernel " + file + " --json " + json);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("kbrl: error: --json " + json + " is the kernel file being evaluated"), std::string::npos)
        << r.output;
    EXPECT_EQ(r.output.find("outcome"), std::string::npos) << "refused before evaluating: " << r.output;
    EXPECT_EQ(read_bytes(file), before);
  }
}

// A --json file that cannot be written: a missing folder used to exit 2 after evaluating, /dev/full
// 1. Both exit 1 now (as a failed write to stdout does, `kbrl eval --help` says so); the missing
// folder before anything is evaluated.
TEST(CliEval, AJsonFileThatCannotBeWrittenExits1) {
  const std::string relu = kernel("known_good/relu.cu");
  auto r = run_cli("eval --task 19 --arch sm_90 --kernel " + relu + " --json /no/such/folder/r.json");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: cannot open --json file /no/such/folder/r.json: No such file or directory"),
            std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("outcome"), std::string::npos) << "failed before evaluating: " << r.output;
  r = run_cli("eval --task 19 --arch sm_90 --kernel " + relu + " --json /dev/full");
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: writing the record to the --json file /dev/full: No space left on device"),
            std::string::npos) << r.output;
  EXPECT_NE(run_cli("eval --help").output.find("a --json file that cannot be opened or written"), std::string::npos);
}

// A candidate file that is not UTF-8, and plain-ASCII ones that put raw bytes into NVRTC's log (a
// #line file name, a #pragma message): `kbrl eval --json` used to exit 3 (the record did not
// encode). Now each exits per its outcome, and the JSON keeps the file's exact bytes.
TEST(CliEval, BytesThatAreNotUtf8AreWrittenToTheJsonRecord) {
  const auto dir = fresh_dir("kbrl-cli-json", "bytes");
  const std::string relu = read_bytes(kernel("known_good/relu.cu"));
  const std::string json = (dir / "r.json").string();
  struct Case {
    std::string name, text;
    int status;
  };
  const Case cases[] = {
      {"latin1.cu", "// caf\xe9 \xff\n" + relu, 0},
      {"pragma.cu", relu + "#pragma message(\"\\xff\\xfe\")\n", 0},
      {"line.cu", "// kbrl: launch k grid=1 block=32 args=in:x,out:y\n#line 1 \"\\xff.cu\"\n"
                  "extern \"C\" __global__ void k(const float* x, float* y) { nonsense }\n", 4},
  };
  for (const Case& c : cases) {
    const std::string file = (dir / c.name).string();
    std::ofstream(file, std::ios::binary) << c.text;
    const CliResult r = run_cli("eval --task 19 --arch sm_90 --kernel " + file + " --json " + json);
    EXPECT_EQ(r.status, c.status) << c.name << ": " << r.output;
    const nlohmann::json record = nlohmann::json::parse(read_bytes(json), nullptr, false);
    ASSERT_TRUE(record.is_object()) << c.name;
    if (c.name == "latin1.cu") {
      ASSERT_TRUE(record.contains("raw_action_base64")) << record.dump().substr(0, 300);
      EXPECT_EQ(record_from_json(record).raw_action, c.text);
    }
  }
}

// A compile child that ends with no result and no limit reached (seen on a loaded GPU host: exit
// status 2, the same source compiling the next time) is run again, up to twice: once is not the
// candidate's compile error; every time is, with what the child printed. The child here is a script
// (KBRL_NVRTC_CHILD) that fails its first FAILS starts, then becomes the real one.
TEST(CliEval, ACompileChildThatDiesUnexplainedIsRunAgain) {
  const auto dir = fresh_dir("kbrl-cli-flaky-child", "runs");
  const std::string relu = read_bytes(kernel("known_good/relu.cu"));
  for (const int fails : {1, 3}) {
    SCOPED_TRACE(fails);
    const std::string count = (dir / ("count" + std::to_string(fails))).string();
    const std::string script = (dir / ("child" + std::to_string(fails) + ".sh")).string();
    std::ofstream(script) << "#!/bin/sh\n"
                          << "n=$(/bin/cat " << count << " 2>/dev/null || echo 0)\n"
                          << "echo $((n + 1)) > " << count << "\n"
                          << "if [ \"$n\" -lt " << fails << " ]; then echo \"flaky child start $n\"; exit 2; fi\n"
                          << "exec " << KBRL_NVRTC_CHILD_PATH << " \"$@\"\n";
    ::chmod(script.c_str(), 0755);
    // A source of its own (a comment naming this run), so no cached compile answers for it.
    const std::string file = (dir / ("relu" + std::to_string(fails) + ".cu")).string();
    std::ofstream(file) << "// flaky child run " << ::getpid() << " " << fails << "\n" << relu;
    const std::string json = (dir / ("r" + std::to_string(fails) + ".json")).string();
    const CliResult r = run_shell("KBRL_NVRTC_CHILD=" + script + " " + KBRL_CLI + " eval --task 19 --arch sm_90 --kernel " +
                                  file + " --json " + json + " 2>&1");
    const nlohmann::json record = nlohmann::json::parse(read_bytes(json), nullptr, false);
    ASSERT_TRUE(record.is_object()) << r.output;
    if (fails == 1) {
      EXPECT_NE(record.at("outcome"), "compile_error") << r.output;
      EXPECT_EQ(read_bytes(count), "2\n");
    } else {
      EXPECT_EQ(record.at("outcome"), "compile_error") << r.output;
      EXPECT_NE(r.output.find("without a result"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("the same on 3 runs"), std::string::npos) << r.output;
      EXPECT_NE(r.output.find("flaky child start 2"), std::string::npos) << r.output;
      EXPECT_EQ(read_bytes(count), "3\n");
    }
  }
}

TEST(CliContract, VersionErrorsAndExitCodes) {
  auto r = run_cli("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output.rfind("kbrl ", 0), 0u) << r.output;
  r = run_cli("tasks --bogus");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: "), std::string::npos) << r.output;
  r = run_cli("eval --task 19");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kbrl: error: --kernel is required"), std::string::npos) << r.output;
  // (run_cli sends stderr where stdout goes: here to /dev/full too, so only the status is seen)
  EXPECT_EQ(run_cli("tasks --csv > /dev/full").status, 1);
  EXPECT_EQ(run_cli("tasks --csv > /dev/null").status, 0);
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
  ASSERT_EQ(r.status, 4) << r.output;  // evaluated, not correct
  EXPECT_NE(r.output.find("outcome   wrong_answer"), std::string::npos) << r.output;
  r = run_cli("replay " + log);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("2 of 2 records replayed to the same outcome"), std::string::npos) << r.output;
  std::printf("%s\n", r.output.c_str());
}

}  // namespace
}  // namespace kbrl::testing
