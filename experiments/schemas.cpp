#include "schemas.h"

#include <fstream>
#include <sstream>

#include <kbrl/csv.h>
#include <kbrl/error.h>
#include <kernels/action.h>

namespace kbrl::schemas {

const CsvSchema& training_steps() {
  static const CsvSchema s{
      "training_steps",
      {"run", "step", "tasks", "rollouts", "compiled_rate", "correct_rate", "fast_1",
       "mean_speedup_correct", "mean_reward", "kl_to_start", "entropy", "loss", "grad_norm",
       "clip_fraction", "tokens", "teacher_tokens", "compile_seconds", "evaluator_seconds",
       "wall_seconds"}};
  return s;
}

const CsvSchema& ttt_task_steps() {
  static const CsvSchema s{"ttt_task_steps",
                           {"run", "step", "task_id", "rollouts", "correct_rate", "fast_1",
                            "best_speedup", "mean_speedup_correct"}};
  return s;
}

const CsvSchema& samples() {
  static const CsvSchema s{"samples",
                           {"run", "policy", "task_id", "sample", "config", "tokens", "logprob",
                            "surprisal", "token_count", "outcome", "compiled", "correct", "speedup",
                            "reward", "action", "mean_logprob", "prompt_version", "finish_reason",
                            "outcome_detail", "text", "code"}};
  return s;
}

std::vector<std::string> samples_row(const std::string& run, const std::string& policy, int index,
                                     const Rollout& r) {
  const Sample& s = r.sample;
  const double lp = s.logprob();
  const bool text = s.kind == ActionKind::text;
  return {run,
          policy,
          cell(s.task_id),
          cell(index),
          text ? std::string() : s.config.str(),
          fmt::format("{}", fmt::join(s.tokens, " ")),
          cell(lp),
          cell(-lp),
          cell(s.token_count()),
          std::string(to_string(r.outcome)),
          cell(r.compiled),
          cell(r.correct),
          cell(r.speedup),
          cell(r.reward),
          std::string(to_string(s.kind)),
          cell(s.mean_logprob()),
          s.prompt_version,
          s.finish_reason,
          csv::escape_text(r.outcome_detail),
          csv::escape_text(s.text),
          csv::escape_text(r.code)};
}

std::vector<SampleRow> read_samples(const std::filesystem::path& file) {
  std::ifstream in(file);
  KBRL_CHECK_INPUT(in.good(), "cannot read {}", file.string());
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  KBRL_CHECK_INPUT(line == samples().header(), "{} is not a samples CSV of this kbrl: its header is\n  {}\nnot\n  {}",
                   file.string(), line, samples().header());
  const size_t columns = samples().columns.size();
  std::vector<SampleRow> rows;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    const std::vector<std::string> f = csv::split_line(line);
    KBRL_CHECK_INPUT(f.size() == columns, "{}:{}: {} fields, expected {}", file.string(), line_no, f.size(), columns);
    SampleRow r;
    try {
      r.run = f[0];
      r.policy = f[1];
      r.task_id = std::stoi(f[2]);
      r.sample = std::stoi(f[3]);
      r.config = f[4];
      std::istringstream toks(f[5]);
      for (int t; toks >> t;) r.tokens.push_back(t);
      r.logprob = std::stod(f[6]);
      r.token_count = std::stoi(f[8]);
      r.outcome = parse_outcome(f[9]);
      r.compiled = f[10] == "1";
      r.correct = f[11] == "1";
      r.speedup = std::stod(f[12]);
      r.kind = parse_action_kind(f[14]);
      r.text = csv::unescape_text(f[19]);
    } catch (const std::logic_error& e) {
      throw InputError(fmt::format("{}:{}: malformed row ({})", file.string(), line_no, e.what()));
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

const CsvSchema& sft_epochs() {
  static const CsvSchema s{"sft_epochs", {"epoch", "items", "mean_loss", "nll_per_token", "wall_seconds"}};
  return s;
}

const CsvSchema& sweep_configs() {
  static const CsvSchema s{"sweep_configs",
                           {"task_id", "config", "is_expert", "outcome", "compiled", "correct", "speedup",
                            "candidate_ms", "reference_ms", "sol_fraction", "precision", "flags"}};
  return s;
}

const CsvSchema& sweep_tasks() {
  static const CsvSchema s{"sweep_tasks",
                           {"task_id", "task_name", "family", "space_size", "evaluated", "compiled",
                            "correct", "best_speedup", "best_config", "best_audit", "best_sol_fraction",
                            "best_fp32_speedup", "best_fp32_config", "expert_speedup"}};
  return s;
}

}  // namespace kbrl::schemas
