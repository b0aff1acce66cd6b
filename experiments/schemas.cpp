#include "schemas.h"

#include <kbrl/error.h>

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
                            "reward"}};
  return s;
}

std::vector<std::string> samples_row(const std::string& run, const std::string& policy, int index,
                                     const Rollout& r) {
  const double lp = r.sample.logprob();
  return {run,
          policy,
          cell(r.sample.task_id),
          cell(index),
          r.sample.config.str(),
          fmt::format("{}", fmt::join(r.sample.tokens, " ")),
          cell(lp),
          cell(-lp),
          cell(static_cast<int64_t>(r.sample.tokens.size())),
          std::string(to_string(r.outcome)),
          cell(r.compiled),
          cell(r.correct),
          cell(r.speedup),
          cell(r.reward)};
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
