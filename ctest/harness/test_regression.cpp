// Regression checks of a kernel suite (harness/regression.h): the machine
// check, the baseline's JSON, JUnit XML, the Markdown summary and reading a suite (the decision:
// test_regression_decide.cpp).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include <ctest/text_testing.h>
#include <harness/record/eval_record.h>
#include <harness/regression.h>
#include "harness_testing.h"
#include "regression_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using kbrl::testing::contains;
using kbrl::testing::timed;
using kbrl::testing::with_outcome;
using Json = nlohmann::json;

// --- machine_mismatch ---

MachineInfo h100() { return {"NVIDIA H100 80GB HBM3", "sm_90", "12.4", "0.1.0", "abc", false}; }

TEST(RegressionMachine, SameMachineMatches) {
  EXPECT_EQ(machine_mismatch(h100(), h100()), "");
  MachineInfo other_commit = h100();
  other_commit.commit = "def";  // kbrl's own version is what a check is for
  EXPECT_EQ(machine_mismatch(h100(), other_commit), "");
}

TEST(RegressionMachine, AnotherGpuDriverArchOrCompileOnlyIsNamed) {
  MachineInfo gpu = h100();
  gpu.gpu = "NVIDIA A100-SXM4-80GB";
  std::string why = machine_mismatch(h100(), gpu);
  EXPECT_TRUE(contains(why, "NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(contains(why, "NVIDIA A100-SXM4-80GB"));

  MachineInfo driver = h100();
  driver.driver = "12.8";
  why = machine_mismatch(h100(), driver);
  EXPECT_TRUE(contains(why, "12.4"));
  EXPECT_TRUE(contains(why, "12.8"));

  MachineInfo arch = h100();
  arch.arch = "sm_80";
  why = machine_mismatch(h100(), arch);
  EXPECT_TRUE(contains(why, "sm_90"));
  EXPECT_TRUE(contains(why, "sm_80"));

  MachineInfo compile_only{"", "sm_90", "", "0.1.0", "abc", true};
  why = machine_mismatch(h100(), compile_only);
  EXPECT_TRUE(contains(why, "timed on a GPU"));
  EXPECT_TRUE(contains(why, "compiles only"));
  why = machine_mismatch(compile_only, h100());
  EXPECT_TRUE(contains(why, "compiled only"));
  EXPECT_TRUE(contains(why, "runs on a GPU"));
}

// --- the baseline's JSON ---

Baseline sample_baseline() {
  Baseline b;
  b.suite.name = "mine";
  b.suite.scale = "small";
  b.suite.mode = "fast";
  b.suite.inputs = "kernelbench";
  b.suite.tolerance = "legacy";
  b.machine = h100();
  b.timestamp = "2026-03-05T12:34:56.789Z";
  b.entries.push_back({"relu.cu", 19, std::string(64, 'a'), testing::sample_record()});
  b.entries.push_back({"softmax.cu", 23, std::string(64, 'b'), with_outcome(Outcome::compile_error, false)});
  return b;
}

TEST(RegressionBaseline, RoundTripsThroughJson) {
  const Baseline b = sample_baseline();
  const Json j = to_json(b);
  EXPECT_EQ(j.at("format"), "kbrl-baseline-1");
  const Baseline back = baseline_from_json(Json::parse(j.dump()), "base.json");
  EXPECT_EQ(back.suite.name, b.suite.name);
  EXPECT_EQ(back.suite.scale, b.suite.scale);
  EXPECT_EQ(back.suite.mode, b.suite.mode);
  EXPECT_EQ(back.suite.inputs, b.suite.inputs);
  EXPECT_EQ(back.suite.tolerance, b.suite.tolerance);
  EXPECT_EQ(back.machine, b.machine);
  EXPECT_EQ(back.timestamp, b.timestamp);
  ASSERT_EQ(back.entries.size(), b.entries.size());
  for (size_t i = 0; i < b.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].name, b.entries[i].name) << i;
    EXPECT_EQ(back.entries[i].task_id, b.entries[i].task_id) << i;
    EXPECT_EQ(back.entries[i].sha256, b.entries[i].sha256) << i;
    EXPECT_TRUE(back.entries[i].record == b.entries[i].record) << i;
  }
}

void expect_input_error(const Json& j, const std::string& part) {
  try {
    baseline_from_json(j, "my-base.json");
    ADD_FAILURE() << "no error for " << j.dump();
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "my-base.json")) << j.dump();
    EXPECT_TRUE(contains(e.what(), part)) << j.dump();
  }
}

TEST(RegressionBaseline, MalformedJsonIsAnInputErrorNamingTheSource) {
  expect_input_error(Json::object(), "not a kbrl baseline");
  Json j = to_json(sample_baseline());
  j["format"] = "kbrl-baseline-2";
  expect_input_error(j, "not a kbrl baseline");
  j["format"] = 1;  // not even a string
  expect_input_error(j, "not a kbrl baseline");
  expect_input_error(Json::array(), "not a kbrl baseline");
  Json no_machine = to_json(sample_baseline());
  no_machine.erase("machine");
  expect_input_error(no_machine, "machine");
  Json bad_record = to_json(sample_baseline());
  bad_record["kernels"][0]["record"]["outcome"] = "splendid";
  expect_input_error(bad_record, "splendid");
}

// --- JUnit XML ---

KernelVerdict verdict(std::string name, Verdict v, std::string detail) {
  KernelVerdict k;
  k.name = std::move(name);
  k.task_id = 19;
  k.verdict = v;
  k.detail = std::move(detail);
  k.now = with_outcome(Outcome::not_run);
  return k;
}

TEST(RegressionJunit, CountsFailuresAndEscapesDetails) {
  const std::vector<KernelVerdict> verdicts = {
      verdict("a.cu", Verdict::regression, "bad <&>\"' \x01 end"),
      verdict("b.cu", Verdict::improvement, "faster: 1.2x"),
      verdict("c.cu", Verdict::unchanged, "compiles (not timed)"),
      verdict("d.cu", Verdict::regression, "ok -> timeout"),
  };
  const std::string xml = junit_xml("mine", verdicts, 1.5);
  EXPECT_TRUE(testing::starts_with(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>"));
  EXPECT_TRUE(contains(xml, "tests=\"4\" failures=\"2\""));
  EXPECT_TRUE(contains(xml, "time=\"1.500\""));
  EXPECT_TRUE(contains(xml, "name=\"a.cu (task 19)\""));
  EXPECT_TRUE(contains(xml, "<failure message=\"bad &lt;&amp;&gt;&quot;&apos;   end\" type=\"regression\">"));
  EXPECT_TRUE(contains(xml, ">bad &lt;&amp;&gt;&quot;&apos;   end</failure>"));
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_TRUE(contains(xml, "<system-out>improvement: faster: 1.2x</system-out>"));
  EXPECT_TRUE(contains(xml, "<system-out>unchanged: compiles (not timed)</system-out>"));
  EXPECT_TRUE(contains(xml, "name=\"d.cu (task 19)\">\n    <failure message=\"ok -&gt; timeout\""));
  EXPECT_EQ(xml.find("<system-out>improvement"), xml.rfind("<system-out>improvement"));
  EXPECT_TRUE(contains(xml, "</testsuite>\n</testsuites>\n"));
  size_t cases = 0;
  for (size_t at = xml.find("<testcase "); at != std::string::npos; at = xml.find("<testcase ", at + 1)) ++cases;
  EXPECT_EQ(cases, 4u);
}

TEST(RegressionJunit, NoRegressionNoFailure) {
  const std::string xml = junit_xml("s", {verdict("a.cu", Verdict::new_kernel, "not in the baseline")}, 0);
  EXPECT_TRUE(contains(xml, "tests=\"1\" failures=\"0\""));
  EXPECT_FALSE(contains(xml, "<failure"));
  EXPECT_TRUE(contains(xml, "<system-out>new: not in the baseline</system-out>"));
}

// --- Markdown ---

TEST(RegressionMarkdown, HeaderCountsAndOneEscapedRowPerKernel) {
  KernelVerdict slower = verdict("a|b.cu", Verdict::regression, "slower: x | y");
  slower.baseline = timed(1.0, 0.98, 1.02);
  slower.now = timed(0.9, 0.88, 0.92);
  const std::vector<KernelVerdict> verdicts = {
      slower, verdict("b.cu", Verdict::improvement, "compile_error -> ok"),
      verdict("c.cu", Verdict::new_kernel, "not in the baseline: compiled")};
  const std::string md = markdown_summary("mine", h100(), verdicts);
  EXPECT_TRUE(testing::starts_with(md, "## kbrl regress: mine\n"));
  EXPECT_TRUE(contains(md, "3 kernels: 1 regressions, 1 improvements (NVIDIA H100 80GB HBM3"));
  EXPECT_TRUE(contains(md, "| kernel | task | verdict | baseline | now | detail |"));
  EXPECT_TRUE(contains(md, "| a\\|b.cu | 19 | **regression** | 1.000x [0.980, 1.020] | 0.900x [0.880, 0.920] | "
                           "slower: x \\| y |"));
  EXPECT_TRUE(contains(md, "| b.cu | 19 | improvement | - | compiled |"));
  EXPECT_TRUE(contains(md, "| c.cu | 19 | new | - |"));
  EXPECT_EQ(std::count(md.begin(), md.end(), '\n'), 4 + 2 + 3);  // title, blank, counts, blank; table head; rows
}

// --- read_suite ---

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kbrl-regression-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file, std::ios::binary) << text;
}

TEST(RegressionSuite, KnownGoodListsTwentyExistingKernels) {
  const Suite s = read_suite("known-good");
  EXPECT_EQ(s.name, "known-good");
  EXPECT_EQ(s.mode, "full");
  ASSERT_EQ(s.kernels.size(), 20u);
  for (const SuiteKernel& k : s.kernels) {
    EXPECT_TRUE(fs::is_regular_file(k.file)) << k.file;
    EXPECT_EQ(k.name, k.file.filename().string());
    EXPECT_GE(k.task_id, 1);
    EXPECT_LE(k.task_id, 100);
  }
}

TEST(RegressionSuite, AManifestResolvesFilesAgainstItsFolder) {
  const fs::path dir = scratch("manifest");
  write(dir / "relu.cu", "// relu\n");
  write(dir / "sub" / "softmax.cu", "// softmax\n");
  write(dir / "m.json", R"({"suite": "mine", "mode": "fast", "tolerance": "legacy",
    "kernels": [{"file": "relu.cu", "task": 19}, {"file": "sub/softmax.cu", "task": 23}]})");
  // Read from another working directory: the files are the manifest's neighbours, not the cwd's.
  const fs::path cwd = fs::current_path();
  fs::current_path(fs::temp_directory_path());
  const Suite s = read_suite((dir / "m.json").string());
  fs::current_path(cwd);
  EXPECT_EQ(s.name, "mine");
  EXPECT_EQ(s.mode, "fast");
  EXPECT_EQ(s.tolerance, "legacy");
  EXPECT_EQ(s.scale, "kernelbench");  // the defaults
  EXPECT_EQ(s.inputs, "robust");
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].task_id, 19);
  EXPECT_EQ(s.kernels[0].name, "relu.cu");
  EXPECT_TRUE(fs::equivalent(s.kernels[0].file, dir / "relu.cu"));
  EXPECT_EQ(s.kernels[1].task_id, 23);
  EXPECT_TRUE(fs::equivalent(s.kernels[1].file, dir / "sub" / "softmax.cu"));
}

void expect_suite_error(const std::string& manifest, const std::string& part) {
  try {
    read_suite(manifest);
    ADD_FAILURE() << "no error for " << manifest;
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), part)) << manifest;
  }
}

TEST(RegressionSuite, ABadManifestIsAnInputError) {
  const fs::path dir = scratch("errors");
  write(dir / "relu.cu", "// relu\n");
  const auto manifest = [&](const std::string& name, const std::string& text) {
    write(dir / name, text);
    return (dir / name).string();
  };
  const std::string relu = R"({"file": "relu.cu", "task": 19})";
  std::string m = manifest("unknown.json", R"({"suite": "s", "speed": 1, "kernels": [)" + relu + "]}");
  expect_suite_error(m, "unknown key 'speed'");
  m = manifest("missing.json", R"({"suite": "s", "kernels": [{"file": "gone.cu", "task": 19}]})");
  expect_suite_error(m, "gone.cu does not exist");
  m = manifest("task.json", R"({"suite": "s", "kernels": [{"file": "relu.cu", "task": 101}]})");
  expect_suite_error(m, "task 101 does not exist");
  m = manifest("twice.json", R"({"suite": "s", "kernels": [)" + relu + "," + relu + "]}");
  expect_suite_error(m, "relu.cu is listed twice");
  m = manifest("empty.json", R"({"suite": "s", "kernels": []})");
  expect_suite_error(m, "lists no kernels");
  m = manifest("mode.json", R"({"suite": "s", "mode": "quick", "kernels": [)" + relu + "]}");
  expect_suite_error(m, "mode 'quick' is not one of fast, full, adaptive");
  m = manifest("text.json", "suite: s\nkernels: relu.cu\n");
  expect_suite_error(m, "not a JSON object");
  m = manifest("no_task.json", R"({"suite": "s", "kernels": [{"file": "relu.cu"}]})");
  expect_suite_error(m, "no_task.json");
  expect_suite_error((dir / "absent.json").string(), "neither 'known-good' nor a readable manifest file");
  expect_suite_error(manifest("empty2.json", R"({"suite": "s", "kernels": []})"), "empty2.json");  // named
}

}  // namespace
}  // namespace kbrl
