// `kbrl sample`, `train`, `ttt`, `sft` and `sweep` given bad input (each refused with a clear error
// and nothing written or lost), a split with tasks no generator covers, and `kbrl sweep` without a GPU.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "cli_learn_testing.h"
#include <ctest/csv_testing.h>
#include <experiments/run_setup.h>
#include <experiments/schemas.h>
#include <harness/gpu/gpu_session.h>
#include <harness/record/rollout_log.h>
#include <kernels/generator.h>

namespace kbrl::testing {
namespace {

namespace fs = std::filesystem;

/// A fresh directory for one test.
fs::path scratch(const std::string& name) { return cli_learn_dir(name); }

TEST(CliLearn, BadInputFailsClearly) {
  const fs::path dir = scratch("errors");
  const fs::path out = dir / "out";  // the config files live beside it, not in it
  const fs::path config = dir / "bad.json";
  std::ofstream(config) << R"({"steps": 2, "group_sise": 4})";
  auto r = run_cli("train" + kSynthetic + "--task 19 --config " + config.string() + " --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown config key 'group_sise'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(config.string() + ":"), std::string::npos) << r.output;  // the file is named
  EXPECT_NE(r.output.find("group_size"), std::string::npos) << r.output;  // the valid keys are listed

  const fs::path twice = dir / "twice.json";
  std::ofstream(twice) << R"({"steps": 2, "steps": 3})";
  r = run_cli("train" + kSynthetic + "--task 19 --config " + twice.string() + " --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("key 'steps' is given twice"), std::string::npos) << r.output;

  r = run_cli("train" + kSynthetic + "--task 19 --set lora_rank=100000 --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("must be an integer in [1, 256]"), std::string::npos) << r.output;

  r = run_cli("ttt" + kSynthetic + "--task 19 --k 1 --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("k must be at least 2 for update grpo"), std::string::npos) << r.output;

  r = run_cli("train" + kSynthetic + "--task 19 --steps two --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("'steps'"), std::string::npos) << r.output;

  r = run_cli("sample" + kSynthetic + "--task 19 --policy greedy --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown policy 'greedy'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("heuristic"), std::string::npos) << r.output;

  r = run_cli("train" + kSynthetic + "--task 19 --policy uniform --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("cannot be trained"), std::string::npos) << r.output;

  r = run_cli("ttt" + kSynthetic + "--split nosuchsplit --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown split 'nosuchsplit'"), std::string::npos) << r.output;

  r = run_cli("ttt" + kSynthetic + "--task 101 --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown task id 101"), std::string::npos) << r.output;

  if (const int id = uncovered_task()) {
    r = run_cli("train" + kSynthetic + "--task " + std::to_string(id) + " --out " + out.string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("no generator covers task " + std::to_string(id)), std::string::npos) << r.output;
  }

  r = run_cli("train" + kSynthetic + "--task 19");
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--out"), std::string::npos) << r.output;

  r = run_cli("train --env nowhere --task 19 --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--env"), std::string::npos) << r.output;

  r = run_cli("sft" + kSynthetic + "--task 19 --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--teacher heuristic|known-good, --from-samples FILE or --corpus FILE (exactly one)"),
            std::string::npos) << r.output;
  // Known-good kernels are text: only a language model in the process trains on them.
  r = run_cli("sft" + kSynthetic + "--task 19 --teacher known-good --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("use --policy lm:MODEL"), std::string::npos) << r.output;

  r = run_cli("sample" + kSynthetic + "--task 19 --log " + (dir / "log.jsonl").string() + " --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--log"), std::string::npos) << r.output;
}

TEST(CliLearn, SplitSkipsUncoveredTasksWithAWarning) {
  // "all" holds every task; the uncovered ones are skipped with a warning line each.
  const fs::path dir = scratch("split");
  auto r = run_cli("sample" + kSynthetic + "--split all --k 1 --policy heuristic --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  if (const int id = uncovered_task()) {
    EXPECT_NE(r.output.find("warning: no generator covers task " + std::to_string(id) + ": skipped"),
              std::string::npos)
        << r.output;
  } else {
    EXPECT_EQ(r.output.find("warning:"), std::string::npos) << r.output;
  }
  EXPECT_EQ(read_csv(dir / "samples.csv").rows.size(), covered_tasks().size());
}

TEST(CliLearn, SweepNeedsAGpu) {
  const fs::path dir = scratch("sweep");
  std::string reason;
  if (!gpu_available(&reason)) {
    auto r = run_cli("sweep --task 19 --scale small --out " + dir.string());
    EXPECT_NE(r.status, 0) << r.output;
    EXPECT_NE(r.output.find("needs a GPU"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / "sweep_configs.csv"));
    // Bad input is still reported as such first.
    r = run_cli("sweep --task 101 --out " + dir.string());
    EXPECT_EQ(r.status, 2) << r.output;
    return;
  }
  // With a GPU: a small seeded sample that always holds the expert configuration.
  auto r = run_cli("sweep --task 19 --scale small --max-configs 3 --seed 7 --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv configs = read_csv(dir / "sweep_configs.csv");
  EXPECT_EQ(configs.header, schemas::sweep_configs().header());
  ASSERT_EQ(configs.rows.size(), 3u);
  int experts = 0;
  for (const auto& row : configs.rows) experts += row.at("is_expert") == "1";
  EXPECT_EQ(experts, 1);
  const Csv tasks = read_csv(dir / "sweep_tasks.csv");
  EXPECT_EQ(tasks.header, schemas::sweep_tasks().header());
  ASSERT_EQ(tasks.rows.size(), 1u);
  EXPECT_EQ(tasks.rows[0].at("evaluated"), "3");
  // A rerun with the same --log answers every configuration from the log and appends nothing.
  const std::string log = (dir / "rollouts.jsonl").string();
  r = run_cli("sweep --task 19 --scale small --max-configs 3 --seed 7 --log " + log + " --out " + (dir / "a").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto logged = read_rollout_log(log).size();
  EXPECT_EQ(logged, 3u);
  r = run_cli("sweep --task 19 --scale small --max-configs 3 --seed 7 --log " + log + " --out " + (dir / "b").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_rollout_log(log).size(), logged);
  EXPECT_EQ(read_csv(dir / "b" / "sweep_configs.csv").rows.size(), 3u);
}

}  // namespace
}  // namespace kbrl::testing
