#include "corpus.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <kernels/generator.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl {

namespace {

/// The knobs whose non-expert values are unsafe (kernels/knob_space.cpp's canonical meanings).
constexpr std::string_view kSafetyKnobs[] = {"precision", "fast_math", "tail"};

bool keeps_safety(const Config& c, const Config& expert) {
  for (std::string_view k : kSafetyKnobs)
    if (expert.has(k) && (!c.has(k) || c.at(k) != expert.at(k))) return false;
  return true;
}

/// The candidate file without the generator's comment header: the block of `//` lines that opens
/// with "// kbrl <family> generator" after the plan lines.
std::string without_generator_header(const std::string& file) {
  std::string out;
  bool in_header = false, done = false;
  size_t begin = 0;
  while (begin < file.size()) {
    size_t end = file.find('\n', begin);
    if (end == std::string::npos) end = file.size();
    const std::string_view line(file.data() + begin, end - begin);
    begin = end + 1;
    if (!done && !in_header && line.rfind("// kbrl ", 0) == 0 && line.find(" generator") != std::string_view::npos) {
      in_header = true;
      continue;
    }
    if (in_header) {
      if (line.rfind("//", 0) == 0) continue;
      in_header = false;
      done = true;
    }
    out.append(line).append("\n");
  }
  return out;
}

std::string fenced_cuda(const std::string& code) {
  return "```cuda\n" + code + (code.empty() || code.back() == '\n' ? "" : "\n") + "```\n";
}

}  // namespace

std::vector<Config> corpus_configurations(const TaskSpec& task, int n, uint64_t seed) {
  KBRL_CHECK_INPUT(n >= 1, "a corpus needs at least one configuration per task (got {})", n);
  const Generator& g = generator_for(task.id);
  const Config expert = g.expert(task);
  std::vector<Config> others;
  for (Config& c : g.space(task).enumerate())
    if (!(c == expert) && keeps_safety(c, expert)) others.push_back(std::move(c));
  uint64_t state = derive_seed(seed, {task.id});
  shuffle(others, state);
  std::vector<Config> out{expert};
  for (size_t i = 0; i < others.size() && static_cast<int>(out.size()) < n; ++i) out.push_back(others[i]);
  return out;
}

std::string generator_answer(const TaskSpec& task, const Config& config) {
  const Candidate c = generator_for(task.id).generate(task, config);
  return fenced_cuda(without_generator_header(candidate_file_text(c, task)));
}

std::string split_of(int task_id) {
  const auto& eval = split("eval").ids;
  return std::find(eval.begin(), eval.end(), task_id) != eval.end() ? "eval" : "train";
}

std::string corpus_line(const CorpusEntry& e) {
  nlohmann::ordered_json j;
  j["version"] = kCorpusVersion;
  j["task_id"] = e.task_id;
  j["task"] = e.task;
  j["family"] = e.family;
  j["split"] = e.split;
  j["scale"] = to_string(e.scale);
  j["config"] = e.config;
  j["expert"] = e.expert;
  j["prompt_version"] = e.prompt.version;
  j["prompt_tokens"] = e.prompt_tokens ? nlohmann::ordered_json(*e.prompt_tokens) : nlohmann::ordered_json();
  j["answer_tokens"] = e.answer_tokens ? nlohmann::ordered_json(*e.answer_tokens) : nlohmann::ordered_json();
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!e.prompt.system.empty()) messages.push_back({{"role", "system"}, {"content", e.prompt.system}});
  messages.push_back({{"role", "user"}, {"content", e.prompt.user}});
  messages.push_back({{"role", "assistant"}, {"content", e.answer}});
  j["messages"] = std::move(messages);
  return j.dump();
}

std::vector<CorpusEntry> read_corpus(const std::filesystem::path& file) {
  std::ifstream in(file);
  KBRL_CHECK_INPUT(in.good(), "cannot read the corpus {}: no such file or not readable (kbrl corpus writes one)",
                   file.string());
  std::vector<CorpusEntry> out;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{} line {}", file.string(), number);
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    KBRL_CHECK_INPUT(j.is_object(), "{}: not a JSON object", where);
    KBRL_CHECK_INPUT(j.value("version", "") == kCorpusVersion, "{}: version '{}' is not {} (write it again with "
                     "this kbrl's kbrl corpus)", where, j.value("version", ""), kCorpusVersion);
    CorpusEntry e;
    try {
      e.task_id = j.at("task_id").get<int>();
      e.split = j.at("split").get<std::string>();
      e.scale = parse_scale(j.at("scale").get<std::string>());
      e.config = j.at("config").get<std::string>();
      e.expert = j.value("expert", false);
      e.prompt.version = j.value("prompt_version", "");
      for (const auto& m : j.at("messages")) {
        const std::string role = m.at("role").get<std::string>(), content = m.at("content").get<std::string>();
        if (role == "system") e.prompt.system = content;
        else if (role == "user") e.prompt.user = content;
        else if (role == "assistant") e.answer = content;
      }
      if (j.contains("prompt_tokens") && j["prompt_tokens"].is_number()) e.prompt_tokens = j["prompt_tokens"].get<int>();
      if (j.contains("answer_tokens") && j["answer_tokens"].is_number()) e.answer_tokens = j["answer_tokens"].get<int>();
    } catch (const nlohmann::json::exception& x) {
      throw InputError(fmt::format("{}: {}", where, x.what()));
    }
    KBRL_CHECK_INPUT(has_task(e.task_id), "{}: task {} does not exist (1..100)", where, e.task_id);
    KBRL_CHECK_INPUT(e.split == "train" || e.split == "eval", "{}: split '{}' is neither train nor eval", where,
                     e.split);
    KBRL_CHECK_INPUT(e.split == split_of(e.task_id), "{}: task {} is in the {} split, not {}", where, e.task_id,
                     split_of(e.task_id), e.split);
    KBRL_CHECK_INPUT(!e.answer.empty(), "{}: no assistant message (the answer)", where);
    const TaskSpec task = task_spec(e.task_id, e.scale);
    e.task = task.name;
    e.family = std::string(to_string(task.family));
    out.push_back(std::move(e));
  }
  KBRL_CHECK_INPUT(!out.empty(), "the corpus {} holds no lines", file.string());
  return out;
}

}  // namespace kbrl
