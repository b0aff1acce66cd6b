// The SFT corpus of the generators' kernels (policies/corpus.h): the configurations a task takes
// (the expert's first, distinct, legal, safe, seeded), the answers (one ```cuda block holding the
// candidate file without the generator's header, realizing to the generator's launches), the
// split of a task, and the JSON lines written and read back, with every error read_corpus names.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <ctest/text_testing.h>

#include <kbrl/error.h>
#include <kernels/action.h>
#include <kernels/generator.h>
#include <policies/corpus.h>
#include <kernels/prompt.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

namespace fs = std::filesystem;

using kbrl::testing::contains;
using kbrl::testing::starts_with;

constexpr std::string_view kSafety[] = {"precision", "fast_math", "tail"};

TaskSpec kb(int id) { return task_spec(id, Scale::kernelbench); }

std::set<std::string> strings_of(const std::vector<Config>& configs) {
  std::set<std::string> out;
  for (const Config& c : configs) out.insert(c.str());
  return out;
}

/// The legal configurations other than the expert's that keep the expert's safety knobs.
int64_t safe_others(const TaskSpec& task) {
  const Generator& g = generator_for(task.id);
  const Config expert = g.expert(task);
  int64_t n = 0;
  for (const Config& c : g.space(task).enumerate()) {
    bool safe = true;
    for (std::string_view k : kSafety)
      if (expert.has(k)) safe = safe && c.at(k) == expert.at(k);
    n += safe && !(c == expert);
  }
  return n;
}

TEST(Corpus, ConfigurationsStartWithTheExpertAndAreDistinctLegalAndSafe) {
  for (int id : {19, 23, 40, 50}) {
    const TaskSpec task = kb(id);
    const Generator& g = generator_for(id);
    const Config expert = g.expert(task);
    const KnobSpace space = g.space(task);
    const std::vector<Config> configs = corpus_configurations(task, 6, 3);
    ASSERT_EQ(configs.size(), static_cast<size_t>(std::min<int64_t>(6, 1 + safe_others(task)))) << "task " << id;
    EXPECT_EQ(configs.front(), expert) << "task " << id;
    EXPECT_EQ(strings_of(configs).size(), configs.size()) << "task " << id;
    for (const Config& c : configs) {
      EXPECT_TRUE(space.is_legal(c)) << "task " << id << ": " << c.str() << ": " << space.why_illegal(c);
      for (std::string_view k : kSafety) {
        EXPECT_EQ(expert.has(k), c.has(k)) << "task " << id << " knob " << k;
        if (expert.has(k)) {
          EXPECT_EQ(c.at(k), expert.at(k)) << "task " << id << " knob " << k << ": " << c.str();
        }
      }
    }
  }
}

// Task 19's space has unsafe values the filter must drop: the test above would pass vacuously if it
// had none.
TEST(Corpus, TheSafetyFilterDropsSomethingOnReLU) {
  const TaskSpec task = kb(19);
  const Generator& g = generator_for(19);
  const Config expert = g.expert(task);
  int safety_knobs = 0;
  for (std::string_view k : kSafety) safety_knobs += expert.has(k);
  EXPECT_GT(safety_knobs, 0);
  EXPECT_LT(1 + safe_others(task), g.space(task).size());
  // All of the safe ones, asked for more than there are.
  const std::vector<Config> all = corpus_configurations(task, 1'000'000, 0);
  EXPECT_EQ(static_cast<int64_t>(all.size()), 1 + safe_others(task));
  EXPECT_GT(all.size(), 20u);  // a big space: two seeds' draws below can differ
}

TEST(Corpus, ConfigurationsAreSeeded) {
  const TaskSpec task = kb(19);
  const std::vector<Config> a = corpus_configurations(task, 8, 1), b = corpus_configurations(task, 8, 1),
                            c = corpus_configurations(task, 8, 2);
  ASSERT_EQ(a.size(), 8u);
  ASSERT_EQ(c.size(), 8u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.front(), c.front());  // the expert's, whatever the seed
  // n = 1 is the expert's alone.
  const std::vector<Config> one = corpus_configurations(task, 1, 5);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], generator_for(19).expert(task));
}

TEST(Corpus, MoreThanTheSpaceHoldsGivesFewer) {
  // The covered task with the fewest safe configurations.
  int smallest = 0;
  int64_t fewest = 0;
  for (int id : {19, 23, 40, 47, 1}) {
    const int64_t n = 1 + safe_others(kb(id));
    if (smallest == 0 || n < fewest) smallest = id, fewest = n;
  }
  const std::vector<Config> got = corpus_configurations(kb(smallest), static_cast<int>(fewest) + 5, 0);
  EXPECT_EQ(static_cast<int64_t>(got.size()), fewest) << "task " << smallest;
  EXPECT_EQ(strings_of(got).size(), got.size());
}

TEST(Corpus, FewerThanOneConfigurationIsAnInputError) {
  for (int n : {0, -1}) {
    try {
      corpus_configurations(kb(19), n, 0);
      ADD_FAILURE() << "no error for n = " << n;
    } catch (const InputError& e) {
      EXPECT_TRUE(contains(e.what(), "at least one configuration")) << n;
    }
  }
}

/// Does `text` hold a line that opens like the generators' comment headers ("// kbrl <family> generator...")?
bool has_generator_header(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("// kbrl ", 0) == 0 && line.find(" generator") != std::string::npos) return true;
  return false;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

int fence_lines(const std::string& text) {
  int n = 0;
  for (const std::string& l : lines_of(text)) n += l.rfind("```", 0) == 0;
  return n;
}

/// Is `part` `whole` with some lines left out (in order)?
bool is_subsequence(const std::vector<std::string>& part, const std::vector<std::string>& whole) {
  size_t i = 0;
  for (const std::string& l : whole)
    if (i < part.size() && part[i] == l) ++i;
  return i == part.size();
}

TEST(Corpus, AnswersAreOneCudaBlockThatRealizesAsTheGeneratorsCandidate) {
  for (int id : {19, 23, 40, 50, 1, 47}) {
    const TaskSpec task = kb(id);
    const Generator& g = generator_for(id);
    for (const Config& config : corpus_configurations(task, 2, 7)) {
      const std::string where = "task " + std::to_string(id) + " " + config.str();
      const Candidate generated = g.generate(task, config);
      ASSERT_TRUE(has_generator_header(candidate_file_text(generated, task))) << where;  // there is one to drop
      const std::string answer = generator_answer(task, config);
      EXPECT_TRUE(starts_with(answer, "```cuda\n")) << where;
      ASSERT_GE(answer.size(), 4u);
      EXPECT_EQ(answer.substr(answer.size() - 4), "```\n") << where;
      EXPECT_EQ(fence_lines(answer), 2) << where;  // exactly one block
      EXPECT_TRUE(contains(answer, "// kbrl: launch")) << where;
      EXPECT_FALSE(contains(answer, " generator:")) << where;
      EXPECT_FALSE(has_generator_header(answer)) << where;

      const Realized r = realize(task, Action{ActionKind::text, {}, answer});
      ASSERT_TRUE(r.candidate.has_value()) << where << ": " << r.format_error;
      EXPECT_EQ(r.style, TextStyle::file) << where;
      EXPECT_EQ(r.candidate->task_id, id) << where;
      ASSERT_FALSE(generated.launches.empty()) << where;
      EXPECT_EQ(r.candidate->launches, generated.launches) << where;
      EXPECT_EQ(r.candidate->scratch, generated.scratch) << where;
      EXPECT_EQ(r.candidate->options, generated.options) << where;
      // The code is the generator's file with lines taken out (the header), nothing else changed.
      const std::vector<std::string> file = lines_of(candidate_file_text(generated, task)), code = lines_of(r.code);
      EXPECT_LT(code.size(), file.size()) << where;
      EXPECT_TRUE(is_subsequence(code, file)) << where;
      EXPECT_FALSE(has_generator_header(r.candidate->source)) << where;
    }
  }
}

TEST(Corpus, SplitOfATask) {
  EXPECT_EQ(split_of(4), "eval");
  EXPECT_EQ(split_of(20), "eval");
  EXPECT_EQ(split_of(19), "train");
  EXPECT_EQ(split_of(23), "train");
  int eval = 0;
  for (int id = 1; id <= 100; ++id) eval += split_of(id) == "eval";
  EXPECT_EQ(eval, static_cast<int>(split("eval").ids.size()));
  EXPECT_EQ(eval, 20);
}

// ---- corpus lines ----

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kbrl-corpus-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

CorpusEntry entry_for(int id, const Config& config, bool with_system) {
  const TaskSpec task = kb(id);
  PromptOptions po;
  po.style = TextStyle::file;
  po.shots = 0;
  if (!with_system) po.system = SystemPrompt::none;
  CorpusEntry e;
  e.task_id = id;
  e.task = task.name;
  e.family = std::string(to_string(task.family));
  e.split = split_of(id);
  e.scale = Scale::kernelbench;
  e.config = config.str();
  e.expert = config == generator_for(id).expert(task);
  e.prompt = build_prompt(task, po);
  e.answer = generator_answer(task, config);
  if (with_system) {
    e.prompt_tokens = 1234;
    e.answer_tokens = 567;
  }
  return e;
}

void write_lines(const fs::path& file, const std::vector<std::string>& lines) {
  std::ofstream out(file, std::ios::trunc);
  for (const std::string& l : lines) out << l << "\n";
}

void expect_same(const CorpusEntry& a, const CorpusEntry& b) {
  EXPECT_EQ(a.task_id, b.task_id);
  EXPECT_EQ(a.task, b.task);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.split, b.split);
  EXPECT_EQ(a.scale, b.scale);
  EXPECT_EQ(a.config, b.config);
  EXPECT_EQ(a.expert, b.expert);
  EXPECT_EQ(a.prompt.version, b.prompt.version);
  EXPECT_EQ(a.prompt.system, b.prompt.system);
  EXPECT_EQ(a.prompt.user, b.prompt.user);
  EXPECT_EQ(a.answer, b.answer);
  EXPECT_EQ(a.prompt_tokens, b.prompt_tokens);
  EXPECT_EQ(a.answer_tokens, b.answer_tokens);
}

TEST(Corpus, LinesRoundTripThroughAFile) {
  const std::vector<Config> c19 = corpus_configurations(kb(19), 2, 0);
  ASSERT_EQ(c19.size(), 2u);
  const std::vector<CorpusEntry> entries = {entry_for(19, c19[0], true), entry_for(19, c19[1], false),
                                            entry_for(40, generator_for(40).expert(kb(40)), true)};
  ASSERT_FALSE(entries[0].prompt.system.empty());
  ASSERT_TRUE(entries[1].prompt.system.empty());
  EXPECT_TRUE(entries[0].expert);
  EXPECT_FALSE(entries[1].expert);
  EXPECT_EQ(entries[2].split, "eval");

  // One JSON object per line, chat messages beside kbrl's fields.
  const std::string line = corpus_line(entries[0]);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(line);
  EXPECT_EQ(j.at("version"), std::string(kCorpusVersion));
  EXPECT_EQ(j.at("split"), "train");
  EXPECT_EQ(j.at("task_id"), 19);
  ASSERT_EQ(j.at("messages").size(), 3u);
  EXPECT_EQ(j.at("messages")[0].at("role"), "system");
  EXPECT_EQ(j.at("messages")[2].at("role"), "assistant");
  EXPECT_EQ(j.at("messages")[2].at("content"), entries[0].answer);
  EXPECT_EQ(nlohmann::json::parse(corpus_line(entries[1])).at("messages").size(), 2u);  // no system message
  EXPECT_TRUE(nlohmann::json::parse(corpus_line(entries[1])).at("prompt_tokens").is_null());

  const fs::path file = scratch("round_trip.jsonl");
  write_lines(file, {corpus_line(entries[0]), "", corpus_line(entries[1]), "  ", corpus_line(entries[2])});
  const std::vector<CorpusEntry> back = read_corpus(file);
  ASSERT_EQ(back.size(), entries.size());  // blank lines skipped
  for (size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE("entry " + std::to_string(i));
    expect_same(back[i], entries[i]);
  }
  fs::remove(file);
}

/// read_corpus's message for a file of `lines` ("no error" when it reads).
std::string error_reading(const std::vector<std::string>& lines, const std::string& name) {
  const fs::path file = scratch(name);
  write_lines(file, lines);
  try {
    read_corpus(file);
  } catch (const InputError& e) {
    fs::remove(file);
    return e.what();
  }
  fs::remove(file);
  return "no error";
}

TEST(Corpus, ReadCorpusNamesWhatIsWrong) {
  const CorpusEntry good = entry_for(19, generator_for(19).expert(kb(19)), true);
  const std::string line = corpus_line(good);
  auto edited = [&](auto edit) {
    nlohmann::json j = nlohmann::json::parse(line);
    edit(j);
    return j.dump();
  };
  auto with_good_first = [&](const std::string& bad, const std::string& name) {
    return error_reading({line, bad}, name);
  };

  EXPECT_TRUE(contains(with_good_first("{not json", "malformed.jsonl"), "malformed.jsonl line 2: not a JSON object"));
  EXPECT_TRUE(contains(with_good_first("[1, 2]", "array.jsonl"), "line 2: not a JSON object"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j["version"] = "kbrl-corpus-0"; }), "version.jsonl"), "line 2: version 'kbrl-corpus-0' is not kbrl-corpus-1"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j.erase("version"); }), "no_version.jsonl"), "line 2: version '' is not kbrl-corpus-1"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j["split"] = "test"; }), "split.jsonl"), "line 2: split 'test' is neither train nor eval"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j["split"] = "eval"; }), "wrong_split.jsonl"), "line 2: task 19 is in the train split, not eval"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j["task_id"] = 101; }), "unknown_task.jsonl"), "line 2: task 101 does not exist"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) {
                                nlohmann::json& m = j["messages"];
                                m.erase(m.size() - 1);  // the assistant's
                              }),
                              "no_answer.jsonl"), "line 2: no assistant message"));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j.erase("config"); }), "no_config.jsonl"), "line 2: "));
  EXPECT_TRUE(contains(with_good_first(edited([](nlohmann::json& j) { j["task_id"] = "nineteen"; }), "bad_type.jsonl"), "line 2: "));

  EXPECT_TRUE(contains(error_reading({}, "empty.jsonl"), "empty.jsonl holds no lines"));
  EXPECT_TRUE(contains(error_reading({"", "   "}, "blank.jsonl"), "blank.jsonl holds no lines"));
  const fs::path missing = scratch("missing.jsonl");
  fs::remove(missing);
  try {
    read_corpus(missing);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "cannot read the corpus " + missing.string()));
  }
  // The good line alone reads.
  EXPECT_EQ(error_reading({line}, "good.jsonl"), "no error");
}

}  // namespace
}  // namespace kbrl
