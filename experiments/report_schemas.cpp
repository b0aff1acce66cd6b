#include "report_schemas.h"

namespace kbrl::schemas {
#define KBRL_SCHEMA(fn, ...)                      \
  const CsvSchema& fn() {                         \
    static const CsvSchema s{#fn, {__VA_ARGS__}}; \
    return s;                                     \
  }

KBRL_SCHEMA(policy_sweep, "policy", "tasks", "samples", "compiled_rate", "correct_rate", "fast_1",
            "sig_fast_1", "mean_speedup_correct", "geomean_speedup_correct")
KBRL_SCHEMA(model_sweep, "model", "compiled", "correct", "tasks", "avg_runtime_ms", "correctness_pct",
            "checked", "samples_per_task", "format_error_rate", "compile_rate", "correct_rate", "mean_tokens",
            "temperature")
KBRL_SCHEMA(model_sweep_tasks, "model", "task_id", "task_name", "samples", "format_errors", "compiled",
            "correct", "mean_tokens", "first_outcome")
KBRL_SCHEMA(bon_scaling, "subset", "k", "task_success", "std", "ci_low", "ci_high", "sig_task_success",
            "sig_std", "sig_ci_low", "sig_ci_high", "expected_best_speedup", "seeds", "samples_per_task")
KBRL_SCHEMA(bon_selected, "subset", "seed", "task_id", "samples", "correct", "fast", "sig_fast",
            "selected_speedup")
KBRL_SCHEMA(selection, "subset", "strategy", "fast_1", "std", "sig_fast_1", "sig_std", "mean_speedup",
            "evaluations", "timed_evaluations")
KBRL_SCHEMA(selection_tests, "subset", "comparison", "p1", "p2", "cohens_h", "sig_p1", "sig_p2", "sig_cohens_h",
            "wilcoxon_w", "wilcoxon_p", "wilcoxon_method", "sign_positives", "sign_negatives", "sign_p", "pairs",
            "wilcoxon_w_plus", "sign_p_one_sided")
KBRL_SCHEMA(selection_topm, "subset", "m", "evaluations_per_task", "task_success", "sig_task_success",
            "mean_speedup")
KBRL_SCHEMA(length_control, "analysis", "rho", "p_value", "n")
KBRL_SCHEMA(surprisal_quartiles, "quartile", "samples", "fast_1", "sig_fast_1", "mean_speedup", "mean_tokens",
            "mean_surprisal")
KBRL_SCHEMA(equal_budget, "subset", "method", "rollouts", "fast_1", "sig_fast_1", "equivalent_k")
KBRL_SCHEMA(early_stopping, "run", "steps", "oracle_step", "oracle_fast_1", "p1_stop_step", "p1_step", "p1_fast_1",
            "p1_matches_oracle")
KBRL_SCHEMA(rho_trajectory, "step", "samples", "rho", "p_value", "tail_samples", "tail_rho",
            "tail_p_value", "mean_nll", "distinct_samples", "distinct_rho", "distinct_p_value")
KBRL_SCHEMA(robustness, "subset", "task_id", "base_fast_1", "base_sig_fast_1", "bon_fast_1", "bon_sig_fast_1",
            "boa_fast_1", "boa_sig_fast_1", "boa_minus_bon", "winner")
KBRL_SCHEMA(transfer, "adapted_on", "evaluated_on", "base_fast_1", "base_sig_fast_1", "adapted_fast_1",
            "adapted_sig_fast_1", "delta", "bon_fast_1", "bon_sig_fast_1")
KBRL_SCHEMA(adaptation_runs, "experiment", "method", "value", "seed", "tasks", "boa_step",
            "boa_fast_1", "boa_sig_fast_1", "step0_fast_1", "step0_sig_fast_1", "final_fast_1",
            "final_sig_fast_1", "final_correct_rate", "steps_run", "rollouts", "tokens", "teacher_tokens")
KBRL_SCHEMA(compute, "method", "seeds", "rollouts", "student_tokens", "teacher_tokens",
            "total_tokens", "compile_seconds", "evaluator_seconds")

#undef KBRL_SCHEMA

}  // namespace kbrl::schemas
