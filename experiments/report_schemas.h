#pragma once
// The schemas of the report tables the experiment programs write (experiments/programs/), one
// function per CSV (golden-tested in ctest/experiments/test_schemas.cpp). The per-sample, per-step
// and sweep CSVs are in schemas.h, with the naming of the significant twins (sig_fast_1, ...). A twin
// follows its column, or its column's group when spread columns go with it (fast_1,std,sig_fast_1,
// sig_std). Best-of-N picks by speedup; its sig_ columns ask whether that pick is significantly fast.
#include "csv_table.h"

namespace kbrl::schemas {

const CsvSchema& policy_sweep();       // GRPO report Table 3
/// GRPO report Table 3 for a language model: the first sample of each task (the table's one try per
/// problem) as compiled / correct counts, average runtime of the correct ones and correctness %
/// (correct / tasks); `checked` 0 when there was no GPU (correct, runtime and % are then empty);
/// then our columns over every sample.
const CsvSchema& model_sweep();
const CsvSchema& model_sweep_tasks();  // per task: format errors, compiled, correct over its samples
const CsvSchema& bon_scaling();        // surprisal report Table 5.1
const CsvSchema& bon_selected();       // Table D.2
const CsvSchema& selection();          // Table 5.3
const CsvSchema& selection_tests();    // 5.2's effect sizes and tests
const CsvSchema& selection_topm();     // the deployable surprisal top-m curve
const CsvSchema& length_control();     // 5.2's Spearman table
const CsvSchema& surprisal_quartiles();  // 5.2's quartile table
const CsvSchema& equal_budget();       // Table 5.2 and self-improvement 6.2
const CsvSchema& early_stopping();     // 4.x: does early stopping at P = 1 pick the oracle's step?
const CsvSchema& rho_trajectory();     // 5.3b's over-sharpening probe
const CsvSchema& robustness();         // 5.4 (per task; the regime plot)
const CsvSchema& transfer();           // 5.5 cross-subset transfer
const CsvSchema& adaptation_runs();    // one row per TTT/SDPO run: lr sweep, SDPO, ablations
const CsvSchema& compute();            // Appendix C
const CsvSchema& ablations_per_task(); // A1-A4 per task: task_id, then adaptation_runs' columns
const CsvSchema& speedup_by_seed();    // Table D.1: mean speedup over correct samples per seed
const CsvSchema& per_task_ttt();       // self-improvement E1, E3-E5: per (seed, task)
const CsvSchema& per_task_ttt_summary();  // its summary with bootstrap intervals (Figure F3)
const CsvSchema& entropy_rho();        // 6.7: rho_trajectory per entropy coefficient
const CsvSchema& sparsification();     // 6.7: the BoA step per reward (dense vs thresholded)
const CsvSchema& judge_scores();       // GRPO report 3.5: the judge's scores of each rollout

}  // namespace kbrl::schemas
