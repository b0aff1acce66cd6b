// `kbrl sample`, `train`, `ttt` and `sft` as a user runs them, on the CPU against the synthetic
// environment (--env synthetic --scale small); their bad inputs, splits and `kbrl sweep` without a
// GPU in test_cli_learn_inputs.cpp; the config reader they share with the experiment programs is
// tested in ctest/experiments/test_run_setup.cpp.
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

TEST(CliLearn, TrainWritesStepsAndCheckpoints) {
  const fs::path dir = scratch("train");
  auto r = run_cli("train" + kSynthetic + "--task 19,23,47 --steps 2 --tasks-per-batch 2 --group-size 4 "
                   "--checkpoint-every 1 --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv steps = read_csv(dir / "steps.csv");
  EXPECT_EQ(steps.header, schemas::training_steps().header());
  ASSERT_EQ(steps.rows.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(steps.rows[i].at("step"), std::to_string(i));
    EXPECT_EQ(steps.rows[i].at("rollouts"), "8");  // 2 tasks x 4
    EXPECT_EQ(steps.rows[i].at("run"), "rlvr");
    // The synthetic table has no timing noise: significantly fast is fast.
    EXPECT_EQ(steps.rows[i].at("sig_fast_1"), steps.rows[i].at("fast_1"));
  }
  for (const char* f : {"base.pt", "adapter_step_1.pt", "adapter_step_2.pt", "final.pt"})
    EXPECT_TRUE(fs::exists(dir / "checkpoints" / f)) << f;
  EXPECT_TRUE(fs::exists(dir / "run.json"));
  EXPECT_NE(r.output.find("rlvr step 2/2"), std::string::npos) << r.output;  // progress on stderr
  EXPECT_TRUE(std::regex_search(r.output, std::regex("fast_1 [0-9.]+ sig_fast_1 [0-9.]+"))) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex("sig_fast_1 [0-9.]+ -> [0-9.]+"))) << r.output;
  EXPECT_FALSE(fs::exists(dir / "eval.csv"));  // periodic evaluation is off unless asked for

  // A config file, with a flag overriding it; the trained policy loads as a checkpoint.
  const fs::path config = dir / "rlvr.json";
  std::ofstream(config) << R"({"steps": 5, "tasks_per_batch": 1, "group_size": 3, "temperature": 0.5,
                              "learning_rate": 0.01, "lora_rank": 4, "run": "from_file", "tasks": [19]})";
  const fs::path dir2 = scratch("train2");
  r = run_cli("train" + kSynthetic + "--config " + config.string() + " --steps 1 --checkpoint " +
              (dir / "checkpoints" / "final.pt").string() + " --out " + dir2.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv steps2 = read_csv(dir2 / "steps.csv");
  ASSERT_EQ(steps2.rows.size(), 1u);
  EXPECT_EQ(steps2.rows[0].at("run"), "from_file");
  EXPECT_EQ(steps2.rows[0].at("rollouts"), "3");
}

// A rerun of `kbrl train --log L` with the same log and seed takes every record from the log: it
// finishes with the same steps and appends nothing (it used to stop with "no record for sample 0").
TEST(CliLearn, TrainRerunWithTheSameLogEvaluatesNothingTwice) {
  const fs::path dir = scratch("train-log");
  const std::string log = (dir / "rollouts.jsonl").string();
  const std::string args = "train --arch sm_90 --task 19,21 --steps 2 --tasks-per-batch 2 --group-size 3 --seed 5 "
                           "--checkpoint-every 0 --log " + log + " --out ";
  auto r = run_cli(args + (dir / "a").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto count_lines = [&] {
    std::ifstream in(log);
    return std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
  };
  const auto lines = count_lines();
  EXPECT_GT(lines, 0);
  r = run_cli(args + (dir / "b").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(count_lines(), lines);
  const Csv a = read_csv(dir / "a" / "steps.csv"), b = read_csv(dir / "b" / "steps.csv");
  ASSERT_EQ(a.rows.size(), b.rows.size());
  for (size_t i = 0; i < a.rows.size(); ++i)
    for (const char* column : {"rollouts", "compiled_rate", "mean_reward", "format_rate"})
      EXPECT_EQ(a.rows[i].at(column), b.rows[i].at(column)) << "step " << i << " " << column;
}

TEST(CliLearn, TrainEvaluatesEveryTaskOnSchedule) {
  const fs::path dir = scratch("train_eval");
  const auto r = run_cli("train" + kSynthetic + "--task 19,23,47 --steps 5 --tasks-per-batch 1 --group-size 4 "
                         "--learning-rate 0.05 --eval-every 2 --eval-k 3 --checkpoint-every 0 --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv eval = read_csv(dir / "eval.csv");
  EXPECT_EQ(eval.header, schemas::training_steps().header());
  // Before the first update, after updates 2 and 4, and after the last (5).
  ASSERT_EQ(eval.rows.size(), 4u);
  const char* updates[] = {"0", "2", "4", "5"};
  for (size_t i = 0; i < eval.rows.size(); ++i) {
    EXPECT_EQ(eval.rows[i].at("step"), updates[i]);
    EXPECT_EQ(eval.rows[i].at("run"), "rlvr_eval");
    EXPECT_EQ(eval.rows[i].at("tasks"), "3");
    EXPECT_EQ(eval.rows[i].at("rollouts"), "9");  // every task, 3 samples each
  }
  EXPECT_NE(r.output.find("rlvr eval after 5 updates"), std::string::npos) << r.output;
  const auto bad = run_cli("train" + kSynthetic + "--task 19 --steps 1 --eval-k 0 --out " +
                           scratch("train_eval_bad").string());
  EXPECT_EQ(bad.status, 2) << bad.output;
  EXPECT_NE(bad.output.find("eval_k"), std::string::npos) << bad.output;
}

TEST(CliLearn, ADivergingRunStopsWithAClearErrorAndNoNanRows) {
  const fs::path dir = scratch("train_nan");
  const auto r = run_cli("train" + kSynthetic + "--task 19,23,47 --steps 3 --tasks-per-batch 2 --group-size 4 "
                         "--learning-rate 1e308 --out " + dir.string());
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("training diverged"), std::string::npos) << r.output;
  std::ifstream in(dir / "steps.csv");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(dir / "checkpoints" / "final.pt"));
}

TEST(CliLearn, TttWritesOnePlusStepsRowsAndNamesTheBoaStep) {
  const fs::path dir = scratch("ttt");
  auto r = run_cli("ttt" + kSynthetic + "--task 19,47 --k 6 --steps 3 --learning-rate 0.05 --out " +
                   dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv steps = read_csv(dir / "steps.csv");
  EXPECT_EQ(steps.header, schemas::training_steps().header());
  ASSERT_EQ(steps.rows.size(), 4u);
  // The BoA step is the earliest step of highest fast_1.
  int best = 0;
  for (int i = 1; i < 4; ++i)
    if (std::stod(steps.rows[i].at("fast_1")) > std::stod(steps.rows[best].at("fast_1"))) best = i;
  EXPECT_NE(r.output.find("ttt: BoA step " + std::to_string(best) + " of 3"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(fmt::format("sig_fast_1 {:.3f}", std::stod(steps.rows[best].at("sig_fast_1")))),
            std::string::npos)
      << r.output;
  const Csv tasks = read_csv(dir / "ttt_tasks.csv");
  EXPECT_EQ(tasks.header, schemas::ttt_task_steps().header());
  EXPECT_EQ(tasks.rows.size(), 8u);  // 4 steps x 2 tasks
  EXPECT_TRUE(fs::exists(dir / "adapters" / "boa_adapter.pt"));

  const fs::path iso = scratch("ttt_isolated");
  r = run_cli("ttt" + kSynthetic + "--task 19,47 --k 6 --steps 1 --isolated --update sdpo --out " + iso.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv iso_steps = read_csv(iso / "steps.csv");
  ASSERT_EQ(iso_steps.rows.size(), 4u);  // 2 tasks x (1 + 1 steps)
  EXPECT_EQ(iso_steps.rows[0].at("run"), "ttt_task19");
  EXPECT_EQ(iso_steps.rows[2].at("run"), "ttt_task47");
  EXPECT_EQ(iso_steps.rows[0].at("tasks"), "1");
  EXPECT_NE(r.output.find("ttt_task19: BoA step"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ttt_task47: BoA step"), std::string::npos) << r.output;
  // Every isolated run starts from the same weights (a fresh adapter on the same start), so its
  // step 0 samples what the batched run's step 0 sampled for that task (same seeds, same k).
  const Csv iso_tasks = read_csv(iso / "ttt_tasks.csv");
  ASSERT_EQ(iso_tasks.rows.size(), 4u);
  for (const char* id : {"19", "47"}) {
    const auto step0 = [&](const Csv& t) {
      for (const auto& row : t.rows)
        if (row.at("step") == "0" && row.at("task_id") == id) return row;
      ADD_FAILURE() << "no step 0 row for task " << id;
      return std::map<std::string, std::string>{};
    };
    const auto a = step0(tasks), b = step0(iso_tasks);
    for (const char* col : {"correct_rate", "fast_1", "sig_fast_1", "best_speedup", "mean_speedup_correct"})
      EXPECT_EQ(a.at(col), b.at(col)) << "task " << id << " " << col;
  }
  EXPECT_TRUE(fs::exists(iso / "adapters" / "ttt_task19" / "boa_adapter.pt"));
  EXPECT_TRUE(fs::exists(iso / "adapters" / "ttt_task47" / "boa_adapter.pt"));
}

TEST(CliLearn, SampleWritesKRowsPerTask) {
  const fs::path dir = scratch("sample");
  auto r = run_cli("sample" + kSynthetic + "--task 19,23,47 --k 5 --policy heuristic --noise 0.5 --out " +
                   dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv samples = read_csv(dir / "samples.csv");
  EXPECT_EQ(samples.header, schemas::samples().header());
  ASSERT_EQ(samples.rows.size(), 15u);
  std::map<std::string, int> per_task;
  for (const auto& row : samples.rows) {
    ++per_task[row.at("task_id")];
    EXPECT_EQ(row.at("policy").rfind("heuristic", 0), 0u) << row.at("policy");
    EXPECT_FALSE(row.at("config").empty());
    // The speedup's interval: a point on the synthetic table for correct samples, empty otherwise.
    if (row.at("correct") == "1") {
      EXPECT_EQ(row.at("speedup_low"), row.at("speedup"));
      EXPECT_EQ(row.at("speedup_high"), row.at("speedup"));
    } else {
      EXPECT_EQ(row.at("speedup_low"), "");
      EXPECT_EQ(row.at("speedup_high"), "");
    }
  }
  EXPECT_EQ(per_task, (std::map<std::string, int>{{"19", 5}, {"23", 5}, {"47", 5}}));
  // The summary names each task with its correct count.
  EXPECT_TRUE(std::regex_search(r.output, std::regex("\\n\\s*19\\s+19_ReLU\\s+5\\s+[0-5]\\s"))) << r.output;
  EXPECT_NE(r.output.find("sig fast"), std::string::npos) << r.output;  // beside the fast count

  // The same seed gives the same samples.
  const fs::path again = scratch("sample_again");
  r = run_cli("sample" + kSynthetic + "--task 19,23,47 --k 5 --policy heuristic --noise 0.5 --out " +
              again.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv samples2 = read_csv(again / "samples.csv");
  ASSERT_EQ(samples2.rows.size(), samples.rows.size());
  for (size_t i = 0; i < samples.rows.size(); ++i)
    EXPECT_EQ(samples2.rows[i].at("config"), samples.rows[i].at("config"));
}

TEST(CliLearn, EndpointPolicyFailuresAreClearAndLoseNothing) {
  const fs::path dir = scratch("endpoint");
  // Bad specs are input errors that name the bad part.
  auto r = run_cli("sample --task 19 --arch sm_90 --policy endpoint:http://127.0.0.1:1,colour=blue --out " +
                   dir.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("kbrl: error:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("colour"), std::string::npos) << r.output;
  r = run_cli("train" + kSynthetic + "--task 19 --policy endpoint:http://127.0.0.1:1 --out " + dir.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("cannot be trained"), std::string::npos) << r.output;
  r = run_cli("sample" + kSynthetic + "--task 19 --policy endpoint:http://127.0.0.1:1 --out " + dir.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--env synthetic scores knob configurations"), std::string::npos) << r.output;

  // A server that is down (nothing listens on port 1): a non-zero exit naming the URL, and the
  // samples.csv of the run exists with its header (nothing half-written).
  if (!gpu_available()) {
    r = run_cli("sample --task 19 --k 2 --arch sm_90 --policy endpoint:http://127.0.0.1:1,retries=1 --out " +
                dir.string());
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("kbrl: error:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("127.0.0.1:1"), std::string::npos) << r.output;
    const Csv samples = read_csv(dir / "samples.csv");
    EXPECT_EQ(samples.header, schemas::samples().header());
    EXPECT_TRUE(samples.rows.empty());
    // Without a GPU and without --arch, the evaluator says what to do.
    // A rerun into the stopped run's folder must say --resume (one run per folder) ...
    r = run_cli("sample --task 19 --k 2 --policy endpoint:http://127.0.0.1:1 --out " + dir.string());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_NE(r.output.find("--resume to continue it"), std::string::npos) << r.output;
    r = run_cli("sample --task 19 --k 2 --policy endpoint:http://127.0.0.1:1 --resume --out " + dir.string());
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_NE(r.output.find("--arch"), std::string::npos) << r.output;
  }
}

double nll_of(const std::map<std::string, std::string>& row) { return std::stod(row.at("nll_per_token")); }

TEST(CliLearn, SftLowersNll) {
  const fs::path dir = scratch("sft");
  auto r = run_cli("sft" + kSynthetic + "--teacher heuristic --task 19,23 --per-task 16 --epochs 3 "
                   "--learning-rate 0.01 --out " + dir.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv epochs = read_csv(dir / "sft_epochs.csv");
  EXPECT_EQ(epochs.header, schemas::sft_epochs().header());
  ASSERT_EQ(epochs.rows.size(), 4u);  // epoch 0 (before training) and 3 epochs
  EXPECT_LT(nll_of(epochs.rows.back()), nll_of(epochs.rows.front()));
  EXPECT_TRUE(fs::exists(dir / "sft.pt"));
  EXPECT_EQ(read_csv(dir / "teacher_samples.csv").rows.size(), 32u);

  // From a samples.csv: its correct rows, fastest first.
  const fs::path sampled = scratch("sft_samples");
  r = run_cli("sample" + kSynthetic + "--task 19,47 --k 12 --policy uniform --out " + sampled.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path dir2 = scratch("sft2");
  r = run_cli("sft --scale small --from-samples " + (sampled / "samples.csv").string() +
              " --per-task 4 --epochs 2 --learning-rate 0.01 --out " + dir2.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const Csv epochs2 = read_csv(dir2 / "sft_epochs.csv");
  ASSERT_EQ(epochs2.rows.size(), 3u);
  EXPECT_LT(nll_of(epochs2.rows.back()), nll_of(epochs2.rows.front()));
  EXPECT_LE(std::stoi(epochs2.rows[0].at("items")), 8);
  // The SFT result is a checkpoint the schedule policy loads.
  r = run_cli("sample" + kSynthetic + "--task 19 --k 2 --checkpoint " + (dir2 / "sft.pt").string() + " --out " +
              scratch("sft_sample").string());
  EXPECT_EQ(r.status, 0) << r.output;
}

}  // namespace
}  // namespace kbrl::testing
