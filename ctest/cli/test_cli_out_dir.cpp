// One run per --out folder (cli/out_dir.h): a folder holding another run is refused unless
// --resume (continue the same command's run) or --force (replace a kbrl run's files); nothing that
// is not a kbrl run is ever deleted. Runs the `kbrl` program on the CPU (--env synthetic).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli_testing.h"

namespace kbrl::testing {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return fresh_dir("kbrl-cli-out", name, false); }

const std::string kTrain = "train --env synthetic --scale small --task 19 --steps 1 --tasks-per-batch 1 "
                           "--group-size 2 --out ";
const std::string kSample = "sample --env synthetic --scale small --task 19 --k 2 --out ";

TEST(CliOutDir, ASecondRunIntoTheSameFolderIsRefused) {
  const fs::path dir = scratch("twice");
  ASSERT_EQ(run_cli(kTrain + dir.string()).status, 0);
  const auto before = fs::last_write_time(dir / "steps.csv");
  const CliResult again = run_cli(kTrain + dir.string() + " --learning-rate 0.5");
  EXPECT_EQ(again.status, 2) << again.output;
  EXPECT_NE(again.output.find("kbrl: error: --out " + dir.string() + " already holds a `kbrl train` run"),
            std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find("--force"), std::string::npos) << again.output;
  EXPECT_EQ(again.output.find("--resume"), std::string::npos) << again.output;  // train cannot resume
  EXPECT_EQ(fs::last_write_time(dir / "steps.csv"), before);  // nothing of the first run was touched
}

TEST(CliOutDir, ForceReplacesAKbrlRun) {
  const fs::path dir = scratch("force");
  ASSERT_EQ(run_cli(kTrain + dir.string() + " --checkpoint-every 1").status, 0);
  ASSERT_TRUE(fs::exists(dir / "checkpoints" / "adapter_step_1.pt"));
  const CliResult r = run_cli(kSample + dir.string() + " --force");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "samples.csv"));
  EXPECT_FALSE(fs::exists(dir / "checkpoints"));  // the old run's files are gone, not mixed in
  EXPECT_FALSE(fs::exists(dir / "steps.csv"));
  std::ifstream manifest(dir / "run.json");
  const std::string text((std::istreambuf_iterator<char>(manifest)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"command\": \"sample\""), std::string::npos) << text;
}

TEST(CliOutDir, ForceNeverEmptiesAFolderThatIsNotARun) {
  const fs::path dir = scratch("foreign");
  fs::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "mine\n";
  const CliResult r = run_cli(kSample + dir.string() + " --force");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("notes.txt"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_FALSE(fs::exists(dir / "samples.csv"));
}

TEST(CliOutDir, ResumeContinuesOnlyTheSameCommandsRun) {
  const fs::path dir = scratch("resume");
  ASSERT_EQ(run_cli(kSample + dir.string()).status, 0);
  const CliResult plain = run_cli(kSample + dir.string());
  EXPECT_EQ(plain.status, 2);
  EXPECT_NE(plain.output.find("--resume to continue it"), std::string::npos) << plain.output;
  const CliResult resumed = run_cli(kSample + dir.string() + " --resume");
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  const CliResult other = run_cli(kTrain + dir.string());
  EXPECT_EQ(other.status, 2);
  const fs::path train_dir = scratch("resume-train");
  ASSERT_EQ(run_cli(kTrain + train_dir.string()).status, 0);
  const CliResult wrong = run_cli(kSample + train_dir.string() + " --resume");
  EXPECT_EQ(wrong.status, 2);
  EXPECT_NE(wrong.output.find("holds a `kbrl train` run, not a `kbrl sample` run"), std::string::npos)
      << wrong.output;
  EXPECT_EQ(run_cli(kSample + dir.string() + " --resume --force").status, 2);  // one or the other
}

TEST(CliOutDir, AnEmptyOrNewFolderIsFine) {
  const fs::path dir = scratch("empty");
  fs::create_directories(dir);
  EXPECT_EQ(run_cli(kSample + dir.string()).status, 0);
  const fs::path file = scratch("a-file");
  fs::create_directories(file.parent_path());
  std::ofstream(file) << "x";
  const CliResult r = run_cli(kSample + file.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("is not a directory"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kbrl::testing
