#pragma once
// A record as KernelBench's evaluator reports one (its KernelExecResult): for tools that read
// KernelBench's results (`kbrl eval --kernelbench-json`).
#include <nlohmann/json.hpp>

#include "eval_record.h"

namespace kbrl {

/// {"compiled", "correctness", "runtime", "runtime_stats", "ref_runtime", "ref_runtime_stats",
///  "metadata"}: runtimes in milliseconds (the mean, as KernelBench reports; -1.0 when not timed),
/// stats {"mean", "std", "min", "max", "num_trials", "median"}, metadata kbrl's outcome, its detail,
/// the speedup and its interval, the device and the record's key.
nlohmann::json kernelbench_result(const EvalRecord& record);

}  // namespace kbrl
