#pragma once
// The schemas of the CSVs the loops and experiments write: one place for each (golden-tested in
// ctest/experiments/test_schemas.cpp).
#include <filesystem>
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
/// One row per evaluated sample (best-of-N and the base-policy sweep). Knob actions fill `config`
/// and `tokens` (knob value indices); text actions fill `tokens` (the model's token ids), `text`
/// (the raw answer), `code` (what kernels/action.h extracted), `prompt_version` and
/// `finish_reason`. `text`, `code` and `outcome_detail` are escaped onto one line
/// (csv::escape_text: \n, \t, \r, \\). `mean_logprob` = logprob / token_count.
const CsvSchema& samples();
/// The row of samples() for rollout `index` of a task.
std::vector<std::string> samples_row(const std::string& run, const std::string& policy, int index,
                                     const Rollout& rollout);

/// A row of a samples.csv, parsed: what selection, the probes and SFT read.
struct SampleRow {
  std::string run, policy;
  int task_id = 0;
  int sample = 0;
  std::string config;
  std::vector<int> tokens;
  double logprob = 0;
  int token_count = 0;
  Outcome outcome = Outcome::ok;
  bool compiled = false;
  bool correct = false;
  double speedup = 0;
  ActionKind kind = ActionKind::knobs;
  std::string text;  // unescaped
};
/// Every row of a samples.csv. InputError for another header (naming both), a row of the wrong
/// width or a malformed field (naming the line).
std::vector<SampleRow> read_samples(const std::filesystem::path& file);
/// One row per SFT epoch.
const CsvSchema& sft_epochs();
/// One row per configuration a knob-space sweep evaluated (`kbrl sweep`).
const CsvSchema& sweep_configs();
/// One row per task of a knob-space sweep: what its best configurations reached.
const CsvSchema& sweep_tasks();

}  // namespace kbrl::schemas
