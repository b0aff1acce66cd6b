#pragma once
// Subcommands of the `kbrl` program. Each add_* registers its options and callback on the app.
#include <CLI/CLI.hpp>

namespace kbrl::cli {

void add_tasks_command(CLI::App& app);
void add_splits_command(CLI::App& app);
void add_time_reference_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_worker_command(CLI::App& app);
void add_space_command(CLI::App& app);
void add_gen_command(CLI::App& app);
void add_sample_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_ttt_command(CLI::App& app);
void add_sft_command(CLI::App& app);
void add_corpus_command(CLI::App& app);
void add_baseline_command(CLI::App& app);
void add_regress_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_prompt_command(CLI::App& app);
void add_model_command(CLI::App& app);
void add_serve_command(CLI::App& app);

/// The exit code a command's callback chose (kbrl/cli_main.h's ExitCode; 0 unless set): `kbrl eval`
/// sets kExitCandidateFailed when the candidate is not correct.
inline int& command_exit_code() {
  static int code = 0;
  return code;
}

}  // namespace kbrl::cli
