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
            "evaluations", "timed_evaluations", "fast_1_low", "fast_1_high")
KBRL_SCHEMA(selection_tests, "subset", "comparison", "p1", "p2", "cohens_h", "sig_p1", "sig_p2", "sig_cohens_h",
            "wilcoxon_w", "wilcoxon_p", "wilcoxon_method", "sign_positives", "sign_negatives", "sign_p", "pairs",
            "wilcoxon_w_plus", "sign_p_one_sided")
KBRL_SCHEMA(selection_topm, "subset", "m", "evaluations_per_task", "task_success", "sig_task_success",
            "mean_speedup")
KBRL_SCHEMA(length_control, "analysis", "rho", "p_value", "n")
KBRL_SCHEMA(surprisal_quartiles, "quartile", "samples", "fast_1", "sig_fast_1", "mean_speedup", "mean_tokens",
            "mean_surprisal")
KBRL_SCHEMA(equal_budget, "subset", "method", "rollouts", "fast_1", "sig_fast_1", "equivalent_k", "fast_1_low",
            "fast_1_high", "seed", "std_over_seeds")
KBRL_SCHEMA(early_stopping, "run", "steps", "oracle_step", "oracle_fast_1", "p1_stop_step", "p1_step", "p1_fast_1",
            "p1_matches_oracle")
KBRL_SCHEMA(rho_trajectory, "step", "samples", "rho", "p_value", "tail_samples", "tail_rho",
            "tail_p_value", "mean_nll", "distinct_samples", "distinct_rho", "distinct_p_value")
KBRL_SCHEMA(robustness, "subset", "task_id", "base_fast_1", "base_sig_fast_1", "bon_fast_1", "bon_sig_fast_1",
            "boa_fast_1", "boa_sig_fast_1", "boa_minus_bon", "winner", "boa_minus_bon_low", "boa_minus_bon_high")
KBRL_SCHEMA(transfer, "adapted_on", "evaluated_on", "base_fast_1", "base_sig_fast_1", "adapted_fast_1",
            "adapted_sig_fast_1", "delta", "bon_fast_1", "bon_sig_fast_1", "delta_low", "delta_high")
KBRL_SCHEMA(adaptation_runs, "experiment", "method", "value", "seed", "tasks", "boa_step",
            "boa_fast_1", "boa_sig_fast_1", "step0_fast_1", "step0_sig_fast_1", "final_fast_1",
            "final_sig_fast_1", "final_correct_rate", "steps_run", "rollouts", "tokens", "teacher_tokens",
            "boa_fast_1_low", "boa_fast_1_high")
KBRL_SCHEMA(per_task_ttt, "seed", "task_id", "greedy_fast", "greedy_sig_fast", "bon_k", "bon_correct_rate",
            "bon_fast_1", "bon_sig_fast_1", "bon_task_success", "bon_sig_task_success", "bon_best_speedup", "ttt_k",
            "ttt_steps", "ttt_boa_step", "ttt_correct_rate", "ttt_fast_1", "ttt_sig_fast_1", "ttt_task_success",
            "ttt_sig_task_success", "ttt_best_speedup", "ttt_rollouts", "ttt_minus_bon_fast_1")
KBRL_SCHEMA(per_task_ttt_summary, "method", "rollouts_per_task", "tasks", "correct_rate", "fast_1", "fast_1_low",
            "fast_1_high", "sig_fast_1", "task_success", "task_success_low", "task_success_high", "sig_task_success",
            "mean_best_speedup")
KBRL_SCHEMA(speedup_by_seed, "method", "seed", "boa_step", "fast_1", "mean_speedup_correct", "std_over_seeds")
KBRL_SCHEMA(judge_scores, "policy", "task_id", "sample", "outcome", "correctness", "compilability", "speed",
            "judge_mean", "kernel_reward", "reward", "judge_error")
KBRL_SCHEMA(entropy_rho, "entropy_coef", "step", "samples", "rho", "p_value", "tail_samples", "tail_rho",
            "tail_p_value", "mean_nll", "distinct_samples", "distinct_rho", "distinct_p_value")
KBRL_SCHEMA(sparsification, "reward", "seed", "steps", "boa_step", "boa_fast_1", "boa_sig_fast_1", "step0_fast_1",
            "step0_sig_fast_1", "final_fast_1", "final_sig_fast_1", "step0_reward_density", "step0_mean_reward")
KBRL_SCHEMA(ablations_per_task, "task_id", "experiment", "method", "value", "seed", "tasks", "boa_step",
            "boa_fast_1", "boa_sig_fast_1", "step0_fast_1", "step0_sig_fast_1", "final_fast_1",
            "final_sig_fast_1", "final_correct_rate", "steps_run", "rollouts", "tokens", "teacher_tokens",
            "boa_fast_1_low", "boa_fast_1_high")
KBRL_SCHEMA(compute, "method", "seeds", "rollouts", "student_tokens", "teacher_tokens",
            "total_tokens", "compile_seconds", "evaluator_seconds")

#undef KBRL_SCHEMA

}  // namespace kbrl::schemas
