#pragma once
// The GPU side of the evaluator, run inside a worker process (never in the parent): loads a compiled
// candidate, checks it against the libtorch reference over fresh inputs, and times both. One session
// per worker process; a sticky CUDA error means the process must be replaced (restart_worker).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <harness/stage_values.h>  // TrialCheck, DevicePeaks
#include <harness/stats.h>
#include <kbrl/outcome.h>
#include <kernels/candidate.h>
#include <reference/task.h>

namespace kbrl {

struct DeviceInfo {
  std::string name;
  std::string arch;  // NVRTC architecture for this device, e.g. "sm_90a"
  int sm_count = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  int cc_major = 0, cc_minor = 0;
};

struct CheckSettings {
  int trials = 5;  // trials on KernelBench's draw (or, with robust_inputs, on it and its mixes)
  /// Besides them, one trial on the task's stress set, and the trials' kinds drawn from KernelBench's
  /// draw and the two mixes (trial_plan).
  bool robust_inputs = false;
  double atol = 1e-4;
  double rtol = 1e-4;
  uint64_t secret = 0;  // the run's secret: trial seeds and fingerprint keys derive from it
};

struct TimingSettings {
  AdaptiveStopConfig stop = stop_config(TimingMode::fast);  // how many samples (harness/stats.h)
  int warmups = 3;  // the evaluator draws it from the run's secret (warmups_for)
  /// Time the reference paired with the candidate: one reference run on the same inputs after every
  /// timed candidate run. False only in benchmarks.
  bool time_reference = true;
};

struct GpuJob {
  int task_id = 0;
  Scale scale = Scale::kernelbench;
  Candidate candidate;
  std::string cubin;  // compiled for this device by the parent
  CheckSettings check;
  TimingSettings timing;
};

struct GpuJobResult {
  Outcome outcome = Outcome::ok;
  std::string detail;
  std::vector<TrialCheck> trials;
  std::vector<double> candidate_ms;  // timed samples (empty unless every check passed)
  std::vector<double> reference_ms;  // paired with candidate_ms, sample by sample
  int64_t timed_runs_checked = 0;    // timed runs whose output was verified (all of them)
  bool restart_worker = false;  // a sticky CUDA error poisoned this process's context
  /// Wall milliseconds of each step that ran: "accuracy" (the float64 computation, when this job made
  /// it), "load", "check", "time"; and the device milliseconds of each step's parts ("check.inputs",
  /// "time.candidate", ...: step_profile.h).
  std::map<std::string, double> stage_ms;
};

class GpuSession {
 public:
  /// Opens the device through libtorch and the driver API. Throws kbrl::Error when this build has
  /// no CUDA libtorch or the machine has no GPU.
  explicit GpuSession(int device = 0);
  ~GpuSession();
  GpuSession(const GpuSession&) = delete;
  GpuSession& operator=(const GpuSession&) = delete;

  const DeviceInfo& device() const;
  /// Measures the speed-of-light ceilings: the best bandwidth of libtorch's copy (bytes read +
  /// written), read (sum) and write (fill) of 2 GiB, and an 8192^3 libtorch GEMM with TF32 off (fp32)
  /// and on (tf32); the fastest of several runs each.
  DevicePeaks measure_peaks();
  /// Checks then (if correct) times one candidate. Candidate faults are outcomes, never exceptions.
  GpuJobResult run(const GpuJob& job);
  /// Times the task's reference alone (`samples` samples after warm-ups).
  std::vector<double> time_reference(int task_id, Scale scale, const TimingSettings& timing,
                                     uint64_t seed);

  struct Impl;

 private:
  GpuJobResult run_checked(const GpuJob& job);
  std::unique_ptr<Impl> impl_;
};

/// Whether this build can run GPU sessions (a libtorch with CUDA) and the machine has a GPU, with the
/// reason when not. Never throws.
bool gpu_available(std::string* reason = nullptr);

/// The seed for (secret, task, n): what make_inputs is seeded with for check trial n (its position in
/// trial_plan); other draws of the protocol use n from 1,000,000 up (timed samples' inputs, orders).
uint64_t trial_seed(uint64_t secret, int task_id, int trial);

/// One check trial: its input set, its seed and its name in the record ("trial-0", "stress-3").
struct TrialPlan {
  InputSet set = InputSet::kernelbench;
  uint64_t seed = 0;
  std::string seed_id;
};

/// The check's trials for a task. Without robust_inputs: `trials` on KernelBench's draw. With it:
/// one on the stress set and `trials` more, the first three KernelBench's draw, outliers and
/// mixture and the others any of the three, all in an order drawn from the secret, so no candidate
/// knows which kind of inputs comes when. Seeds from trial_seed(secret, task, position).
std::vector<TrialPlan> trial_plan(const CheckSettings& check, int task_id);

/// The trial (a position in trial_plan) whose second run is on the same inputs with a few values
/// changed: drawn from the secret.
size_t changed_input_trial(const CheckSettings& check, int task_id, size_t trials);

/// The seed of the changes of the changed-input run in trial `k` (change_few_values).
uint64_t changed_input_seed(const CheckSettings& check, int task_id, size_t k);

/// Where the check measures the accuracy against float64: the first trial of KernelBench's draw, on
/// the inputs its compared run sees. `key` names those inputs for the cache of float64 facts: the
/// trial's seed, salted when it is the changed-input trial. Nothing without such a trial.
struct AccuracyTrial {
  size_t trial = 0;
  uint64_t key = 0;
  bool changed = false;
};
std::optional<AccuracyTrial> accuracy_trial(const std::vector<TrialPlan>& plan, size_t changed_trial);

/// The input set of timed sample `draw` (0, 1, ...). Without robust_inputs, KernelBench's. With it,
/// the first five samples are KernelBench's draw twice, the stress set, outliers and mixture, in an
/// order drawn from `sample_secret` (fast mode meets every set); then blocks of six, KernelBench's
/// draw three times and each other set once, each block in its own drawn order.
InputSet timed_input_set(const CheckSettings& check, uint64_t sample_secret, int task_id, int draw);

/// The number of warm-up runs before timing, drawn from the secret and the candidate's record key
/// (2 to 6), so a candidate cannot count its way to the first timed run.
int warmups_for(uint64_t secret, std::string_view candidate_key);

}  // namespace kbrl
