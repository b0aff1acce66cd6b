#pragma once
// EvalRecord: everything one evaluation produced; one line of the rollout log (rollout_log.h).
//
// Its JSON form is the log's schema. The field names live in `record_field` below and nowhere
// else; ctest/harness/test_eval_record.cpp pins the whole document with a golden text.
//   {"schema_version": 1, "key": "<64 hex>", "task_id": 19, "task_name": "19_ReLU",
//    "scale": "small", "policy": "heuristic" | null, "raw_action": "...",
//    "action": {"kind": "knobs" | "text", "code", "token_count", "prompt_version"},
//    "candidate": {... the JSON form of kernels/candidate.h ...},
//    "compile": {"ok", "log", "seconds", "cache_hit", "precision_findings": [...]},
//    "trials": [{"trial", "seed_id", "passed", "max_abs_error", "max_rel_error", "failure",
//                "f64_error"?, "f64_reference_error"?}],
//    "runtime": RuntimeStats | null, "reference": RuntimeStats | null,
//    "speedup", "speedup_ci": {"low", "high"} | null, "reward", "outcome": "<Outcome>",
//    "outcome_detail", "flags": [...], "inputs": "robust" | "kernelbench",
//    "device", "kbrl_version", "timestamp", "gpu_stage_ms"?: {"accuracy", "load", "check", "time", "check.inputs", ...}}
// (a field marked ? is written only when measured).
// where RuntimeStats is {"n", "median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "q1_ms",
// "q3_ms", "iqr_ms"}. A non-finite number (a NaN error, say) is written as the string "nan",
// "inf" or "-inf" and read back as that value. A string that is not UTF-8 (a candidate's bytes, a
// compile log quoting them) is written with U+FFFD and its exact bytes beside it, as
// "<field>_base64" (json_text.h), and read back as those bytes.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <harness/stage_values.h>  // TrialCheck (its JSON: stage_values_json.h)
#include <harness/stats.h>
#include <kbrl/outcome.h>
#include <kernels/action.h>
#include <kernels/candidate.h>
#include <reference/task.h>

namespace kbrl {

/// The version of the record schema this kbrl writes; it reads this and older ones. Version 2 added
/// "action" (a version-1 record reads as a knob action with no code and no tokens); version 3 added
/// "speedup_ci" and "inputs" (an older record reads with no interval and "kernelbench" inputs: it was
/// checked on KernelBench's input distribution only and timed against a once-per-run reference).
inline constexpr int kEvalRecordSchemaVersion = 3;

/// The JSON field names of EvalRecord and its parts: the schema, in one place.
namespace record_field {
inline constexpr const char* schema_version = "schema_version";
inline constexpr const char* key = "key";
inline constexpr const char* task_id = "task_id";
inline constexpr const char* task_name = "task_name";
inline constexpr const char* scale = "scale";
inline constexpr const char* policy = "policy";
inline constexpr const char* raw_action = "raw_action";
inline constexpr const char* action = "action";
inline constexpr const char* candidate = "candidate";
inline constexpr const char* compile = "compile";
inline constexpr const char* trials = "trials";
inline constexpr const char* runtime = "runtime";
inline constexpr const char* reference = "reference";
inline constexpr const char* speedup = "speedup";
inline constexpr const char* speedup_ci = "speedup_ci";
inline constexpr const char* inputs = "inputs";
inline constexpr const char* low = "low";
inline constexpr const char* high = "high";
inline constexpr const char* reward = "reward";
inline constexpr const char* outcome = "outcome";
inline constexpr const char* outcome_detail = "outcome_detail";
inline constexpr const char* flags = "flags";
inline constexpr const char* device = "device";
inline constexpr const char* kbrl_version = "kbrl_version";
inline constexpr const char* timestamp = "timestamp";
inline constexpr const char* gpu_stage_ms = "gpu_stage_ms";
// action
inline constexpr const char* kind = "kind";
inline constexpr const char* code = "code";
inline constexpr const char* token_count = "token_count";
inline constexpr const char* prompt_version = "prompt_version";
// compile
inline constexpr const char* ok = "ok";
inline constexpr const char* log = "log";
inline constexpr const char* seconds = "seconds";
inline constexpr const char* cache_hit = "cache_hit";
inline constexpr const char* precision_findings = "precision_findings";
// trials: trial_field (stage_values_json.h)
// RuntimeStats
inline constexpr const char* n = "n";
inline constexpr const char* median_ms = "median_ms";
inline constexpr const char* mean_ms = "mean_ms";
inline constexpr const char* std_ms = "std_ms";
inline constexpr const char* min_ms = "min_ms";
inline constexpr const char* max_ms = "max_ms";
inline constexpr const char* q1_ms = "q1_ms";
inline constexpr const char* q3_ms = "q3_ms";
inline constexpr const char* iqr_ms = "iqr_ms";
}  // namespace record_field

/// What the record keeps of the action besides its raw text (EvalRecord::raw_action).
struct ActionInfo {
  ActionKind kind = ActionKind::knobs;
  std::string code;         // text: the code extracted from the text (kernels/action.h)
  int64_t token_count = 0;  // text: the model's tokens; knobs: one per knob
  std::string prompt_version;  // text: the prompt it answered (kernels/prompt.h)
  bool operator==(const ActionInfo&) const = default;
};

/// The compile stage's result as the record keeps it.
struct CompileInfo {
  bool ok = false;
  std::string log;  // NVRTC's log, kept for failures and warnings alike
  double seconds = 0.0;
  bool cache_hit = false;
  std::vector<std::string> precision_findings;  // the precision audit's findings, as text
  bool operator==(const CompileInfo&) const = default;
};

struct EvalRecord {
  std::string key;  // rollout_log.h's record_key(): what resume looks up
  int task_id = 0;
  std::string task_name;
  Scale scale = Scale::kernelbench;
  std::optional<std::string> policy;
  std::string raw_action;  // the action as the policy produced it (model text, knob values)
  ActionInfo action;
  Candidate candidate;     // the assembled candidate (only task_id set after a format_error)
  CompileInfo compile;
  std::vector<TrialCheck> trials;
  std::optional<RuntimeStats> runtime;    // the candidate's timing; absent when not timed
  std::optional<RuntimeStats> reference;  // the reference's timing, interleaved with it
  double speedup = 0.0;                   // correctness-gated (reward.h)
  /// The speedup's 95% interval from the paired samples (stats.h); set only when the candidate is
  /// correct and was timed with its reference. is_significantly_fast() reads it.
  std::optional<SpeedupInterval> speedup_ci;
  double reward = 0.0;
  Outcome outcome = Outcome::ok;
  std::string outcome_detail;
  std::vector<std::string> flags;  // "reduced_precision", "impossible", "excessive_speedup", ...
  std::string inputs = "kernelbench";  // the input checks it passed through: "robust" or "kernelbench"
  std::string device;
  std::string kbrl_version;
  std::string timestamp;  // UTC, ISO 8601 (utc_timestamp())
  /// Where the GPU job's wall time went, step by step (GpuJobResult::stage_ms); empty when no GPU ran.
  std::map<std::string, double> gpu_stage_ms;
  bool operator==(const EvalRecord&) const = default;
};

/// About the bytes the record takes in memory (its strings and a fixed part): what a server's
/// caches of records count against their budgets.
size_t approximate_bytes(const EvalRecord& record);

/// KernelBench's fast_p event for one record: correct (accepted) with speedup > p.
bool is_fast(const EvalRecord& record, double p = 1.0);
/// The significant fast_p event: correct, and the lower end of the speedup's interval above p.
bool is_significantly_fast(const EvalRecord& record, double p = 1.0);

void to_json(nlohmann::json& j, const SpeedupInterval& ci);
void from_json(const nlohmann::json& j, SpeedupInterval& ci);
void to_json(nlohmann::json& j, const ActionInfo& action);
void from_json(const nlohmann::json& j, ActionInfo& action);
void to_json(nlohmann::json& j, const RuntimeStats& stats);
void from_json(const nlohmann::json& j, RuntimeStats& stats);
void to_json(nlohmann::json& j, const CompileInfo& compile);
void from_json(const nlohmann::json& j, CompileInfo& compile);
void to_json(nlohmann::json& j, const EvalRecord& record);
void from_json(const nlohmann::json& j, EvalRecord& record);

/// from_json with every malformed document (missing field, wrong type, unknown outcome or scale,
/// a newer schema version) reported as InputError.
EvalRecord record_from_json(const nlohmann::json& j);

/// "2026-03-05T12:34:56.789Z".
std::string utc_timestamp(std::chrono::system_clock::time_point when = std::chrono::system_clock::now());

/// This kbrl's version (the CMake project version).
std::string_view kbrl_version();


}  // namespace kbrl
