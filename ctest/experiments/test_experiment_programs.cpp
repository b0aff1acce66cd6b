// Every experiment program end to end on CPU: `kbrl-experiment NAME --env synthetic --budget tiny`
// in dependency order (a fixed reward table stands in for the GPU evaluator), each writing its
// CSVs with their schemas' headers; then the figures render from them when gnuplot is present.
// The same programs run on a GPU with --env evaluator (label experiments).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include <gtest/gtest.h>

#include <experiments/report_schemas.h>
#include <experiments/schemas.h>

#include "ctest/csv_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;

std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

int run(const std::string& command) {
  const int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ExperimentPrograms, EveryExperimentWritesItsTablesOnTheSyntheticEnvironment) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-" + std::to_string(::getpid()));
  fs::remove_all(results);
  using S = const CsvSchema& (*)();
  const std::vector<std::pair<std::string, std::map<std::string, S>>> expected = {
      {"base_policy", {{"sft_epochs.csv", schemas::sft_epochs}, {"rlvr_steps.csv", schemas::training_steps},
                       {"rlvr_eval.csv", schemas::training_steps}}},
      {"policy_sweep", {{"policy_sweep.csv", schemas::policy_sweep}, {"samples.csv", schemas::samples}}},
      {"best_of_n", {{"samples.csv", schemas::samples}, {"bon_scaling.csv", schemas::bon_scaling},
                     {"bon_selected.csv", schemas::bon_selected}}},
      {"selection", {{"selection.csv", schemas::selection}, {"selection_tests.csv", schemas::selection_tests},
                     {"selection_topm.csv", schemas::selection_topm}}},
      {"length_control", {{"length_control.csv", schemas::length_control},
                          {"surprisal_quartiles.csv", schemas::surprisal_quartiles}}},
      {"ttt", {{"ttt_steps.csv", schemas::training_steps}, {"ttt_tasks.csv", schemas::ttt_task_steps},
               {"ttt_isolated_tasks.csv", schemas::ttt_task_steps}, {"equal_budget.csv", schemas::equal_budget}}},
      {"oversharpening", {{"rho_trajectory.csv", schemas::rho_trajectory}}},
      {"robustness", {{"robustness.csv", schemas::robustness}}},
      {"transfer", {{"transfer.csv", schemas::transfer}}},
      {"lr_sweep", {{"lr_sweep.csv", schemas::adaptation_runs}, {"lr_sweep_steps.csv", schemas::training_steps}}},
      {"sdpo", {{"sdpo.csv", schemas::adaptation_runs}, {"compute.csv", schemas::compute}}},
      {"ablations", {{"ablations.csv", schemas::adaptation_runs}}},
  };
  for (const auto& [name, files] : expected) {
    SCOPED_TRACE(name);
    ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " " + name + " --env synthetic --budget tiny --results " +
                  results.string()),
              0);
    for (const auto& [file, schema] : files) {
      const fs::path p = results / "tiny" / name / file;
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
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " no_such_experiment --env synthetic"), 2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " ttt --budget huge --env synthetic"), 2);
  // A language model only samples: the training experiments refuse it, and so does the synthetic table.
  const std::string model = " --policy endpoint:http://127.0.0.1:1 --arch sm_90 --results " + empty.string();
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " ttt --budget tiny" + model), 2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --budget tiny --env synthetic" + model), 2);
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --budget tiny --policy heuristic"), 2);
  // A server that is down stops the run with an error (exit 1), not a skip or a success.
  EXPECT_EQ(run(std::string(KBRL_EXPERIMENT) + " best_of_n --budget llm-cpu" + model.substr(0, model.find(" --arch")) +
                ",retries=0 --arch sm_90 --results " + empty.string()),
            1);
  // The figures, from the CSVs alone.
  if (run("command -v gnuplot") == 0) {
    EXPECT_EQ(run("bash " + std::string(KBRL_SOURCE) + "/plots/render.sh " + (results / "tiny").string()), 0);
    for (const char* fig : {"rlvr_curve", "bon_scaling", "selection", "ttt_trajectory", "rho_trajectory", "regime",
                            "ablations", "lr_sweep", "sdpo", "surprisal_scatter"}) {
      EXPECT_TRUE(fs::exists(results / "tiny" / "figures" / (std::string(fig) + ".png"))) << fig;
      EXPECT_TRUE(fs::exists(results / "tiny" / "figures" / (std::string(fig) + ".svg"))) << fig;
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
  EXPECT_FALSE(fs::exists(results / "tiny" / "base_policy" / "settings.json"));
  EXPECT_EQ(run(base + " --inputs kernelbench"), 0);
  fs::remove_all(results);
}

TEST(ExperimentPrograms, SmokeBudgetRlvrRaisesTheRewardOfTheSameSamples) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-smoke-rlvr-" + std::to_string(::getpid()));
  fs::remove_all(results);
  ASSERT_EQ(run(std::string(KBRL_EXPERIMENT) + " base_policy --env synthetic --budget smoke --results " +
                results.string()),
            0);
  const fs::path dir = results / "smoke" / "base_policy";
  const auto eval = testing::read_csv(dir / "rlvr_eval.csv").rows;
  ASSERT_EQ(eval.size(), 2u);
  EXPECT_EQ(eval[0].at("run"), "before_rlvr");
  EXPECT_EQ(eval[1].at("run"), "after_rlvr");
  EXPECT_EQ(eval[0].at("rollouts"), eval[1].at("rollouts"));
  EXPECT_GT(std::stod(eval[1].at("mean_reward")), std::stod(eval[0].at("mean_reward")));
  const auto steps = testing::read_csv(dir / "rlvr_steps.csv").rows;
  ASSERT_FALSE(steps.empty());
  EXPECT_GT(std::stod(steps.back().at("kl_to_start")), 0.05);
  std::ifstream settings(dir / "settings.json");
  const std::string text((std::istreambuf_iterator<char>(settings)), std::istreambuf_iterator<char>());
  for (const char* key : {"\"settings\"", "\"rlvr_learning_rate\"", "\"train_tasks\"", "\"ttt_k\""})
    EXPECT_NE(text.find(key), std::string::npos) << key;
  fs::remove_all(results);
}

}  // namespace
}  // namespace kbrl
