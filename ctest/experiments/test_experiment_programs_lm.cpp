// Every experiment program with a language model in the process as its policy (--policy lm:...):
// a random Llama-shaped model (byte tokenizer, one layer) on the CPU, the evaluator compiling only
// (--arch sm_90, no GPU), the tiny budget and the GRPO report's composite reward. What it checks is
// the plumbing the reports' experiments need from a language model: SFT on the known-good kernels
// lowers their NLL, checkpoints are written and read back, every experiment writes its tables with
// the language model's settings (temperature 0.25, LoRA rank 16), SDPO's feedback teacher scores
// tokens. A random model writes no kernel that compiles, so no reward is earned here: what RLVR does
// to a real model's compile rate is measured with SmolLM2 (results/cpu-2core/lm-smoke-smollm2).
#include <filesystem>
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
  fs::remove_all(results);
}

}  // namespace
}  // namespace kbrl
