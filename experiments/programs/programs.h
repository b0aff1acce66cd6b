#pragma once
// The experiment groups (one file each), collected by experiments() in experiment.cpp.
#include <vector>

#include "experiment.h"

namespace kbrl {

std::vector<Experiment> training_experiments();      // base_policy, policy_sweep
std::vector<Experiment> search_experiments();        // best_of_n, selection, length_control
std::vector<Experiment> adaptation_experiments();    // ttt, oversharpening, robustness, transfer, lr_sweep
std::vector<Experiment> distillation_experiments();  // sdpo, ablations

/// Per-task fractions and overall summaries shared by the groups.
double fast_fraction(const std::vector<Rollout>& rollouts);
/// The mean of per-task fast fractions of a trajectory step's rollouts for one task.
std::vector<Rollout> rollouts_of_task(const std::vector<Rollout>& rollouts, int task_id);

}  // namespace kbrl
