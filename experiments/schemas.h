#pragma once
// The schemas of the CSVs the loops and experiments write: one place for each (golden-tested in
// ctest/experiments/test_schemas.cpp).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "csv_table.h"
#include "environment.h"

namespace kbrl::schemas {

// Every fast_1 column (KernelBench's fast_p event at p = 1: correct with speedup > 1) has its
// significant twin after it, named with `sig_` before the fast part (sig_fast_1, boa_sig_fast_1,
// sig_task_success, ...): correct, and the lower end of the speedup's 95% interval above 1 too
// (harness/record/eval_record.h, is_significantly_fast), so that parity within timing noise does not count.

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
/// `speedup_low`, `speedup_high`: the speedup's 95% interval, empty when the sample has none (not
/// correct, or not timed).
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
  std::optional<SpeedupInterval> speedup_ci;  // absent in a samples.csv from before the interval
  ActionKind kind = ActionKind::knobs;
  std::string text;  // unescaped
  /// As Rollout's fast and significantly_fast (harness/stats.h's events).
  bool fast(double p = 1.0) const { return fast_event(correct, speedup, p); }
  bool significantly_fast(double p = 1.0) const { return significantly_fast_event(correct, speedup, speedup_ci, p); }
};
/// Every row of a samples.csv, of this kbrl's header or the older one without speedup_low and
/// speedup_high (its rows read with no interval). InputError for another header (naming both), a
/// row of the wrong width or a malformed field (naming the line).
std::vector<SampleRow> read_samples(const std::filesystem::path& file);
/// `kbrl sample`'s summary: one row per task, per family and for all tasks (level task, family,
/// all): format errors, compiled, correct, fast_1 and significantly fast_1 as shares of the
/// samples, tasks with a correct sample, the best correct speedup.
const CsvSchema& sample_summary();
/// One row per SFT epoch.
const CsvSchema& sft_epochs();
/// Per SFT optimizer step: the batch's loss, the held-out NLL per token where measured (nan
/// elsewhere); step 0 is before training (the GRPO report's Figure 2).
const CsvSchema& sft_steps();
/// One row per configuration a knob-space sweep evaluated (`kbrl sweep`); `speedup_low`,
/// `speedup_high` as in samples().
const CsvSchema& sweep_configs();
/// One row per task of a knob-space sweep: what its best configurations reached.
const CsvSchema& sweep_tasks();

}  // namespace kbrl::schemas
