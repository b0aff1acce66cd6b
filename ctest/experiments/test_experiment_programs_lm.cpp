// Every experiment program with a language model in the process as its policy (--policy lm:...):
// a random Llama-shaped model (byte tokenizer, one layer) on the CPU, the evaluator compiling only
// (--arch sm_90, no GPU), the tiny budget and the GRPO report's composite reward. What it checks is
// the plumbing the reports' experiments need from a language model: SFT on the known-good kernels
// lowers their NLL, checkpoints are written and read back, every experiment writes its tables with
// the language model's settings (temperature 0.25, LoRA rank 16), SDPO's feedback teacher scores
// tokens. A random model writes no kernel that compiles, so no reward is earned here: what RLVR does
// to a real model's compile rate is measured with SmolLM2 (results/cpu-2core/lm-smoke-smollm2).
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctest/csv_testing.h>

#include "program_testing.h"

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using testing::file_text;
using testing::run_output;

TEST(ExperimentProgramsLm, EveryExperimentTrainsAndSamplesALanguageModel) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-experiments-lm-" + std::to_string(::getpid()));
  fs::remove_all(results);
  const std::string model = "lm:random:1x64:1,max_tokens=8,shots=0,system=none";
  const std::string flags = " --budget tiny --arch sm_90 --reward composite --policy " + model + " --results " +
                            results.string();
  const std::vector<std::string> order = {"base_policy", "policy_sweep", "best_of_n", "selection",
                                          "length_control", "ttt", "oversharpening", "robustness",
                                          "transfer", "lr_sweep", "sdpo", "ablations", "per_task_ttt",
                                          "grpo_report", "entropy_ttt", "sparsification"};
  const fs::path tiny = results / "tiny";
  for (const std::string& name : order) {
    SCOPED_TRACE(name);
    std::string output;
    ASSERT_EQ(run_output(std::string(KBRL_EXPERIMENT) + " " + name + flags, &output), 0) << output;
    const nlohmann::json settings = nlohmann::json::parse(file_text(tiny / name / "settings.json"));
    EXPECT_EQ(settings.at("policy"), model);
    EXPECT_EQ(settings.at("reward"), "composite");
    EXPECT_EQ(settings.at("settings").at("temperature"), 0.25);
    EXPECT_EQ(settings.at("settings").at("lora_rank"), 16);
  }
  // SFT on the known-good kernels written as text lowers their NLL; its checkpoints are the model's.
  const auto sft = testing::read_csv(tiny / "base_policy" / "sft_epochs.csv").rows;
  ASSERT_GE(sft.size(), 2u);
  EXPECT_LT(std::stod(sft.back().at("nll_per_token")), std::stod(sft.front().at("nll_per_token")));
  for (const char* checkpoint : {"sft.pt", "final.pt", "final_adapter.pt"})
    EXPECT_TRUE(fs::exists(tiny / "base_policy" / "checkpoints" / checkpoint)) << checkpoint;
  // Table 3's rows: the model as loaded, after SFT, after RLVR.
  const auto sweep = testing::read_csv(tiny / "policy_sweep" / "model_sweep.csv").rows;
  ASSERT_EQ(sweep.size(), 3u);
  EXPECT_EQ(sweep[0].at("model"), "lm_loaded");
  EXPECT_EQ(sweep[1].at("model"), "lm_sft");
  EXPECT_EQ(sweep[2].at("model"), "lm_rlvr");
  // best_of_n samples the RLVR checkpoint; the text actions and their token counts are recorded.
  const auto samples = testing::read_csv(tiny / "best_of_n" / "samples.csv").rows;
  ASSERT_FALSE(samples.empty());
  EXPECT_EQ(samples.front().at("policy"), "lm_rlvr");
  // SDPO: the feedback teacher (the same model reading the execution feedback) scores tokens.
  const auto sdpo = testing::read_csv(tiny / "sdpo" / "sdpo.csv").rows;
  bool feedback = false;
  for (const auto& row : sdpo)
    if (row.at("method") == "sdpo_feedback") {
      feedback = true;
      EXPECT_GT(std::stod(row.at("teacher_tokens")), 0) << "the feedback teacher scored nothing";
    }
  EXPECT_TRUE(feedback);
  // The temperature ablation runs at the reports' temperatures.
  bool reports_temperature = false;
  for (const auto& row : testing::read_csv(tiny / "ablations" / "ablations.csv").rows)
    reports_temperature |= row.at("method") == "temperature" && row.at("value") == "0.25";
  EXPECT_TRUE(reports_temperature);
  // The self-improvement report's E4/E5 start from an RLVR step's adapter merged into the model, at
  // its temperature 0.4.
  const nlohmann::json per_task = nlohmann::json::parse(file_text(tiny / "per_task_ttt" / "settings.json"));
  EXPECT_EQ(per_task.at("settings").at("per_task_ttt_temperature"), 0.4);
  EXPECT_EQ(testing::read_csv(tiny / "per_task_ttt" / "per_task_ttt_summary.csv").rows.size(), 4u);

  // A spec's adapter (here kbrl sft's on two known-good kernels) is the warm start: no second SFT on
  // the known-good kernels, whose NLL is still measured (the epoch-0 row), under the merged adapter.
  const fs::path again = results / "adapted";
  std::string output;
  ASSERT_EQ(run_output(std::string(KBRL_CLI) + " sft --policy " + model + " --teacher known-good --task 19,23 --epochs 2 --out " +
                           (again / "sft").string(), &output), 0) << output;
  const std::string adapted = model + ",adapter=" + (again / "sft" / "adapter.pt").string();
  ASSERT_EQ(run_output(std::string(KBRL_EXPERIMENT) + " base_policy --budget tiny --arch sm_90 --reward composite --policy " +
                           adapted + " --results " + again.string(), &output), 0) << output;
  EXPECT_NE(output.find("SFT warm start: the spec's adapter"), std::string::npos) << output;
  const auto warm = testing::read_csv(again / "tiny" / "base_policy" / "sft_epochs.csv").rows;
  ASSERT_EQ(warm.size(), 1u);
  EXPECT_EQ(warm[0].at("epoch"), "0");
  EXPECT_NE(warm[0].at("nll_per_token"), sft.front().at("nll_per_token")) << "the adapter was not applied";
  EXPECT_TRUE(fs::exists(again / "tiny" / "base_policy" / "checkpoints" / "final.pt"));
  fs::remove_all(results);
}

// best_of_n of the language model as given (--from loaded: no base_policy run), with sampling
// overlapping evaluation (--overlap on) and without: the same rows in the same order; TTT from the
// model as given; the flags' bad values and uses are refused with what to do.
TEST(ExperimentProgramsLm, BestOfNSamplesTheModelAsLoadedAndOverlapChangesNoRow) {
  const fs::path results = fs::temp_directory_path() / ("kbrl-test-bon-loaded-" + std::to_string(::getpid()));
  fs::remove_all(results);
  const std::string model = "lm:random:1x64:1,max_tokens=8,shots=0,system=none";
  const std::string flags = " best_of_n --budget tiny --arch sm_90 --from loaded --policy " + model;
  std::map<std::string, std::vector<std::vector<std::string>>> rows;
  for (const std::string overlap : {"off", "on", "auto"}) {
    SCOPED_TRACE(overlap);
    const fs::path dir = results / overlap;
    std::string output;
    ASSERT_EQ(run_output(std::string(KBRL_EXPERIMENT) + flags + " --overlap " + overlap + " --results " + dir.string(),
                         &output), 0) << output;
    const nlohmann::json settings = nlohmann::json::parse(file_text(dir / "tiny" / "best_of_n" / "settings.json"));
    EXPECT_EQ(settings.at("from"), "loaded");
    EXPECT_EQ(settings.at("overlap"), overlap == "on") << "auto: the model is on the CPU, so no overlap";
    const auto table = testing::read_csv(dir / "tiny" / "best_of_n" / "samples.csv");
    ASSERT_FALSE(table.rows.empty());
    EXPECT_EQ(table.rows.front().at("policy"), "lm_loaded");
    for (const auto& row : table.rows) {
      std::vector<std::string> kept;
      for (const char* column : {"run", "task_id", "sample", "tokens", "logprob", "outcome", "text"})
        kept.push_back(row.at(column));
      rows[overlap].push_back(kept);
    }
  }
  EXPECT_EQ(rows["on"], rows["off"]);
  EXPECT_EQ(rows["auto"], rows["off"]);
  // The adaptation experiments start from the model as given too: TTT beside best_of_n's samples,
  // with no base_policy run.
  {
    const fs::path dir = results / "off";
    std::string output;
    ASSERT_EQ(run_output(std::string(KBRL_EXPERIMENT) + " ttt --budget tiny --arch sm_90 --from loaded --policy " + model +
                             " --results " + dir.string(), &output), 0) << output;
    EXPECT_FALSE(fs::exists(dir / "tiny" / "base_policy"));
    const nlohmann::json settings = nlohmann::json::parse(file_text(dir / "tiny" / "ttt" / "settings.json"));
    EXPECT_EQ(settings.at("from"), "loaded");
    EXPECT_FALSE(testing::read_csv(dir / "tiny" / "ttt" / "equal_budget.csv").rows.empty());
  }
  const std::string bad_flags = " --budget tiny --arch sm_90 --results " + (results / "bad").string();
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {" best_of_n --from loaded", "--policy lm:MODEL"},
           {" policy_sweep --from loaded --policy " + model, "policy_sweep does not start from that checkpoint"},
           {" best_of_n --from scratch --policy " + model, "unknown --from 'scratch'"},
           {" best_of_n --overlap sometimes --policy " + model, "unknown --overlap 'sometimes'"}}) {
    SCOPED_TRACE(args);
    std::string output;
    EXPECT_NE(run_output(std::string(KBRL_EXPERIMENT) + args + bad_flags, &output), 0) << output;
    EXPECT_NE(output.find(says), std::string::npos) << output;
  }
  fs::remove_all(results);
}

}  // namespace
}  // namespace kbrl
