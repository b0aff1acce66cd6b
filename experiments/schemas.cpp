#include "schemas.h"

#include <fstream>
#include <map>
#include <sstream>

#include <fmt/ranges.h>
#include <kbrl/csv.h>
#include <kbrl/error.h>
#include <kernels/action.h>

namespace kbrl::schemas {

const CsvSchema& training_steps() {
  static const CsvSchema s{
      "training_steps",
      {"run", "step", "tasks", "rollouts", "compiled_rate", "correct_rate", "fast_1", "sig_fast_1",
       "mean_speedup_correct", "mean_reward", "kl_to_start", "entropy", "loss", "grad_norm",
       "clip_fraction", "tokens", "teacher_tokens", "compile_seconds", "evaluator_seconds",
       "wall_seconds", "format_rate"}};
  return s;
}

const CsvSchema& ttt_task_steps() {
  static const CsvSchema s{"ttt_task_steps",
                           {"run", "step", "task_id", "rollouts", "correct_rate", "fast_1", "sig_fast_1",
                            "best_speedup", "mean_speedup_correct"}};
  return s;
}

const CsvSchema& samples() {
  static const CsvSchema s{"samples",
                           {"run", "policy", "task_id", "sample", "config", "tokens", "logprob",
                            "surprisal", "token_count", "outcome", "compiled", "correct", "speedup",
                            "speedup_low", "speedup_high", "reward", "action", "mean_logprob", "prompt_version",
                            "finish_reason", "outcome_detail", "text", "code"}};
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
          std::string(to_string(r.outcome())),
          cell(r.compiled()),
          cell(r.correct()),
          cell(r.speedup()),
          r.speedup_ci() ? cell(r.speedup_ci()->low) : std::string(),
          r.speedup_ci() ? cell(r.speedup_ci()->high) : std::string(),
          cell(r.reward),
          std::string(to_string(s.kind)),
          cell(s.mean_logprob()),
          s.prompt_version,
          s.finish_reason,
          csv::escape_text(r.outcome_detail()),
          csv::escape_text(s.text),
          csv::escape_text(r.code)};
}

namespace {

/// The samples.csv header before the speedup interval: still read, its rows with no interval.
const CsvSchema& samples_without_interval() {
  static const CsvSchema s = [] {
    CsvSchema old = samples();
    std::erase_if(old.columns, [](const std::string& c) { return c == "speedup_low" || c == "speedup_high"; });
    return old;
  }();
  return s;
}

}  // namespace

std::vector<SampleRow> read_samples(const std::filesystem::path& file) {
  const CsvRows csv = read_csv(file);
  const bool with_interval = csv.columns == samples().columns;
  KBRL_CHECK_INPUT(with_interval || csv.columns == samples_without_interval().columns,
                   "{} is not a samples CSV of this kbrl: its header is\n  {}\nnot\n  {}\n(or the older one "
                   "without speedup_low,speedup_high)",
                   file.string(), fmt::join(csv.columns, ","), samples().header());
  std::vector<SampleRow> rows;
  for (size_t row = 0; row < csv.rows.size(); ++row) {
    const auto at = [&](const char* column) -> const std::string& { return csv.at(row, column); };
    SampleRow r;
    try {
      r.run = at("run");
      r.policy = at("policy");
      r.task_id = std::stoi(at("task_id"));
      r.sample = std::stoi(at("sample"));
      r.config = at("config");
      std::istringstream toks(at("tokens"));
      for (int t; toks >> t;) r.tokens.push_back(t);
      r.logprob = std::stod(at("logprob"));
      r.token_count = std::stoi(at("token_count"));
      r.outcome = parse_outcome(at("outcome"));
      r.compiled = at("compiled") == "1";
      r.correct = at("correct") == "1";
      r.speedup = std::stod(at("speedup"));
      if (with_interval) {
        const std::string& low = at("speedup_low");
        const std::string& high = at("speedup_high");
        KBRL_CHECK_INPUT(low.empty() == high.empty(),
                         "{}: speedup_low '{}' and speedup_high '{}' must both be set or both be empty",
                         csv.where(row), low, high);
        if (!low.empty()) r.speedup_ci = SpeedupInterval{std::stod(low), std::stod(high)};
      }
      r.kind = parse_action_kind(at("action"));
      r.text = csv::unescape_text(at("text"));
    } catch (const std::logic_error& e) {
      throw InputError(fmt::format("{}: malformed row ({})", csv.where(row), e.what()));
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

const CsvSchema& sample_summary() {
  static const CsvSchema s{"sample_summary",
                           {"level", "key", "tasks", "samples", "format_error", "compiled", "correct", "fast_1",
                            "sig_fast_1", "tasks_correct", "best_speedup"}};
  return s;
}

const CsvSchema& sft_steps() {
  static const CsvSchema s{"sft_steps", {"step", "epoch", "train_loss", "eval_nll_per_token"}};
  return s;
}

const CsvSchema& sft_epochs() {
  static const CsvSchema s{"sft_epochs", {"epoch", "items", "mean_loss", "nll_per_token", "wall_seconds"}};
  return s;
}

const CsvSchema& sweep_configs() {
  static const CsvSchema s{"sweep_configs",
                           {"task_id", "config", "is_expert", "outcome", "compiled", "correct", "speedup",
                            "speedup_low", "speedup_high", "candidate_ms", "reference_ms", "sol_fraction",
                            "precision", "flags"}};
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
