// `kbrl corpus`: the generators' kernels written as a language model's answers, one JSON line per
// (task, configuration) (policies/corpus.h): an SFT corpus for `kbrl sft --corpus` or any trainer
// that reads chat messages.
#include <filesystem>
#include <sstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <kbrl/error.h>

#include "commands.h"
#include "learn_common.h"
#include "out_dir.h"
#include <experiments/run_setup.h>
#include <kernels/generator.h>
#include <policies/corpus.h>
#include <policies/lm/lm_policy.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

struct CorpusOptions {
  std::vector<int> tasks;
  std::string split = "all";
  int per_task = 8;
  uint64_t seed = 0;
  std::string scale = "kernelbench";
  std::string policy;  // lm:MODEL[,...]: token counts and the prompt's options
  std::string out;
  bool force = false;
};

void run_corpus(const CorpusOptions& o) {
  KBRL_CHECK_INPUT(o.per_task >= 1, "--per-task must be >= 1 (got {})", o.per_task);
  KBRL_CHECK_INPUT(fs::path(o.out).extension() == ".jsonl", "--out {}: the corpus is JSON lines: name it *.jsonl",
                   o.out);
  KBRL_CHECK_INPUT(o.force || !fs::exists(o.out), "--out {} exists: give another file, or --force to replace it",
                   o.out);
  const Scale scale = parse_scale(o.scale);
  std::vector<int> tasks = select_tasks(o.tasks, o.tasks.empty() ? o.split : "");
  tasks = covered_only(tasks, [](const std::string& w) { progress_line("warning: " + w); });
  KBRL_CHECK_INPUT(!tasks.empty(), "no generator covers the selected tasks");
  PromptOptions prompt;
  prompt.style = TextStyle::file;
  prompt.shots = 0;
  std::unique_ptr<lm::LmPolicy> model;
  if (!o.policy.empty()) {
    lm::LmOptions lo = lm::parse_lm_spec(o.policy);
    KBRL_CHECK_INPUT(lo.prompt.style == TextStyle::file,
                     "--policy {}: the corpus answers with candidate files: add style=file to the spec", o.policy);
    prompt = lo.prompt;
    lo.model_options.device = "cpu";  // the tokenizer is all that is used
    model = std::make_unique<lm::LmPolicy>(lo);
  }
  const fs::path out(o.out);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());
  std::ostringstream file;
  int lines = 0;
  int64_t answer_tokens = 0;
  for (int id : tasks) {
    const TaskSpec task = task_spec(id, scale);
    const Prompt p = build_prompt(task, prompt);
    const std::optional<int> prompt_tokens =
        model ? std::optional<int>(static_cast<int>(model->prompt_tokens(p).size())) : std::nullopt;
    const std::string expert = generator_for(id).expert(task).str();
    for (const Config& c : corpus_configurations(task, o.per_task, o.seed)) {
      CorpusEntry e;
      e.task_id = id;
      e.task = task.name;
      e.family = std::string(to_string(task.family));
      e.split = split_of(id);
      e.scale = scale;
      e.config = c.str();
      e.expert = e.config == expert;
      e.prompt = p;
      e.answer = generator_answer(task, c);
      e.prompt_tokens = prompt_tokens;
      if (model) {
        e.answer_tokens = static_cast<int>(model->text_tokens(e.answer).size());
        answer_tokens += *e.answer_tokens;
      }
      file << corpus_line(e) << "\n";
      ++lines;
    }
    progress_line(fmt::format("corpus: task {} ({}) done", id, split_of(id)));
  }
  write_whole_file(o.out, file.str());
  std::cout << fmt::format("wrote {} answers of {} tasks to {}{}\n", lines, tasks.size(), out.string(),
                           model ? fmt::format(" ({} answer tokens)", answer_tokens) : std::string());
}

}  // namespace

void add_corpus_command(CLI::App& app) {
  auto o = std::make_shared<CorpusOptions>();
  auto* cmd = app.add_subcommand("corpus", "The generators' kernels as a language model's answers: an SFT corpus "
                                           "(JSON lines with chat messages; kbrl sft --corpus reads it)");
  cmd->add_option("--task", o->tasks, "task id (repeatable); default: the split's covered tasks")->delimiter(',');
  cmd->add_option("--split", o->split, "train, eval or all (each line records its task's split; sft trains on "
                                       "train lines and holds eval lines out)")
      ->capture_default_str();
  cmd->add_option("--per-task", o->per_task, "configurations per task: the expert's, then distinct safe ones "
                                             "drawn at random")
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "the draw's seed")->capture_default_str();
  cmd->add_option("--scale", o->scale, "kernelbench or small")->capture_default_str();
  cmd->add_option("--policy", o->policy, "lm:MODEL[,key=value...] with style=file: token counts under its "
                                         "tokenizer and its prompt (shots, system); default: style file, 0 shots");
  cmd->add_option("--out", o->out, "the corpus file (*.jsonl)")->required();
  cmd->add_flag("--force", o->force, "replace --out if it exists");
  cmd->callback([o] { run_corpus(*o); });
}

}  // namespace kbrl::cli
