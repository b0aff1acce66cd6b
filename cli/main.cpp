// kbrl: the command-line front of the evaluator, the task suite and the experiments.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <kbrl/cli_main.h>
#include <kbrl/error.h>

#include <harness/evaluator.h>  // harness_errors_recorded
#include <harness/record/eval_record.h>  // kbrl_version

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kbrl: an execution-grounded environment for GPU kernel optimization"};
  app.require_subcommand(1);
  kbrl::cli::add_tasks_command(app);
  kbrl::cli::add_splits_command(app);
  kbrl::cli::add_time_reference_command(app);
  kbrl::cli::add_eval_command(app);
  kbrl::cli::add_replay_command(app);
  kbrl::cli::add_worker_command(app);
  kbrl::cli::add_space_command(app);
  kbrl::cli::add_gen_command(app);
  kbrl::cli::add_sample_command(app);
  kbrl::cli::add_train_command(app);
  kbrl::cli::add_ttt_command(app);
  kbrl::cli::add_sft_command(app);
  kbrl::cli::add_corpus_command(app);
  kbrl::cli::add_baseline_command(app);
  kbrl::cli::add_regress_command(app);
  kbrl::cli::add_sweep_command(app);
  kbrl::cli::add_prompt_command(app);
  kbrl::cli::add_model_command(app);
  kbrl::cli::add_serve_command(app);
  app.set_version_flag("--version", "kbrl " + std::string(kbrl::kbrl_version()));
  return kbrl::cli::run_program("kbrl", app, argc, argv, [&app] {
    // A server answers harness faults to its clients and goes on; a command that ran a batch fails.
    if (!app.got_subcommand("serve")) kbrl::cli::fail_on_harness_errors(kbrl::harness_errors_recorded());
    return kbrl::cli::command_exit_code();
  });
}
