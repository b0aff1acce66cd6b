#pragma once
// The experiment groups (one file each), collected by experiments() in experiment.cpp.
#include <vector>

#include "experiment.h"

namespace kbrl {

std::vector<Experiment> training_experiments();      // base_policy, policy_sweep
std::vector<Experiment> search_experiments();        // best_of_n, selection, length_control
std::vector<Experiment> adaptation_experiments();    // ttt, oversharpening, robustness, transfer, lr_sweep
std::vector<Experiment> distillation_experiments();  // sdpo, ablations
std::vector<Experiment> self_improvement_experiments();  // per_task_ttt
std::vector<Experiment> open_question_experiments();     // entropy_ttt, sparsification

/// The rollouts of one task among a step's rollouts (all tasks), in order.
std::vector<Rollout> rollouts_of_task(const std::vector<Rollout>& rollouts, int task_id);

}  // namespace kbrl
