#pragma once
// Internal to the GPU session on a CUDA libtorch (built only with KBRL_TORCH_CUDA): the session's
// device state (GpuSession::Impl), the per-job state the load, check and time steps share, and those
// steps. Buffers and the reference go through libtorch, the candidate through the driver API, all on
// one harness-owned stream.
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <cstdint>
#include <limits>
#include <map>
#include <tuple>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <kbrl/error.h>
#include <reference/reference_model.h>

#include "compare_kernel.h"
#include "cuda_driver.h"
#include "cuda_handles.h"
#include "gpu_session.h"
#include "gpu_stages.h"
#include "guarded_output.h"
#include "step_profile.h"

namespace kbrl {

/// What the accuracy check knows of one output of a trial's inputs, from one float64 computation
/// (gpu/accuracy.h): the float64 answer's norm and the float32 reference's relative L2 error
/// against it. NaN where not measured.
struct AccuracyBase {
  double exact_norm = std::numeric_limits<double>::quiet_NaN();
  double reference_error = std::numeric_limits<double>::quiet_NaN();
};

struct GpuSession::Impl {
  int device_index = 0;
  torch::Device device{torch::kCUDA, 0};
  DeviceInfo info;
  c10::cuda::CUDAStream stream = c10::cuda::getDefaultCUDAStream();
  torch::Tensor l2_flush;  // 2x L2, written before every timed sample
  std::map<std::pair<int, Scale>, ReferenceModel> references;
  std::map<std::pair<int, Scale>, ReferenceModel> references64;  // the same in float64 (accuracy.h)
  /// Per (task, scale, trial seed): two numbers per output, computed once before the first candidate
  /// (the trial's inputs are the same for every candidate of a run); no answer is kept.
  std::map<std::tuple<int, Scale, uint64_t>, std::vector<AccuracyBase>> accuracy_bases;
  std::unique_ptr<CompareKernel> compare;
  std::pair<int, Scale> last_task{0, Scale::kernelbench};
  cuda::Event start, stop;  // created once the context is current

  CUstream cu_stream() const { return reinterpret_cast<CUstream>(stream.stream()); }

  ReferenceModel& reference(const TaskSpec& spec) {
    auto key = std::make_pair(spec.id, spec.scale);
    auto it = references.find(key);
    if (it == references.end()) {
      ReferenceModel model = make_reference(spec);
      model.to(device);
      it = references.emplace(key, std::move(model)).first;
    }
    return it->second;
  }

  /// The task's reference with float64 parameters: what the accuracy check computes against.
  ReferenceModel& reference64(const TaskSpec& spec) {
    auto key = std::make_pair(spec.id, spec.scale);
    auto it = references64.find(key);
    if (it == references64.end()) {
      ReferenceModel model = make_reference(spec);
      model.module->to(torch::kFloat64);
      model.to(device);
      it = references64.emplace(key, std::move(model)).first;
    }
    return it->second;
  }
  /// Forgets a task's references (a candidate wrote their parameters).
  void drop_references(const TaskSpec& spec) {
    references.erase({spec.id, spec.scale});
    references64.erase({spec.id, spec.scale});
  }

  std::map<std::string, double> stage_ms;  // the current job's steps (GpuJobResult::stage_ms)
  /// The device time of each part of the current step ("check.inputs", "time.candidate", ...).
  cuda::StepProfile profile;
  /// The work enqueued since the last mark belongs to `part` of the current step (step_profile.h).
  void mark(const char* part) { profile.mark(part, cu_stream()); }
  /// Jobs this session has run: the timed samples' inputs differ from job to job (time.cpp), so no
  /// candidate meets inputs an earlier candidate's runs saw.
  uint64_t jobs_run = 0;

  void flush_l2() { l2_flush.zero_(); }

  /// Times `fn` on the harness stream between driver events, after an L2 flush.
  template <typename Fn>
  double timed_sample(Fn&& fn) {
    flush_l2();
    mark("l2_flush");
    KBRL_CU_CHECK(cuda::driver().event_record(start.get(), cu_stream()));
    fn();
    KBRL_CU_CHECK(cuda::driver().event_record(stop.get(), cu_stream()));
    KBRL_CU_CHECK(cuda::driver().event_synchronize(stop.get()));
    float ms = 0;
    KBRL_CU_CHECK(cuda::driver().event_elapsed_time(&ms, start.get(), stop.get()));
    return ms;
  }
};

namespace gpu {

/// The candidate's module and one function per launch of its plan.
struct LoadedCandidate {
  cuda::Module module;
  std::vector<CUfunction> functions;  // one per launch
};

/// The device buffers one run of the candidate sees.
struct Bindings {
  const Tensors* inputs = nullptr;
  const Tensors* parameters = nullptr;
  std::vector<torch::Tensor> outputs;
  std::vector<torch::Tensor> scratch;
  const std::vector<ScalarSpec>* scalars = nullptr;
};

/// One job's state, shared by its steps: the loaded candidate, the buffers it is bound to, the
/// reference and the fingerprint keys. Pinned in place (bindings point into it).
struct JobState {
  JobState(const GpuJob& job, const TaskSpec& spec, ReferenceModel& model);
  JobState(const JobState&) = delete;
  JobState& operator=(const JobState&) = delete;
  /// Poisons the outputs: what the candidate wrote does not outlive its job in the allocator's cache.
  ~JobState();

  const GpuJob& job;
  const TaskSpec& spec;
  ReferenceModel& model;
  const Tensors params;
  const std::vector<double> scalars;
  LoadedCandidate loaded;
  Bindings bindings;
  std::vector<GuardedOutput> outputs;
  std::vector<torch::Tensor> raw_outputs;  // the outputs' bytes, for fingerprints
  Tensors inputs;                          // the current trial's or timed sample's
  // Keyed fingerprints instead of pristine copies (compare_kernel.h): nothing the candidate could
  // find by pointer arithmetic holds its inputs' original bytes or the reference's answer.
  const uint64_t input_key, param_key, output_key;
  /// The parameters' fingerprints as the check began (check.cpp): what the timed runs' references
  /// must still compute with (time.cpp).
  std::vector<int64_t> param_fp;
  /// The accuracy check's facts of the trial that measured them, per output (empty when none did):
  /// the timed runs on KernelBench's draw are held to the same limit.
  std::vector<AccuracyBase> accuracy;
};

/// The task's scalars as the reference takes them.
std::vector<double> scalars_of(const TaskSpec& spec);

// --- load (gpu/load.cpp) ---
/// Loads the cubin and finds every launch's kernel (with its dynamic shared memory allowed).
std::optional<CandidateFault> load_candidate(const GpuJob& job, LoadedCandidate& loaded);
/// Allocates the plan's scratch buffers and the guarded outputs, and binds them.
std::optional<CandidateFault> bind_buffers(const torch::Device& device, JobState& state);
/// Enqueues every launch of the plan on the stream (no synchronisation).
std::optional<CandidateFault> enqueue(const GpuJob& job, const LoadedCandidate& loaded,
                                      const Bindings& bindings, CUstream stream);
/// Waits for the stream; a failure is the candidate's (runtime_error).
std::optional<CandidateFault> synchronize(CUstream stream);

// --- check (gpu/check.cpp) ---
/// Computes and keeps (Impl::accuracy_bases) the float64 facts of the check's accuracy trial (the
/// first of KernelBench's draw), once per task, scale and trial seed, before the candidate's buffers
/// exist: a candidate cannot make the float64 run fail by asking for memory. Not measured (NaN)
/// where the task's float64 computation does not fit or has no kernel.
void prepare_accuracy(GpuSession::Impl& session, const GpuJob& job, const TaskSpec& spec);
/// Whether the candidate's runs left the reference's parameters other than the check found them (a
/// run that faulted before the check looked): then the references are rebuilt.
bool parameters_changed(GpuSession::Impl& session, JobState& state) noexcept;
/// The trials: runs, compares with the reference, verifies inputs, parameters and determinism.
CheckResult check_candidate(GpuSession::Impl& session, JobState& state);
/// Enqueues the comparison of one output with the reference's into `partials` ([kBlocks,
/// kCompareStats] float64 on the device): the comparison kernel for float32, an exact count of
/// differing elements (row 0) otherwise. Nothing is read back.
void enqueue_compare(const torch::Tensor& out, const torch::Tensor& ref, const CheckSettings& settings,
                     const CompareKernel& kernel, CUstream stream, const torch::Tensor& partials);
/// The verdict from one comparison's per-block partials summed (`totals`) and maximised (`maxima`)
/// over the blocks (kCompareStats values each): NaN/Inf, allclose, then the relative L2 bound.
TrialCheck judge_compare(const double* totals, const double* maxima, int64_t n, bool floating,
                         const CheckSettings& settings);
/// The check's tolerances for one output on `set`'s inputs: beyond KernelBench's draw, atol scales
/// with the expected output's RMS when it exceeds 1 (a host sync).
CheckSettings settings_for(const CheckSettings& base, const torch::Tensor& expected, InputSet set);
/// Enqueues the keyed fingerprints of `tensors` (key, key + 1, ...) into the int64 device tensor
/// `slots` (zeroed first); nothing is read back.
void enqueue_fingerprints(GpuSession::Impl& session, const std::vector<torch::Tensor>& tensors, uint64_t key,
                          const torch::Tensor& slots);
/// An input_mutated fault (dropping the references) when the parameters' fingerprints `now` differ
/// from the check's (JobState::param_fp); `where` names the run.
std::optional<CandidateFault> parameter_fault(const JobState& state, const int64_t* now, const std::string& where);
/// The keyed fingerprints of `tensors` (key, key + 1, ...), read back to the host.
std::vector<int64_t> fingerprints(GpuSession::Impl& session, const std::vector<torch::Tensor>& tensors, uint64_t key);
/// Adds the keyed fingerprint of `t`'s bytes (its own bytes when contiguous, else its whole storage)
/// to slot `index` of the int64 tensor `slots` (compare_kernel.h), on the stream.
void fingerprint_into(const torch::Tensor& t, uint64_t key, const torch::Tensor& slots, int64_t index,
                      const CompareKernel& kernel, CUstream stream);
/// Overwrites a harness tensor that must not outlive its use (a reference output): NaN, -1 or false.
void poison_tensor(torch::Tensor& t);

// --- time (gpu/time.cpp) ---
/// Paired timed runs, each on inputs drawn for it, each run's outputs compared with the reference of
/// its own inputs.
Timing time_candidate(GpuSession::Impl& session, JobState& state);

}  // namespace gpu
}  // namespace kbrl
