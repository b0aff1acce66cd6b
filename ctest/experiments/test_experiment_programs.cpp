// Every experiment program end to end on CPU: `kbrl-experiment NAME --env synthetic --budget tiny`
// in dependency order (a fixed reward table stands in for the GPU evaluator), each writing its
// CSVs with their schemas' headers under RESULTS/synthetic/ (never beside measured results); then
// the figures render from them when gnuplot is present. --env auto (what `ctest -L experiments`
// runs) without a GPU takes the synthetic table and says so. The same programs run on a GPU with
// --env evaluator or auto (label experiments).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>

#include <ctest/csv_testing.h>

#include "program_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using testing::file_text;
using testing::first_line;
using testing::run;
using testing::run_output;

TEST(ExperimentPrograms, EveryExperimentWritesItsTablesOnTheSyntheticEnvironment) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-" + std::to_string(::getpid()));
  fs::remove_all(results);
  using S = const CsvSchema& (*)();
  const std::vector<std::pair<std::string, std::map<std::string, S>>> expected = {
      {"base_policy", {{"sft_epochs.csv", schemas::sft_epochs}, {"rlvr_steps.csv", schemas::training_steps},
                       {"rlvr_eval.csv", schemas::training_steps}}},
      {"policy_sweep", {{"policy_sweep.csv", schemas::policy_sweep}, {"samples.csv", schemas::samples},
                        {"table3.csv", schemas::model_sweep}}},
      {"best_of_n", {{"samples.csv", schemas::samples}, {"bon_scaling.csv", schemas::bon_scaling},
                     {"bon_selected.csv", schemas::bon_selected}}},
      {"selection", {{"selection.csv", schemas::selection}, {"selection_tests.csv", schemas::selection_tests},
                     {"selection_topm.csv", schemas::selection_topm}}},
      {"length_control", {{"length_control.csv", schemas::length_control},
                          {"surprisal_quartiles.csv", schemas::surprisal_quartiles}}},
      {"ttt", {{"ttt_steps.csv", schemas::training_steps}, {"ttt_tasks.csv", schemas::ttt_task_steps},
               {"ttt_isolated_tasks.csv", schemas::ttt_task_steps}, {"equal_budget.csv", schemas::equal_budget},
               {"early_stopping.csv", schemas::early_stopping}}},
      {"oversharpening", {{"rho_trajectory.csv", schemas::rho_trajectory}}},
      {"robustness", {{"robustness.csv", schemas::robustness}}},
      {"transfer", {{"transfer.csv", schemas::transfer}}},
      {"lr_sweep", {{"lr_sweep.csv", schemas::adaptation_runs}, {"lr_sweep_steps.csv", schemas::training_steps}}},
      {"sdpo", {{"sdpo.csv", schemas::adaptation_runs}, {"compute.csv", schemas::compute},
                {"speedup_by_seed.csv", schemas::speedup_by_seed}}},
      {"ablations", {{"ablations.csv", schemas::adaptation_runs}, {"ablations_per_task.csv", schemas::ablations_per_task}}},
      {"per_task_ttt", {{"per_task_ttt.csv", schemas::per_task_ttt},
                        {"per_task_ttt_summary.csv", schemas::per_task_ttt_summary},
                        {"ttt_steps.csv", schemas::training_steps}, {"samples.csv", schemas::samples}}},
      {"grpo_report", {{"table3.csv", schemas::model_sweep}, {"table3_tasks.csv", schemas::model_sweep_tasks},
                       {"sft_steps.csv", schemas::sft_steps}, {"sft_epochs.csv", schemas::sft_epochs},
                       {"grpo_steps.csv", schemas::training_steps}, {"judge_scores.csv", schemas::judge_scores}}},
      {"entropy_ttt", {{"entropy_ttt.csv", schemas::adaptation_runs}, {"entropy_rho.csv", schemas::entropy_rho},
                       {"entropy_ttt_steps.csv", schemas::training_steps}}},
      {"sparsification", {{"sparsification.csv", schemas::sparsification},
                          {"sparsification_steps.csv", schemas::training_steps}}},
  };
  for (const auto& [name, files] : expected) {
    SCOPED_TRACE(name);
    ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " " + name + " --env synthetic --budget tiny --results " +
                  results.string()),
              0);
    for (const auto& [file, schema] : files) {
      const fs::path p = results / "synthetic" / "tiny" / name / file;
      ASSERT_TRUE(fs::exists(p)) << p;
      EXPECT_EQ(first_line(p), schema().header()) << p;
      std::ifstream in(p);
      int lines = 0;
      for (std::string l; std::getline(in, l);) ++lines;
      EXPECT_GE(lines, 2) << p << " has no rows";
    }
  }
  // An experiment whose input is missing says which experiment to run first.
  const fs::path empty = results / "empty";
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " selection --env synthetic --budget tiny --results " + empty.string()), 2);
  // ... before it runs or writes anything (ttt reads best_of_n's tables only at its end).
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " ttt --env synthetic --budget tiny --results " + empty.string()), 2);
  EXPECT_FALSE(fs::exists(empty)) << "a run refused for a missing input wrote " << empty;
  // Every run marks its settings.json finished; a run that stopped part way is refused as an input.
  const fs::path bon_settings = results / "synthetic" / "tiny" / "best_of_n" / "settings.json";
  nlohmann::json bon_json = nlohmann::json::parse(file_text(bon_settings));
  EXPECT_EQ(bon_json.at("finished"), true);
  EXPECT_GT(bon_json.at("wall_seconds").get<double>(), 0);
  bon_json["finished"] = false;
  std::ofstream(bon_settings) << bon_json.dump(2);
  std::string refused;
  EXPECT_EQ(testing::run_output(std::string(KBRL_EXPERIMENT) + " selection --env synthetic --budget tiny --results " +
                                    results.string(),
                                &refused),
            2);
  EXPECT_NE(refused.find("did not finish"), std::string::npos) << refused;
  bon_json["finished"] = true;
  std::ofstream(bon_settings) << bon_json.dump(2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " no_such_experiment --env synthetic"), 2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " ttt --budget huge --env synthetic"), 2);
  // A served model only samples: the training experiments refuse it, and so does the synthetic table.
  const std::string model = " --policy endpoint:http://127.0.0.1:1 --arch sm_90 --results " + empty.string();
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " ttt --budget tiny" + model), 2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --budget tiny --env synthetic" + model), 2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --budget tiny --policy heuristic"), 2);
  // --gpus picks the evaluator's GPUs: not with the synthetic table or a server, each GPU once.
  const std::string bon = std::string(KBRL_EXPERIMENT) + " best_of_n --budget tiny --results " + empty.string();
  EXPECT_EQ(run(bon + " --env synthetic --gpus 0,1"), 2);
  EXPECT_EQ(run(bon + " --gpus 0 --evaluator http://127.0.0.1:1"), 2);
  EXPECT_EQ(run(bon + " --gpus 0,0 --arch sm_90"), 2);
  EXPECT_EQ(run(bon + " --gpus first --arch sm_90"), 2);
  // A server that is down stops the run with an error (exit 1), not a skip or a success.
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --budget llm-cpu" + model.substr(0, model.find(" --arch")) +
                ",retries=0 --arch sm_90 --results " + empty.string()),
            1);
  // The figures, from the CSVs alone.
  if (run("command -v gnuplot") == 0) {
    const fs::path tiny = results / "synthetic" / "tiny";
    EXPECT_EQ(run("bash " + std::string(KBRL_SOURCE) + "/plots/render.sh " + tiny.string()), 0);
    for (const char* fig : {"rlvr_curve", "bon_scaling", "selection", "ttt_trajectory", "rho_trajectory", "regime",
                            "ablations", "lr_sweep", "sdpo", "surprisal_scatter"}) {
      EXPECT_TRUE(fs::exists(tiny / "figures" / (std::string(fig) + ".png"))) << fig;
      EXPECT_TRUE(fs::exists(tiny / "figures" / (std::string(fig) + ".svg"))) << fig;
    }
  }
  fs::remove_all(results);
}

// The smoke budget's RLVR must move the policy enough to change its rewards (four steps at a low
// learning rate once left it within KL 0.003 of its start): on the synthetic table, the same samples
// of every train task score higher after RLVR than before, and settings.json records the budget.
TEST(ExperimentPrograms, BadEvaluatorSettingsAreRefusedEvenWithoutAnEvaluator) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-bad-" + std::to_string(::getpid()));
  fs::remove_all(results);
  const std::string base = std::string(KBRL_EXPERIMENT) + " base_policy --env synthetic --budget tiny --results " +
                           results.string();
  EXPECT_EQ(run(base + " --inputs uniform"), 2);
  EXPECT_EQ(run(base + " --mode turbo"), 2);
  EXPECT_EQ(run(base + " --tolerance loose"), 2);
  EXPECT_EQ(run(base + " --reward threshold"), 2);
  EXPECT_EQ(run(base + " --reward composite:1,2"), 2);
  EXPECT_EQ(run(base + " --judge oracle"), 2);
  EXPECT_EQ(run(base + " --judge rules --judge-weight -1"), 2);
  EXPECT_FALSE(fs::exists(results / "synthetic" / "tiny" / "base_policy" / "settings.json"));
  EXPECT_EQ(run(base + " --inputs kernelbench"), 0);
  fs::remove_all(results);
}

// --gpus evaluates through kbrl serve's scheduler inside the experiment's process, one worker per
// GPU (here compiling only, for sm_90: no GPU needed): settings.json records the GPUs, the records
// go to the experiment's rollout log, and a rerun gets them back from it (nothing evaluated twice).
TEST(ExperimentPrograms, GpusEvaluateThroughOneQueueAndTheRunsLog) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-gpus-" + std::to_string(::getpid()));
  fs::remove_all(results);
  const std::string command = std::string(KBRL_EXPERIMENT) + " base_policy --budget tiny --arch sm_90 --gpus 0,1 "
                              "--results " + results.string();
  ASSERT_EQ(run(command), 0);
  const fs::path dir = results / "tiny" / "base_policy";
  const nlohmann::json settings = nlohmann::json::parse(file_text(dir / "settings.json"));
  EXPECT_EQ(settings.at("gpus"), (nlohmann::json{0, 1}));
  EXPECT_EQ(settings.at("compile_only"), true) << "--gpus on a machine without a GPU compiles only";
  const std::string log = file_text(dir / "rollouts.jsonl");
  EXPECT_GT(std::count(log.begin(), log.end(), '\n'), 0);
  ASSERT_EQ(run(command), 0);
  EXPECT_EQ(file_text(dir / "rollouts.jsonl"), log) << "a rerun evaluated again what its log holds";
  fs::remove_all(results);
}

// --seeds replaces the budget's seeds: best-of-N and TTT run each (their runs name them), settings.json
// records them; a list that is not one of distinct non-negative integers is refused before anything runs.
TEST(ExperimentPrograms, SeedsAreASetting) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-seeds-" + std::to_string(::getpid()));
  fs::remove_all(results);
  const std::string flags = " --env synthetic --budget tiny --results " + results.string();
  const fs::path tiny = results / "synthetic" / "tiny";
  for (const char* bad : {"42,x", "42,-1", "7,7", ",42"})
    EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " base_policy --seeds '" + bad + "'" + flags), 2) << bad;
  EXPECT_FALSE(fs::exists(tiny / "base_policy" / "settings.json"));
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " base_policy" + flags), 0);
  // base_policy's RLVR runs seed 1 unless --seeds names another: a second RLVR run samples other batches.
  const fs::path other = results / "rlvr-seed-2";
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " base_policy --seeds 2 --env synthetic --budget tiny --results " +
                other.string()),
            0);
  const auto rlvr_seed = [](const fs::path& dir) {
    return nlohmann::json::parse(file_text(dir / "base_policy" / "settings.json")).at("settings").at("rlvr_seed");
  };
  EXPECT_EQ(rlvr_seed(tiny), 1);
  EXPECT_EQ(rlvr_seed(other / "synthetic" / "tiny"), 2);
  const auto batches = [](const fs::path& dir) {  // what the steps sampled, not their timings
    std::vector<std::string> rows;
    for (const auto& row : testing::read_csv(dir / "base_policy" / "rlvr_steps.csv").rows)
      rows.push_back(row.at("tasks") + " " + row.at("mean_reward") + " " + row.at("loss"));
    return rows;
  };
  EXPECT_NE(batches(tiny), batches(other / "synthetic" / "tiny"));
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --seeds 43,44" + flags), 0);
  const nlohmann::json settings = nlohmann::json::parse(file_text(tiny / "best_of_n" / "settings.json"));
  EXPECT_EQ(settings.at("settings").at("seeds"), (nlohmann::json{43, 44}));
  EXPECT_EQ(settings.at("settings").at("sdpo_seeds"), (nlohmann::json{43, 44}));
  std::set<std::string> runs;
  for (const auto& row : testing::read_csv(tiny / "best_of_n" / "samples.csv").rows) runs.insert(row.at("run"));
  EXPECT_TRUE(runs.count("subset1_seed43") && runs.count("subset1_seed44") && !runs.count("subset1_seed42"))
      << ::testing::PrintToString(runs);
  // TTT runs a batch trajectory per seed (the report's TTT row is a mean over three seeds): each
  // seed's rows, then the mean over seeds with its standard deviation.
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " ttt --seeds 43,44" + flags), 0);
  std::set<std::string> batch_runs;
  for (const auto& row : testing::read_csv(tiny / "ttt" / "ttt_steps.csv").rows) batch_runs.insert(row.at("run"));
  EXPECT_EQ(batch_runs, (std::set<std::string>{"batch_subset1_seed43", "batch_subset1_seed43_fresh",
                                               "batch_subset1_seed44", "batch_subset1_seed44_fresh"}));
  std::map<std::string, std::set<std::string>> seeds_of;  // method (without its step) -> seeds
  std::map<std::string, std::map<std::string, std::string>> mean_row;
  for (const auto& row : testing::read_csv(tiny / "ttt" / "equal_budget.csv").rows) {
    const std::string method = row.at("method");
    if (method.size() > 5 && method.substr(method.size() - 5) == "_mean") mean_row[method] = row;
    else seeds_of[method.substr(0, method.find("_step"))].insert(row.at("seed"));
  }
  for (const char* m : {"ttt_boa", "base", "boa_fresh"})
    EXPECT_EQ(seeds_of[m], (std::set<std::string>{"43", "44"})) << m;
  for (const char* m : {"ttt_boa_mean", "base_step0_mean", "boa_fresh_mean"}) {
    ASSERT_TRUE(mean_row.count(m)) << m;
    EXPECT_EQ(mean_row[m].at("seed"), "mean");
    EXPECT_FALSE(mean_row[m].at("std_over_seeds").empty()) << m;
  }
  fs::remove_all(results);
}

// The GRPO report's experiment trains on its composite reward with the rules judge unless told
// otherwise; any experiment takes a reward spec and a judge.
TEST(ExperimentPrograms, RewardAndJudgeAreTheExperimentsOwnUnlessGiven) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-judge-" + std::to_string(::getpid()));
  fs::remove_all(results);
  const std::string flags = " --env synthetic --budget tiny --results " + results.string();
  const fs::path tiny = results / "synthetic" / "tiny";
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " grpo_report" + flags), 0);
  nlohmann::json settings = nlohmann::json::parse(file_text(tiny / "grpo_report" / "settings.json"));
  EXPECT_EQ(settings.at("reward"), "composite");
  EXPECT_EQ(settings.at("judge"), "rules");
  EXPECT_EQ(settings.at("judge_weight"), 0.5);
  EXPECT_TRUE(fs::exists(tiny / "grpo_report" / "judge_scores.csv"));
  // Table 3: the policy as it starts, after SFT, after GRPO.
  const auto table3 = testing::read_csv(tiny / "grpo_report" / "table3.csv").rows;
  ASSERT_EQ(table3.size(), 3u);
  EXPECT_EQ(table3[2].at("model"), "schedule_grpo");
  EXPECT_EQ(table3[2].at("temperature"), "0");
  fs::remove_all(tiny / "grpo_report");
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " grpo_report --judge none --reward composite:0.2,1,0.25,4" + flags), 0);
  settings = nlohmann::json::parse(file_text(tiny / "grpo_report" / "settings.json"));
  EXPECT_EQ(settings.at("reward"), "composite:0.2,1,0.25,4");
  EXPECT_EQ(settings.at("judge"), "");
  EXPECT_FALSE(fs::exists(tiny / "grpo_report" / "judge_scores.csv"));
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " base_policy --reward threshold:1.5 --judge rules" + flags), 0);
  settings = nlohmann::json::parse(file_text(tiny / "base_policy" / "settings.json"));
  EXPECT_EQ(settings.at("reward"), "threshold:1.5");
  for (const auto& row : testing::read_csv(tiny / "base_policy" / "judge_scores.csv").rows) {
    const double kernel = std::stod(row.at("kernel_reward"));
    EXPECT_TRUE(kernel == 0.0 || kernel == 1.0) << "threshold rewards are 0 or 1, not " << kernel;
  }
  fs::remove_all(results);
}

TEST(ExperimentPrograms, SmokeBudgetRlvrRaisesTheRewardOfTheSameSamples) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-smoke-rlvr-" + std::to_string(::getpid()));
  fs::remove_all(results);
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " base_policy --env synthetic --budget smoke --results " +
                results.string()),
            0);
  const fs::path dir = results / "synthetic" / "smoke" / "base_policy";
  // Appendix B: every train task evaluated before the first update and at each checkpoint (steps
  // 2, 4, ..., 10 of the smoke budget's 10), on the same seeded samples.
  const auto eval = testing::read_csv(dir / "rlvr_eval.csv").rows;
  ASSERT_EQ(eval.size(), 6u);
  for (size_t i = 0; i < eval.size(); ++i) {
    EXPECT_EQ(eval[i].at("run"), "rlvr_eval");
    EXPECT_EQ(eval[i].at("step"), std::to_string(2 * i));
    EXPECT_EQ(eval[i].at("rollouts"), eval[0].at("rollouts"));
    if (i > 0) {
      EXPECT_TRUE(fs::exists(dir / "checkpoints" / ("adapter_step_" + std::to_string(2 * i) + ".pt")));
    }
  }
  EXPECT_GT(std::stod(eval.back().at("mean_reward")), std::stod(eval.front().at("mean_reward")));
  // No update at an evaluation, but its KL to the start and entropy are measured on its rollouts.
  EXPECT_EQ(std::stod(eval.front().at("kl_to_start")), 0.0);
  EXPECT_GT(std::stod(eval.back().at("kl_to_start")), 0.0);
  for (const auto& row : eval) EXPECT_GT(std::stod(row.at("entropy")), 0.0);
  const auto steps = testing::read_csv(dir / "rlvr_steps.csv").rows;
  ASSERT_FALSE(steps.empty());
  EXPECT_GT(std::stod(steps.back().at("kl_to_start")), 0.05);
  std::ifstream settings(dir / "settings.json");
  const std::string text((std::istreambuf_iterator<char>(settings)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"settings\"", "\"rlvr_learning_rate\"", "\"train_tasks\"", "\"ttt_k\""})
    EXPECT_NE(text.find(key), std::string::npos) << key;
  // The commit it was built from: the checkout's, or "unknown" for a tree that is not a git one.
  const std::string commit = nlohmann::json::parse(text).at("commit");
  const char* source = std::getenv("KBRL_SOURCE_DIR");
  if (source && fs::exists(fs::path(source) / ".git")) {
    EXPECT_TRUE(commit.size() >= 12 && commit.find_first_not_of("0123456789abcdef") >= 12) << commit;
  } else {
    EXPECT_EQ(commit, "unknown");
  }
  fs::remove_all(results);
}

// `ctest -L experiments` runs --env auto: without a GPU, the synthetic reward table, in a folder and
// settings marked synthetic, with a line on the output saying the results are not measurements.
TEST(ExperimentPrograms, EnvAutoWithoutAGpuRunsOnTheSyntheticTableAndSaysSo) {
  const std::string experiment = KBRL_EXPERIMENT;
  std::string output;
  if (run_output(experiment + " --check-gpu", &output) == 0)
    GTEST_SKIP() << "a GPU is usable here, so --env auto runs the evaluator (label experiments): " << output;
  EXPECT_NE(output.find("no GPU"), std::string::npos) << output;
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-env-auto-" + std::to_string(::getpid()));
  fs::remove_all(results);
  ASSERT_EQ(run_output(experiment + " base_policy --env auto --budget tiny --results " + results.string(), &output), 0)
      << output;
  EXPECT_NE(output.find("no GPU"), std::string::npos) << output;
  EXPECT_NE(output.find("synthetic reward table"), std::string::npos) << output;
  EXPECT_NE(output.find("not measurements"), std::string::npos) << output;
  const fs::path dir = results / "synthetic" / "tiny" / "base_policy";
  EXPECT_TRUE(fs::exists(dir / "rlvr_eval.csv"));
  EXPECT_FALSE(fs::exists(results / "tiny")) << "synthetic results beside measured ones";
  const nlohmann::json settings = nlohmann::json::parse(file_text(dir / "settings.json"));
  EXPECT_EQ(settings.at("env"), "synthetic");
  EXPECT_EQ(settings.at("env_requested"), "auto");
  EXPECT_NE(settings.at("note").get<std::string>().find("not measurements"), std::string::npos);
  EXPECT_FALSE(settings.at("no_gpu").get<std::string>().empty());
  // The next experiment finds its input there, and a missing input names the --env to rerun with.
  EXPECT_EQ(run(experiment + " policy_sweep --env auto --budget tiny --results " + results.string()), 0);
  EXPECT_EQ(run_output(experiment + " selection --env auto --budget tiny --results " + results.string(), &output), 2);
  EXPECT_NE(output.find("kbrl-experiment best_of_n --budget tiny --env auto"), std::string::npos) << output;
  EXPECT_EQ(run(experiment + " base_policy --env gpu --budget tiny --results " + results.string()), 2);
  // The plots case without a GPU: the synthetic figures, and the committed measurements redrawn from
  // the committed CSVs into the results folder (the committed figures are only read).
  if (run("command -v gnuplot") == 0) {
    ASSERT_EQ(run_output("bash " + std::string(KBRL_SOURCE) + "/plots/render_experiments.sh " + experiment + " " +
                             results.string() + " tiny auto",
                         &output),
              0)
        << output;
    EXPECT_NE(output.find("no GPU"), std::string::npos) << output;
    EXPECT_TRUE(fs::exists(results / "synthetic" / "tiny" / "figures" / "rlvr_curve.svg"));
    const fs::path committed = fs::path(KBRL_SOURCE) / "results" / "h100-80gb-hbm3" / "paper" / "figures";
    for (const char* fig : {"rlvr_curve.svg", "regime.svg", "bon_scaling.svg"}) {
      const fs::path redrawn = results / "committed" / "h100-80gb-hbm3" / "paper" / "figures" / fig;
      EXPECT_TRUE(fs::exists(redrawn)) << redrawn;
      EXPECT_TRUE(fs::exists(committed / fig)) << committed / fig;
    }
  }
  fs::remove_all(results);
}

}  // namespace
}  // namespace kbrl
