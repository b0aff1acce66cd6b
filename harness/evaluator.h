#pragma once
// The evaluator, parent side: compile (NVRTC, cached, in the parent) -> check and time (in a worker
// process on the GPU, watched by a watchdog) -> reward -> EvalRecord (-> rollout log). One
// Evaluator per GPU. Candidate faults become the record's outcome; harness faults throw.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kbrl/enum_names.h>

#include <harness/compile/compile.h>
#include <harness/gpu/gpu_session.h>
#include <harness/record/eval_record.h>

#include "reward.h"
#include "stats.h"

namespace kbrl {

class RolloutLog;
class CompileCache;

/// Which inputs the correctness checks draw. robust: one trial on the task's stress inputs
/// (reference/reference_model.h, InputSet::stress: signs and magnitudes beyond [0,1)) and the trials
/// on KernelBench's draw and its mixes with the stress set, kinds and order from the secret
/// (trial_plan); kernelbench: KernelBench's distribution only, for comparability.
enum class InputChecks { robust, kernelbench };
template <>
struct EnumNames<InputChecks> {
  static constexpr std::string_view what = "input checks";
  static constexpr EnumEntry<InputChecks> entries[] = {{InputChecks::robust, "robust"},
                                                       {InputChecks::kernelbench, "kernelbench"}};
  static constexpr std::string_view note =
      "robust checks KernelBench's inputs, stress inputs and mixes of the two, kernelbench KernelBench's inputs only";
};
std::string_view to_string(InputChecks);
InputChecks parse_input_checks(std::string_view);  // InputError naming the legal values

struct EvalSettings {
  Scale scale = Scale::kernelbench;
  InputChecks inputs = InputChecks::robust;
  TimingMode mode = TimingMode::fast;
  int trials = 5;
  double atol = 1e-4;  // today's KernelBench fp32 tolerance; 1e-2 is the reports' legacy setting
  double rtol = 1e-4;
  RewardConfig reward;
  double job_timeout_seconds = 120;  // the watchdog of one GPU job (load, check, time)
  std::string arch;                  // "" = the device's (arch_for its compute capability)
  std::filesystem::path cache_dir;   // on-disk compile cache; "" = none
  std::optional<uint64_t> secret;    // trial seeds derive from it; default: random per Evaluator
  int device = 0;
  std::string worker_program;        // the kbrl executable; default: $KBRL_WORKER, else `kbrl`
                                     // beside this executable, else `kbrl` on PATH
  size_t compile_threads = 0;        // 0: hardware concurrency
  std::optional<DevicePeaks> peaks;  // default: measured once by the worker
  /// Compile only, for machines without a GPU: a candidate that compiles gets Outcome::not_run
  /// ("compiled; no GPU to run it") and the reward of a compiled, unchecked candidate. Needs
  /// `arch`. No worker is started.
  bool compile_only = false;
  /// Whether compiles must run confined (compile.h): kbrl serve requires it for untrusted sources.
  CompileSandbox compile_sandbox = CompileSandbox::best_effort;

  /// What changes a result (the record key's settings): never the secret.
  nlohmann::json key_json() const;
};

/// "strict" -> 1e-4, "legacy" -> 1e-2 (KernelBench v0/v0.1, the reports' era).
double parse_tolerance(std::string_view text);

/// A candidate with its record key (Evaluator::keyed): the one content hash the evaluator derives
/// from a candidate, computed once and carried along (memo, resume, the record).
struct KeyedCandidate {
  Candidate candidate;
  std::string key;
};

/// Records of this process that say `harness_error` (the GPU worker's handler failed on a candidate,
/// here or on a kbrl serve that answered): a batch goes on past them, and the program that ran it
/// exits 1 at its end (kbrl/cli_main.h). Counted by the Evaluator and by serve's Client.
int64_t harness_errors_recorded();
void count_harness_errors(int64_t n);

class Evaluator {
 public:
  explicit Evaluator(EvalSettings settings);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// Evaluates one candidate end to end and appends the record to the log when one is attached.
  EvalRecord evaluate(const Candidate& candidate, const std::string& raw_action = {},
                      const std::optional<std::string>& policy = std::nullopt, const ActionInfo& action = {});

  /// Evaluates many: compiles them all on the thread pool, then checks and times them one by one.
  /// Returns one record per candidate, in order: a candidate whose record is already in the
  /// attached log gets that record (resume: nothing is evaluated or logged again), and candidates
  /// with the same key are evaluated once. `actions`, when given, holds each candidate's raw action
  /// and action info for its record (same length). Each candidate is hashed once (its key) and each
  /// task's spec looked up once.
  std::vector<EvalRecord> evaluate_all(const std::vector<KeyedCandidate>& candidates,
                                       const std::optional<std::string>& policy = std::nullopt,
                                       const std::vector<std::pair<std::string, ActionInfo>>& actions = {});
  /// evaluate_all's one loop, for a caller that shares work with others (kbrl serve's dispatchers):
  /// each record goes to `on_record` (with its candidate's index) as soon as it is made, and before
  /// each candidate after the first that needs the GPU, `go_on` (when set) is asked whether to
  /// continue; when it says no, the rest are left unevaluated (their compiles finish into the cache)
  /// and their indices returned. A repeated key gets its first candidate's record, or is left with
  /// it. Throws on a harness fault like evaluate_all; records made before it were handed over (and
  /// logged).
  std::vector<size_t> evaluate_each(const std::vector<KeyedCandidate>& candidates,
                                    const std::function<void(size_t, const EvalRecord&)>& on_record,
                                    const std::function<bool()>& go_on,
                                    const std::vector<std::pair<std::string, ActionInfo>>& actions = {},
                                    const std::optional<std::string>& policy = std::nullopt);
  /// The same for candidates not keyed yet.
  std::vector<EvalRecord> evaluate_all(const std::vector<Candidate>& candidates,
                                       const std::optional<std::string>& policy = std::nullopt,
                                       const std::vector<std::pair<std::string, ActionInfo>>& actions = {});

  /// The record of a text action that yielded no candidate (kernels/action.h's realize):
  /// `outcome` (Realized::failure: format_error, or unsupported_format) with `detail`, the reward of
  /// an uncompiled candidate, keyed by the raw text; appended to the attached log like any other
  /// record (or taken from it when logged).
  EvalRecord format_error(int task_id, const std::string& raw_action, const ActionInfo& action,
                          const std::string& detail, const std::optional<std::string>& policy = std::nullopt,
                          Outcome outcome = Outcome::format_error);
  /// The key format_error() gives such a record.
  std::string format_error_key(int task_id, const std::string& raw_action);

  /// Appends every record to `log` from now on (nullptr to stop). The log must outlive the use.
  void attach_log(RolloutLog* log) { log_ = log; }

  /// The record key of a candidate under these settings (what resume looks up): the one content
  /// hash of a candidate. keyed() computes it once and keeps it with the candidate.
  /// A non-empty `observation` is part of the key: the same candidate under another observation is
  /// another record, evaluated and timed again (an experiment's seeds are separate observations, so
  /// no two seeds share a timing); "" keys it as before.
  std::string key(const Candidate& candidate, const std::string& observation = {});
  KeyedCandidate keyed(Candidate candidate, const std::string& observation = {});

  /// Starts the worker when needed and asks its device. Throws kbrl::Error without a GPU.
  const DeviceInfo& device();
  const DevicePeaks& peaks();
  const EvalSettings& settings() const { return settings_; }
  /// The reference timing of a task at this scale in this run's latest evaluation of it (each
  /// evaluation times the reference paired with its candidate).
  std::optional<RuntimeStats> reference_stats(int task_id) const;
  /// Worker processes started so far (restarts after crashes and timeouts included).
  int64_t worker_starts() const;

 private:
  struct Impl;
  /// A record with the fields every record has (task, key, action, policy, version, timestamp).
  EvalRecord new_record(const TaskSpec& spec, std::string key, const std::string& raw_action,
                        const ActionInfo& action, const std::optional<std::string>& policy) const;
  EvalRecord finish(const TaskSpec& spec, const KeyedCandidate& candidate, const CompileResult& compiled,
                    const std::string& raw_action, const std::optional<std::string>& policy,
                    const ActionInfo& action = {});
  std::string arch();

  EvalSettings settings_;
  RolloutLog* log_ = nullptr;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl
