// `kbrl prompt`: prints exactly what a language-model policy sends for a task (kernels/prompt.h):
// the version line, then the system and user parts, or the three as one JSON object.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include <harness/record/eval_record.h>
#include <kernels/prompt.h>
#include <reference/task_registry.h>

namespace kbrl::cli {
namespace {

struct PromptCommandOptions {
  int task = 0;
  std::string style = "body";
  int shots = 1;
  std::string system = "reasoning";
  std::string feedback_path;
  std::string demonstration_path;
  bool teacher = false;
  std::string scale = "kernelbench";
  bool json = false;
};

std::string read_text(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  KBRL_CHECK_INPUT(in.good(), "cannot read {} file '{}'", what, path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The feedback of one EvalRecord of the task: the whole file as one JSON document, else its first
/// non-blank line (a rollout log is JSONL).
PromptFeedback read_feedback(const std::string& path, int task_id) {
  const std::string text = read_text(path, "feedback");
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line) && line.find_first_not_of(" \t\r") == std::string::npos) {
    }
    doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  }
  KBRL_CHECK_INPUT(!doc.is_discarded() && doc.is_object(),
                   "{}: not an EvalRecord (a JSON object, or a rollout log whose first line is one)",
                   path);
  EvalRecord record;
  try {
    record = record_from_json(doc);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", path, e.what()));
  }
  KBRL_CHECK_INPUT(record.task_id == task_id, "{}: the record is of task {}, not of task {}", path,
                   record.task_id, task_id);
  PromptFeedback f;
  f.outcome = std::string(to_string(record.outcome));
  f.detail = record.outcome_detail;
  f.compile_log = record.compile.log;
  if (record.runtime) {
    f.speedup = record.speedup;
    f.runtime_ms = record.runtime->median_ms;
  }
  if (record.reference) f.reference_ms = record.reference->median_ms;
  return f;
}

void run_prompt(const PromptCommandOptions& o) {
  const TaskSpec task = task_spec(o.task, parse_scale(o.scale));
  PromptOptions options;
  options.style = parse_text_style(o.style);
  options.shots = o.shots;
  options.system = parse_system_prompt(o.system);
  if (!o.feedback_path.empty()) options.feedback = read_feedback(o.feedback_path, task.id);
  if (!o.demonstration_path.empty())
    options.demonstration = read_text(o.demonstration_path, "demonstration");
  // An SDPO teacher's prompt, as LmPolicy::teacher_logprob builds it: the feedback and the
  // demonstration are teacher parts, and every teacher prompt ends with the instruction.
  options.resolve = o.teacher || options.feedback || options.demonstration;
  const Prompt prompt = build_prompt(task, options);
  if (o.json) {
    nlohmann::ordered_json j;
    j["version"] = prompt.version;
    j["system"] = prompt.system;
    j["user"] = prompt.user;
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << prompt.version << "\n=== system ===\n" << prompt.system;
  if (!prompt.system.empty() && prompt.system.back() != '\n') std::cout << "\n";
  std::cout << "=== user ===\n" << prompt.user;
  if (!prompt.user.empty() && prompt.user.back() != '\n') std::cout << "\n";
}

}  // namespace

void add_prompt_command(CLI::App& app) {
  auto o = std::make_shared<PromptCommandOptions>();
  auto* cmd = app.add_subcommand("prompt", "Print the prompt a language-model policy sends for a task");
  cmd->add_option("--task", o->task, "task id (1..100)")->required();
  cmd->add_option("--style", o->style, "body (the scaffold's kernel body) or file (a candidate file)")
      ->capture_default_str();
  cmd->add_option("--shots", o->shots,
                  fmt::format("worked examples of other tasks, 0..{}", kMaxPromptShots))
      ->capture_default_str();
  cmd->add_option("--system", o->system, "reasoning or none")->capture_default_str();
  cmd->add_option("--feedback", o->feedback_path,
                  "an EvalRecord JSON (or a rollout log: its first record) to show as execution "
                  "feedback (SDPO teacher)");
  cmd->add_option("--demonstration", o->demonstration_path,
                  "a file holding a correct solution to show (SDPO teacher)");
  cmd->add_flag("--teacher", o->teacher,
                "the SDPO teacher's prompt: ends with 'Correctly solve the original question.' (alone: the "
                "prompt-only teacher's; implied by --feedback and --demonstration)");
  cmd->add_option("--scale", o->scale, "kernelbench or small")->capture_default_str();
  cmd->add_flag("--json", o->json, "print {\"version\", \"system\", \"user\"} as JSON");
  cmd->callback([o] { run_prompt(*o); });
}

}  // namespace kbrl::cli
