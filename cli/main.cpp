// kbrl: the command-line front of the evaluator, the task suite and the experiments.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>
#include <kbrl/error.h>

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
  kbrl::cli::add_sweep_command(app);
  kbrl::cli::add_prompt_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const kbrl::InputError& e) {
    std::fprintf(stderr, "kbrl: error: %s\n", e.what());
    return 2;
  } catch (const kbrl::Error& e) {
    std::fprintf(stderr, "kbrl: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbrl: internal error: %s\n", e.what());
    return 3;
  }
  return 0;
}
