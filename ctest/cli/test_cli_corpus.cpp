// `kbrl corpus` (the generators' kernels as a language model's answers, JSON lines) and the flags of
// `kbrl sft --corpus`, as a user runs them: no GPU, no model file.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctest/text_testing.h>
#include "cli_testing.h"
#include <kernels/generator.h>
#include <policies/corpus.h>
#include <reference/task_registry.h>

namespace kbrl::testing {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) { return fresh_dir("kbrl-cli-corpus", name); }

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<nlohmann::json> json_lines(const fs::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(CliCorpus, WritesOneLinePerTaskAndConfigurationWithItsSplit) {
  const fs::path dir = scratch("write");
  const fs::path out = dir / "sub" / "corpus.jsonl";  // the folder is made
  auto r = run_cli("corpus --task 19,20 --per-task 2 --seed 3 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "wrote 4 answers of 2 tasks to " + out.string()));
  EXPECT_FALSE(fs::exists(out.string() + ".part"));
  const std::vector<nlohmann::json> lines = json_lines(out);
  ASSERT_EQ(lines.size(), 4u);
  std::map<int, int> per_task;
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& j = lines[i];
    const int id = j.at("task_id").get<int>();
    ++per_task[id];
    EXPECT_EQ(j.at("version"), std::string(kCorpusVersion)) << i;
    EXPECT_EQ(j.at("split"), id == 19 ? "train" : "eval") << i;
    EXPECT_EQ(j.at("scale"), "kernelbench") << i;
    // Each task's expert configuration first.
    const bool first = i % 2 == 0;
    EXPECT_EQ(j.at("expert"), first) << i;
    if (first) {
      const TaskSpec task = task_spec(id, Scale::kernelbench);
      EXPECT_EQ(j.at("config"), generator_for(id).expert(task).str()) << i;
    }
    EXPECT_TRUE(j.at("prompt_tokens").is_null()) << i;  // no --policy: no tokenizer
    const nlohmann::json& m = j.at("messages");
    ASSERT_GE(m.size(), 2u) << i;
    EXPECT_EQ(m.back().at("role"), "assistant") << i;
    EXPECT_EQ(m.back().at("content").get<std::string>().rfind("```cuda\n", 0), 0u) << i;
  }
  EXPECT_EQ(per_task, (std::map<int, int>{{19, 2}, {20, 2}}));
  EXPECT_EQ(lines[0].at("task_id"), 19);  // in task order
  EXPECT_NE(lines[0].at("config"), lines[1].at("config"));
  // What kbrl sft --corpus reads.
  const std::vector<CorpusEntry> entries = read_corpus(out);
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].split, "train");
  EXPECT_EQ(entries[3].split, "eval");
}

TEST(CliCorpus, AnExistingOutNeedsForce) {
  const fs::path dir = scratch("force");
  const fs::path out = dir / "corpus.jsonl";
  auto r = run_cli("corpus --task 19,20 --per-task 2 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string before = read_text(out);
  ASSERT_EQ(count_lines(before), 4);

  r = run_cli("corpus --task 19 --per-task 1 --out " + out.string());
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "--out " + out.string() + " exists: give another file, or --force to replace it"));
  EXPECT_EQ(read_text(out), before);
  EXPECT_FALSE(fs::exists(out.string() + ".part"));

  r = run_cli("corpus --task 19 --per-task 1 --force --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::vector<nlohmann::json> lines = json_lines(out);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("task_id"), 19);
  EXPECT_EQ(lines[0].at("expert"), true);
}

TEST(CliCorpus, TheOutMustBeJsonLines) {
  const fs::path dir = scratch("name");
  for (const char* name : {"x.json", "x", "x.jsonl.txt"}) {
    const fs::path out = dir / name;
    auto r = run_cli("corpus --task 19 --per-task 1 --out " + out.string());
    EXPECT_EQ(r.status, 2) << name << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "the corpus is JSON lines: name it *.jsonl")) << name;
    EXPECT_FALSE(fs::exists(out)) << name;
    EXPECT_FALSE(fs::exists(out.string() + ".part")) << name;
  }
  auto r = run_cli("corpus --task 19 --per-task 0 --out " + (dir / "zero.jsonl").string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--per-task must be >= 1 (got 0)"));
  EXPECT_FALSE(fs::exists(dir / "zero.jsonl"));
}

TEST(CliCorpus, SftTakesACorpusOnlyAloneAndOnlyForALanguageModel) {
  const fs::path dir = scratch("sft");
  const fs::path corpus = dir / "corpus.jsonl";
  auto r = run_cli("corpus --task 19,20 --per-task 1 --out " + corpus.string());
  ASSERT_EQ(r.status, 0) << r.output;
  const fs::path out = dir / "out";

  // Exactly one source of data.
  r = run_cli("sft --env synthetic --scale small --task 19 --teacher heuristic --corpus " + corpus.string() +
              " --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "--teacher heuristic|known-good, --from-samples FILE or --corpus FILE (exactly one)"));
  EXPECT_FALSE(fs::exists(out));

  // The schedule policy (the default, and named) writes no text.
  for (const std::string policy : {"", " --policy schedule"}) {
    r = run_cli("sft --env synthetic --scale small --corpus " + corpus.string() + policy + " --out " + out.string());
    EXPECT_EQ(r.status, 2) << policy << ": " << r.output;
    EXPECT_TRUE(contains(r.output, "--corpus trains a language model on kernels written as text: use --policy "
                                    "lm:MODEL,style=file"))
        << policy;
    EXPECT_FALSE(fs::exists(out)) << policy;
  }

  // A language model whose prompts ask for scaffold bodies cannot learn file answers.
  r = run_cli("sft --env synthetic --scale small --policy lm:random:1x64,shots=0,system=none --corpus " +
              corpus.string() + " --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "add style=file to the lm: spec"));
  EXPECT_FALSE(fs::exists(out));  // refused before the folder is made

  // SFT on top of an adapter would write a delta no later load reproduces.
  r = run_cli("sft --env synthetic --scale small --policy lm:random:1x64,style=file,adapter=" + (dir / "a.pt").string() +
              " --corpus " + corpus.string() + " --out " + out.string());
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_TRUE(contains(r.output, "adapters do not stack")) << r.output;
  EXPECT_FALSE(fs::exists(out));

  // A corpus that is not there is refused by name.
  r = run_cli("sft --env synthetic --scale small --policy lm:random:1x64,style=file --corpus " +
              (dir / "none.jsonl").string() + " --out " + (dir / "out2").string());
  EXPECT_NE(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "none.jsonl"));
  EXPECT_FALSE(fs::exists(dir / "out2"));
}

/// A small CSV's lines, each split at its commas (no quoted fields).
std::vector<std::vector<std::string>> csv_fields(const fs::path& file) {
  std::vector<std::vector<std::string>> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields(1);
    for (char c : line) {
      if (c == ',') fields.emplace_back();
      else fields.back().push_back(c);
    }
    out.push_back(std::move(fields));
  }
  return out;
}

// A tiny random model (one layer, hidden 64, on the CPU) learns the train task's answers; the eval
// task's answers are held out, measured at every step; the result is a LoRA adapter.
TEST(CliCorpus, SftOnACorpusWritesAnAdapterAndHeldOutNll) {
  const fs::path dir = scratch("sft_run");
  const fs::path corpus = dir / "corpus.jsonl", out = dir / "out";
  auto r = run_cli("corpus --task 19,20 --per-task 2 --out " + corpus.string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_cli("sft --env synthetic --scale small --policy lm:random:1x64,style=file,shots=0,system=none --corpus " +
              corpus.string() + " --epochs 2 --batch-size 2 --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(contains(r.output, "2 answers of 1 train tasks, 2 held-out answers of 1 eval tasks"));
  EXPECT_TRUE(contains(r.output, "sft on 2 items, 2 epochs"));
  EXPECT_TRUE(fs::exists(out / "adapter.pt"));
  EXPECT_FALSE(fs::exists(out / "sft.pt"));
  const auto steps = csv_fields(out / "sft_steps.csv");
  ASSERT_EQ(steps.size(), 4u);  // the header, step 0 (before training), one step per epoch
  EXPECT_EQ(steps[0], (std::vector<std::string>{"step", "epoch", "train_loss", "eval_nll_per_token"}));
  for (size_t i = 1; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i].size(), 4u) << i;
    EXPECT_EQ(steps[i][0], std::to_string(i - 1));
    const double nll = std::stod(steps[i][3]);
    EXPECT_GT(nll, 0.0) << i;  // a random model over bytes: about ln(256) nats a token
    EXPECT_LT(nll, 10.0) << i;
  }
}

}  // namespace
}  // namespace kbrl::testing
