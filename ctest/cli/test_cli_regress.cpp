// `kbrl baseline` and `kbrl regress` as CI runs them, on a manifest of two known-good kernels. Without
// a GPU both compile only (sm_90): a kernel that compiles is not_run, one that does not is
// compile_error, and that move is the regression checked here.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctest/text_testing.h>
#include "cli_testing.h"

namespace kbrl::testing {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_text(const fs::path& file, const std::string& text) { std::ofstream(file, std::ios::binary) << text; }

std::string manifest_text(const std::string& mode) {
  return R"({"suite": "mine", "mode": ")" + mode +
         R"(", "kernels": [{"file": "relu.cu", "task": 19}, {"file": "softmax.cu", "task": 23}]})";
}

/// A fresh folder with relu.cu (task 19), softmax.cu (task 23) and m.json listing them in fast mode.
fs::path suite_dir(const std::string& name) {
  const fs::path dir = fresh_dir("kbrl-cli-regress", name);
  const fs::path known_good = fs::path(KBRL_SOURCE_DIR) / "kernels" / "known_good";
  fs::copy_file(known_good / "relu.cu", dir / "relu.cu");
  fs::copy_file(known_good / "softmax.cu", dir / "softmax.cu");
  write_text(dir / "m.json", manifest_text("fast"));
  return dir;
}

/// A path on the command line (the temp folders have no spaces).
std::string q(const fs::path& p) { return p.string(); }

CliResult baseline(const fs::path& dir, const std::string& extra = "") {
  return run_cli_bounded("baseline --suite " + q(dir / "m.json") + " --out " + q(dir / "base.json") + extra, "", 300);
}

CliResult regress(const fs::path& dir, const fs::path& base, const std::string& extra = "") {
  return run_cli_bounded("regress --suite " + q(dir / "m.json") + " --baseline " + q(base) + extra, "", 300);
}

/// relu.cu with a syntax error in its kernel's body.
void break_relu(const fs::path& dir) {
  std::string text = read_text(dir / "relu.cu");
  const std::string body = "const long long stride =";
  const size_t at = text.find(body);
  ASSERT_NE(at, std::string::npos);
  text.insert(at, "this is not C++ ;\n  ");
  write_text(dir / "relu.cu", text);
}

/// The baseline with its machine's NVRTC target replaced, written beside it as `name`.
fs::path with_arch(const fs::path& dir, const std::string& arch, const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(read_text(dir / "base.json"));
  j.at("machine").at("arch") = arch;
  write_text(dir / name, j.dump(1));
  return dir / name;
}

TEST(CliRegress, BaselineWritesEveryKernelAndTheMachine) {
  const fs::path dir = suite_dir("baseline");
  const CliResult r = baseline(dir);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "baseline of mine (2 kernels, 2 compiled) written to " + (dir / "base.json").string()));
  EXPECT_FALSE(fs::exists((dir / "base.json").string() + ".part"));
  const nlohmann::json j = nlohmann::json::parse(read_text(dir / "base.json"));
  EXPECT_EQ(j.at("format"), "kbrl-baseline-1");
  EXPECT_EQ(j.at("suite").at("name"), "mine");
  EXPECT_EQ(j.at("suite").at("mode"), "fast");
  EXPECT_EQ(j.at("machine").at("compile_only"), true);
  EXPECT_EQ(j.at("machine").at("arch"), "sm_90");
  EXPECT_EQ(j.at("machine").at("gpu"), "");
  ASSERT_EQ(j.at("kernels").size(), 2u);
  EXPECT_EQ(j.at("kernels")[0].at("name"), "relu.cu");
  EXPECT_EQ(j.at("kernels")[0].at("task"), 19);
  EXPECT_EQ(j.at("kernels")[0].at("sha256").get<std::string>().size(), 64u);
  EXPECT_EQ(j.at("kernels")[0].at("record").at("outcome"), "not_run");
  EXPECT_EQ(j.at("kernels")[1].at("name"), "softmax.cu");
  EXPECT_EQ(j.at("kernels")[1].at("record").at("compile").at("ok"), true);
}

TEST(CliRegress, AnExistingBaselineNeedsForce) {
  const fs::path dir = suite_dir("force");
  ASSERT_EQ(baseline(dir).status, 0);
  const std::string before = read_text(dir / "base.json");
  CliResult r = baseline(dir);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "exists"));
  EXPECT_TRUE(contains(r.output, "--force"));
  EXPECT_EQ(read_text(dir / "base.json"), before);
  r = baseline(dir, " --force");
  EXPECT_EQ(r.status, 0) << r.output;
}

TEST(CliRegress, UnchangedPassesAndABrokenKernelIsARegression) {
  const fs::path dir = suite_dir("regress");
  ASSERT_EQ(baseline(dir).status, 0);
  const std::string reports = " --junit " + q(dir / "j.xml") + " --markdown " + q(dir / "m.md");
  CliResult r = regress(dir, dir / "base.json", reports);
  ASSERT_EQ(r.status, 0) << r.output;
  std::string xml = read_text(dir / "j.xml");
  EXPECT_TRUE(contains(xml, "tests=\"2\" failures=\"0\"")) << xml;
  EXPECT_FALSE(contains(xml, "<failure"));
  std::string md = read_text(dir / "m.md");
  EXPECT_TRUE(contains(md, "2 kernels: 0 regressions, 0 improvements (compile only, sm_90"));
  EXPECT_TRUE(contains(md, "| relu.cu | 19 | unchanged | compiled | compiled |"));
  EXPECT_TRUE(contains(r.output, md));  // the summary is printed too

  break_relu(dir);
  r = regress(dir, dir / "base.json", reports + " --out " + q(dir / "now.json"));
  EXPECT_EQ(r.status, 4) << r.output;
  EXPECT_TRUE(contains(r.output, "compile_error"));
  EXPECT_TRUE(contains(r.output, "1 regressions"));
  xml = read_text(dir / "j.xml");
  EXPECT_TRUE(contains(xml, "tests=\"2\" failures=\"1\"")) << xml;
  EXPECT_TRUE(contains(xml, "<testcase classname=\"mine\" name=\"relu.cu (task 19)\">\n    <failure ")) << xml;
  EXPECT_TRUE(contains(xml, "not_run -&gt; compile_error")) << xml;
  EXPECT_TRUE(contains(xml, "name=\"softmax.cu (task 23)\">\n    <system-out>unchanged")) << xml;
  md = read_text(dir / "m.md");
  EXPECT_TRUE(contains(md, "| relu.cu | 19 | **regression** | compiled | compile_error |")) << md;
  EXPECT_TRUE(contains(md, "| softmax.cu | 23 | unchanged |")) << md;
  // --out keeps this run as a baseline: against it the broken kernel is still failing, no regression.
  const nlohmann::json now = nlohmann::json::parse(read_text(dir / "now.json"));
  EXPECT_EQ(now.at("kernels")[0].at("record").at("outcome"), "compile_error");
  r = regress(dir, dir / "now.json");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "still compile_error"));
}

TEST(CliRegress, AnotherModeNeedsANewBaseline) {
  const fs::path dir = suite_dir("mode");
  ASSERT_EQ(baseline(dir).status, 0);
  write_text(dir / "m.json", manifest_text("full"));
  const CliResult r = regress(dir, dir / "base.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "mode fast"));
  EXPECT_TRUE(contains(r.output, "take a new baseline"));
}

TEST(CliRegress, AnotherMachineIsRefusedUnlessAllowed) {
  const fs::path dir = suite_dir("machine");
  ASSERT_EQ(baseline(dir).status, 0);
  const fs::path sm80 = with_arch(dir, "sm_80", "sm80.json");
  CliResult r = regress(dir, sm80);
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "sm_80"));
  EXPECT_TRUE(contains(r.output, "sm_90"));
  EXPECT_TRUE(contains(r.output, "--allow-other-machine"));

  r = regress(dir, sm80, " --allow-other-machine");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "warning: the baseline compiled for sm_80"));
  EXPECT_TRUE(contains(r.output, "0 regressions"));
  break_relu(dir);
  r = regress(dir, sm80, " --allow-other-machine");
  EXPECT_EQ(r.status, 4) << r.output;
  EXPECT_TRUE(contains(r.output, "1 regressions"));
}

// ctest/regression/plant.sh (what .ci/gpu regression measures the check with) still finds its places in
// the known-good kernels, and its planted kernels compile with no new precision finding: compiling only,
// against a baseline of the three known-good kernels it slows down, nothing regresses.
TEST(CliRegress, PlantedSuitesCompileLikeTheirKnownGoodKernels) {
  const fs::path dir = fresh_dir("kbrl-cli-regress", "planted");
  const fs::path known_good = fs::path(KBRL_SOURCE_DIR) / "kernels" / "known_good";
  for (const char* k : {"relu.cu", "softmax.cu", "gemm.cu"}) fs::copy_file(known_good / k, dir / k);
  write_text(dir / "m.json", R"({"suite": "three", "kernels": [{"file": "relu.cu", "task": 19}, )"
                             R"({"file": "softmax.cu", "task": 23}, {"file": "gemm.cu", "task": 1}]})");
  ASSERT_EQ(baseline(dir).status, 0);
  const std::string plant = (fs::path(KBRL_SOURCE_DIR) / "ctest" / "regression" / "plant.sh").string();
  ASSERT_EQ(std::system((plant + " " + known_good.string() + " " + (dir / "planted").string() + " 5 > " +
                         (dir / "plant.log").string() + " 2>&1").c_str()), 0) << read_text(dir / "plant.log");
  for (const std::string suite : {"slower-5", "wrong"}) {
    const CliResult r = run_cli_bounded("regress --suite " + q(dir / "planted" / suite / "suite.json") +
                                        " --baseline " + q(dir / "base.json"), "", 300);
    EXPECT_EQ(r.status, 0) << suite << ": " << r.output;
    EXPECT_TRUE(contains(r.output, suite == "wrong" ? "1 kernels: 0 regressions" : "3 kernels: 0 regressions"))
        << r.output;
    EXPECT_TRUE(contains(r.output, "| relu.cu | 19 | unchanged | compiled | compiled |")) << r.output;
  }
  EXPECT_TRUE(contains(read_text(dir / "planted" / "slower-5" / "gemm.cu"), "* 5 / 100"));
  EXPECT_TRUE(contains(read_text(dir / "planted" / "wrong" / "relu.cu"), "v < -4.f ? v"));
  // A bad percent is refused, not planted.
  EXPECT_NE(std::system((plant + " " + known_good.string() + " " + (dir / "bad").string() + " 0 > /dev/null 2>&1").c_str()), 0);
}

TEST(CliRegress, BadInputIsExitTwo) {
  const fs::path dir = suite_dir("bad");
  ASSERT_EQ(baseline(dir).status, 0);
  write_text(dir / "junk.json", "not json");
  CliResult r = regress(dir, dir / "junk.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is not a kbrl baseline"));
  nlohmann::json j = nlohmann::json::parse(read_text(dir / "base.json"));
  j["format"] = 1;
  write_text(dir / "format.json", j.dump());
  r = regress(dir, dir / "format.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "is not a kbrl baseline"));
  r = regress(dir, dir / "absent.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "cannot read the baseline"));
  r = regress(dir, dir / "base.json", " --threshold 1.5");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--threshold"));
}

}  // namespace
}  // namespace kbrl::testing
