// GpuSession on a CUDA libtorch (built only when KBRL_TORCH_CUDA is set): opening the device, the
// peaks, the reference's timing, and run(): load -> check (CheckResult) -> time (Timing), assembled
// into the GpuJobResult. The steps are gpu/load.cpp, gpu/check.cpp and gpu/time.cpp.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include <harness/compile/compile.h>  // arch_for
#include <reference/task_registry.h>

#include "session_impl.h"

namespace kbrl {

using gpu::scalars_of;

bool gpu_available(std::string* reason) {
  const auto& status = cuda::driver_status();
  if (!status.available) {
    if (reason) *reason = status.reason;
    return false;
  }
  if (!torch::cuda::is_available()) {
    if (reason) *reason = "libtorch sees no CUDA device";
    return false;
  }
  return true;
}

GpuSession::GpuSession(int device) : impl_(std::make_unique<Impl>()) {
  std::string reason;
  if (!gpu_available(&reason)) throw Error("no GPU: " + reason);
  Impl& s = *impl_;
  s.device_index = device;
  s.device = torch::Device(torch::kCUDA, device);
  c10::cuda::set_device(device);
  // Reference numerics as KernelBench's fp32 semantics: no TF32 in matmul or cuDNN.
  at::globalContext().setAllowTF32CuBLAS(false);
  at::globalContext().setAllowTF32CuDNN(false);
  torch::empty({1}, torch::TensorOptions().device(s.device));  // creates the primary context
  // A cap on what this worker's tensors may take of the GPU (a share in (0, 1]), for a GPU shared
  // with a model or other workers; the test of a GPU too full for the harness sets it small. Set
  // after the first allocation: before it, the allocator is not initialized for the device.
  if (const char* f = std::getenv("KBRL_WORKER_MEMORY_FRACTION"); f && *f) {
    char* end = nullptr;
    const double share = std::strtod(f, &end);
    KBRL_CHECK_INPUT(end && *end == '\0' && share > 0 && share <= 1,
                     "KBRL_WORKER_MEMORY_FRACTION={}: give a share of the GPU's memory in (0, 1]", f);
    c10::cuda::CUDACachingAllocator::setMemoryFraction(share, device);
  }
  const auto& api = cuda::driver();
  CUdevice dev = 0;
  KBRL_CU_CHECK(api.device_get(&dev, device));
  CUcontext ctx = nullptr;
  KBRL_CU_CHECK(api.primary_ctx_retain(&ctx, dev));
  KBRL_CU_CHECK(api.ctx_set_current(ctx));
  char name[256] = {};
  KBRL_CU_CHECK(api.device_get_name(name, sizeof name, dev));
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    KBRL_CU_CHECK(api.device_get_attribute(&v, a, dev));
    return v;
  };
  DeviceInfo& info = s.info;
  info.name = name;
  info.cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info.cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  info.memory_bytes = static_cast<int64_t>(at::cuda::getDeviceProperties(device)->totalGlobalMem);
  info.arch = arch_for(info.cc_major, info.cc_minor);
  s.stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device);
  c10::cuda::setCurrentCUDAStream(s.stream);
  s.compare = std::make_unique<CompareKernel>(info.arch);
  s.start = cuda::create_event();
  s.stop = cuda::create_event();
  s.l2_flush = torch::empty({2 * info.l2_bytes / 4 + 1}, torch::TensorOptions().dtype(torch::kInt32).device(s.device));
}

GpuSession::~GpuSession() = default;

const DeviceInfo& GpuSession::device() const { return impl_->info; }

DevicePeaks GpuSession::measure_peaks() {
  Impl& s = *impl_;
  torch::NoGradGuard no_grad;
  DevicePeaks peaks;
  // The fastest of n samples (after two warm-ups): the peaks are ceilings, not typical rates.
  auto best_ms = [&](auto&& fn, int n) {
    for (int i = 0; i < 2; ++i) fn();
    double best = INFINITY;
    for (int i = 0; i < n; ++i) best = std::min(best, s.timed_sample(fn));
    return best;
  };
  const auto opts = torch::TensorOptions().device(s.device);
  {
    // Bandwidth: the best of a copy (read + write), a read (sum) and a write (fill) of 2 GiB.
    const int64_t n = int64_t{1} << 29;
    const double bytes = 4.0 * static_cast<double>(n);
    auto a = torch::rand({n}, opts), b = torch::empty({n}, opts);
    const double copy = 2 * bytes / (best_ms([&] { b.copy_(a); }, 10) * 1e-3);
    const double read = bytes / (best_ms([&] { a.sum(); }, 10) * 1e-3);
    const double write = bytes / (best_ms([&] { b.fill_(1.0f); }, 10) * 1e-3);
    peaks.copy_bytes_per_s = std::max({copy, read, write});
  }
  {
    const int64_t n = 8192;
    auto a = torch::rand({n, n}, opts), b = torch::rand({n, n}, opts);
    const double flops = 2.0 * n * n * n;
    peaks.fp32_flops_per_s = flops / (best_ms([&] { torch::matmul(a, b); }, 5) * 1e-3);
    at::globalContext().setAllowTF32CuBLAS(true);
    peaks.tf32_flops_per_s = flops / (best_ms([&] { torch::matmul(a, b); }, 5) * 1e-3);
    at::globalContext().setAllowTF32CuBLAS(false);
  }
  c10::cuda::CUDACachingAllocator::emptyCache();
  return peaks;
}

std::vector<double> GpuSession::time_reference(int task_id, Scale scale, const TimingSettings& timing,
                                               uint64_t seed) {
  Impl& s = *impl_;
  torch::NoGradGuard no_grad;
  const TaskSpec spec = task_spec(task_id, scale);
  ReferenceModel& model = s.reference(spec);
  const Tensors inputs = make_inputs(spec, seed, s.device);
  const auto scalars = scalars_of(spec);
  for (int i = 0; i < timing.warmups; ++i) model(inputs, scalars);
  AdaptiveStop stop(timing.stop);
  while (!stop.add(s.timed_sample([&] { model(inputs, scalars); }))) {
  }
  return stop.samples();
}

GpuJobResult GpuSession::run(const GpuJob& job) {
  // A candidate that faults can break the context under libtorch's feet: any CUDA failure that
  // escapes the checks below is the candidate's runtime error, and this process must be replaced.
  try {
    // Moving to another task, hand the caching allocator's blocks back to the driver, so the new
    // task (or another process on this GPU) finds the memory free; within a task, keep them.
    const auto task = std::make_pair(job.task_id, job.scale);
    if (task != impl_->last_task) c10::cuda::CUDACachingAllocator::emptyCache();
    impl_->last_task = task;
    return run_checked(job);
  } catch (const ApiError& e) {
    GpuJobResult r;
    r.outcome = Outcome::runtime_error;
    r.detail = e.what();
    r.restart_worker = true;
    return r;
  } catch (const c10::OutOfMemoryError& e) {
    // The harness's own tensors (inputs, outputs, the reference's answers) did not fit: the GPU is
    // shared with other processes, or holds too much. Seen on an H100 with six sampling processes
    // side by side, each with its worker at KernelBench's sizes. Not the candidate's doing (its
    // scratch is within the plan's limit); a fresh worker, later, evaluates it again.
    GpuJobResult r;
    r.outcome = Outcome::harness_error;
    r.detail = std::string("the GPU ran out of memory for the harness's tensors (a harness fault, not the "
                           "candidate's: the GPU is shared or full; a rerun evaluates it again): ") +
               e.what_without_backtrace();
    r.restart_worker = true;
    return r;
  } catch (const c10::Error& e) {
    GpuJobResult r;
    r.outcome = Outcome::runtime_error;
    r.detail = std::string("CUDA failure after the candidate ran: ") + e.what_without_backtrace();
    r.restart_worker = true;
    return r;
  }
}

GpuJobResult GpuSession::run_checked(const GpuJob& job) {
  Impl& s = *impl_;
  torch::NoGradGuard no_grad;
  GpuJobResult result;
  const TaskSpec spec = task_spec(job.task_id, job.scale);
  s.stage_ms.clear();
  ++s.jobs_run;
  auto clock = std::chrono::steady_clock::now();
  auto stage_done = [&](const char* stage) {  // each step ends synchronized with the device
    const auto now = std::chrono::steady_clock::now();
    s.stage_ms[stage] += std::chrono::duration<double, std::milli>(now - clock).count();
    clock = now;
    result.stage_ms = s.stage_ms;
  };
  gpu::prepare_accuracy(s, job, spec);
  stage_done("accuracy");

  gpu::JobState state(job, spec, s.reference(spec));
  auto fail = [&](const gpu::CandidateFault& f) {
    result.outcome = f.outcome;
    result.detail = f.detail;
    result.restart_worker = f.sticky;
    // A run that rewrote the parameters and then faulted, before any check looked, must not leave
    // them for the next candidate's reference (a sticky fault replaces the process anyway).
    if (f.drop_reference || (!f.sticky && gpu::parameters_changed(s, state))) s.drop_references(spec);
    return result;
  };
  if (auto fault = gpu::load_candidate(job, state.loaded)) return fail(*fault);
  if (auto fault = gpu::bind_buffers(s.device, state)) return fail(*fault);
  stage_done("load");

  s.profile.begin(s.cu_stream());
  gpu::CheckResult check = gpu::check_candidate(s, state);
  result.trials = std::move(check.trials);
  s.profile.add_to(s.stage_ms, "check");
  stage_done("check");
  if (!check.passed()) return fail(*check.fault);
  if (job.timing.stop.max_samples <= 0) return result;  // checks only (benchmarks)

  s.profile.begin(s.cu_stream());
  gpu::Timing timing = gpu::time_candidate(s, state);
  result.candidate_ms = std::move(timing.candidate_ms);
  result.reference_ms = std::move(timing.reference_ms);
  s.profile.add_to(s.stage_ms, "time");
  stage_done("time");
  if (timing.fault) return fail(*timing.fault);
  result.timed_runs_checked = timing.timed_runs_checked;
  return result;
}

}  // namespace kbrl
