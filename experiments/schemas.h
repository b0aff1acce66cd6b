#pragma once
// The schemas of the CSVs the loops and experiments write: one place for each (golden-tested in
// ctest/experiments/test_schemas.cpp).
#include <string>
#include <vector>

#include "csv_table.h"
#include "environment.h"

namespace kbrl::schemas {

/// One row per training or adaptation step (RLVR, TTT, SDPO): what the step's rollouts scored
/// (before its update) and what the update measured.
const CsvSchema& training_steps();
/// One row per (step, task) of a TTT run.
const CsvSchema& ttt_task_steps();
/// One row per evaluated sample (best-of-N and the base-policy sweep).
const CsvSchema& samples();
/// The row of samples() for rollout `index` of a task.
std::vector<std::string> samples_row(const std::string& run, const std::string& policy, int index,
                                     const Rollout& rollout);
/// One row per SFT epoch.
const CsvSchema& sft_epochs();
/// One row per configuration a knob-space sweep evaluated (`kbrl sweep`).
const CsvSchema& sweep_configs();
/// One row per task of a knob-space sweep: what its best configurations reached.
const CsvSchema& sweep_tasks();

}  // namespace kbrl::schemas
