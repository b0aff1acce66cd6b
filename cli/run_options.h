#pragma once
// Command-line options shared by the commands that evaluate (eval, replay, sample, train, ttt, sft,
// sweep): the evaluator's flags (experiments/run_setup.h's EvalFlags) and task selection.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <experiments/run_setup.h>

namespace kbrl::cli {

/// --mode, --tolerance, --inputs, --reward, --precision, --trials, --timeout, --arch, --device (the scale is
/// added by each command: it means different things to them).
inline void add_eval_flags(CLI::App* cmd, EvalFlags& f) {
  cmd->add_option("--mode", f.mode, "timing: fast (5 samples), full (50) or adaptive")->capture_default_str();
  cmd->add_option("--tolerance", f.tolerance, "strict (atol=rtol=1e-4) or legacy (1e-2)")->capture_default_str();
  cmd->add_option("--inputs", f.inputs,
                  "robust (KernelBench's inputs, a stress trial and mixes of the two) or kernelbench (KernelBench's only)")
      ->capture_default_str();
  cmd->add_option("--reward", f.reward, "speedup, composite[:alpha,beta,gamma,r_max], normalized or threshold:T")->capture_default_str();
  cmd->add_option("--precision", f.precision, "reduced precision: allow, flag or reject")->capture_default_str();
  cmd->add_option("--trials", f.trials, "correctness trials on fresh inputs")->capture_default_str();
  cmd->add_option("--timeout", f.timeout, "seconds one GPU job may take before it is killed")->capture_default_str();
  cmd->add_option("--arch", f.arch, "NVRTC target (default: the device's)");
  cmd->add_option("--device", f.device, "CUDA device index")->capture_default_str();
}

/// Task selection: --task (repeatable, or comma-separated) and --split.
struct TaskFlags {
  std::vector<int> ids;
  std::string split;
};

inline void add_task_flags(CLI::App* cmd, TaskFlags& t) {
  cmd->add_option("--task", t.ids, "task id (repeat or comma-separate for several)")->delimiter(',');
  cmd->add_option("--split", t.split, "a split's name (kbrl splits): train, eval, subset1, subset2, all");
}

}  // namespace kbrl::cli
