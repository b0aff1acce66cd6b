#pragma once
// What the adaptation experiments share: the summary row of one TTT or SDPO run
// (schemas::adaptation_runs()) and the over-sharpening probe (surprisal report 5.3b).
#include <filesystem>
#include <string>
#include <vector>

#include <experiments/schemas.h>
#include <experiments/statistics.h>
#include <experiments/training_loops.h>

#include "experiment.h"

namespace kbrl {

std::vector<std::string> adaptation_row(const std::string& experiment, const std::string& method,
                                        const std::string& value, const TttConfig& config,
                                        const TttResult& result);

/// Each task's fast share of a step's rollouts, in `tasks`' order.
std::vector<double> per_task_fast_1(const std::vector<Rollout>& rollouts, const std::vector<int>& tasks);
/// A TTT step's fast_1 with its 95% bootstrap interval over tasks (per_task_fast_1; the same seed
/// everywhere).
stats::BootstrapInterval step_interval(const std::vector<Rollout>& rollouts, const std::vector<int>& tasks);

/// The probe's fixed sample set: best_of_n's first-seed samples on subset 1 (InputError when it has
/// fewer than 8).
std::vector<schemas::SampleRow> probe_samples(const ExperimentContext& ctx);

/// Rows of schemas::rho_trajectory() for steps 0..steps: rho(NLL, speedup) over `fixed` under the
/// base checkpoint with the adapter of each step (adapters/adapter_step_N.pt, as run_ttt keeps them),
/// in the highest-NLL quartile, and over the distinct samples.
std::vector<std::vector<std::string>> rho_rows(const ExperimentContext& ctx,
                                               const std::vector<schemas::SampleRow>& fixed,
                                               const std::filesystem::path& adapters, int steps);

}  // namespace kbrl
