// GpuSession on a CUDA libtorch: buffers and the reference through libtorch, the candidate through
// the driver API, all on one harness-owned stream. Built only when KBRL_TORCH_CUDA is set.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>

#include <kbrl/error.h>

#include "harness/compare_kernel.h"
#include "harness/compile.h"  // arch_for
#include "harness/cuda_driver.h"
#include "harness/gpu_session.h"
#include "reference/reference_model.h"
#include "reference/task_registry.h"

namespace kbrl {
namespace {

constexpr int64_t kGuardBytes = 1 << 20;  // poisoned bytes on each side of every output
constexpr uint8_t kPoison = 0xFF;         // NaN for float32, -1 for int64
constexpr double kRelL2Factor = 10.0;  // ||out - ref|| / ||ref|| must stay under 10 x rtol

struct RaiiEvent {
  CUevent event = nullptr;
  RaiiEvent() { KBRL_CU_CHECK(cuda::driver().event_create(&event, CU_EVENT_DEFAULT)); }
  ~RaiiEvent() {
    if (event) cuda::driver().event_destroy(event);
  }
  RaiiEvent(const RaiiEvent&) = delete;
  RaiiEvent& operator=(const RaiiEvent&) = delete;
};

struct RaiiModule {
  CUmodule module = nullptr;
  ~RaiiModule() {
    if (module) cuda::driver().module_unload(module);
  }
};

/// A candidate failure found while running: carried to the outcome, never thrown past run().
struct CandidateFault {
  Outcome outcome;
  std::string detail;
  bool sticky = false;
};

/// An output with poisoned guard bands on both sides, in one allocation.
struct GuardedOutput {
  torch::Tensor buffer;  // uint8: guard | output bytes | guard
  torch::Tensor tensor;  // the output view the candidate writes
  int64_t bytes = 0;

  GuardedOutput(const TensorSpec& spec, torch::Device device) : bytes(spec.bytes()) {
    buffer = torch::empty({kGuardBytes * 2 + bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
    tensor = buffer.narrow(0, kGuardBytes, bytes).view(to_torch(spec.dtype)).view(spec.shape);
  }
  void poison() { buffer.fill_(kPoison); }
  bool guards_intact() const {
    return buffer.narrow(0, 0, kGuardBytes).eq(kPoison).all().item<bool>() &&
           buffer.narrow(0, kGuardBytes + bytes, kGuardBytes).eq(kPoison).all().item<bool>();
  }
  torch::Tensor raw() const { return buffer.narrow(0, kGuardBytes, bytes); }
};

}  // namespace

struct GpuSession::Impl {
  int device_index = 0;
  torch::Device device{torch::kCUDA, 0};
  DeviceInfo info;
  c10::cuda::CUDAStream stream = c10::cuda::getDefaultCUDAStream();
  torch::Tensor l2_flush;  // 2x L2, written before every timed sample
  std::map<std::pair<int, Scale>, ReferenceModel> references;
  std::unique_ptr<CompareKernel> compare;
  std::pair<int, Scale> last_task{0, Scale::kernelbench};

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

  void flush_l2() { l2_flush.zero_(); }

  std::unique_ptr<RaiiEvent> start, stop;  // created once the context is current

  /// Times `fn` on the harness stream between driver events, after an L2 flush.
  template <typename Fn>
  double timed_sample(Fn&& fn) {
    flush_l2();
    KBRL_CU_CHECK(cuda::driver().event_record(start->event, cu_stream()));
    fn();
    KBRL_CU_CHECK(cuda::driver().event_record(stop->event, cu_stream()));
    KBRL_CU_CHECK(cuda::driver().event_synchronize(stop->event));
    float ms = 0;
    KBRL_CU_CHECK(cuda::driver().event_elapsed_time(&ms, start->event, stop->event));
    return ms;
  }
};

namespace {

struct LoadedCandidate {
  RaiiModule module;
  std::vector<CUfunction> functions;  // one per launch
};

std::optional<CandidateFault> load_candidate(const GpuJob& job, LoadedCandidate& loaded) {
  const auto& api = cuda::driver();
  if (CUresult r = api.module_load_data_ex(&loaded.module.module, job.cubin.data(), 0, nullptr, nullptr);
      r != CUDA_SUCCESS)
    return CandidateFault{Outcome::load_error, "module load failed: " + cuda::describe(r), cuda::is_sticky(r)};
  if (job.candidate.launches.empty())
    return CandidateFault{Outcome::launch_error, "the launch plan is empty", false};
  for (const auto& launch : job.candidate.launches) {
    CUfunction fn = nullptr;
    if (CUresult r = api.module_get_function(&fn, loaded.module.module, launch.kernel.c_str());
        r != CUDA_SUCCESS)
      return CandidateFault{Outcome::load_error,
                            "kernel '" + launch.kernel + "' not found in the module (is it extern \"C\"?): " +
                                cuda::describe(r),
                            false};
    if (launch.shared_bytes > 48 * 1024) {
      if (CUresult r = api.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                              static_cast<int>(launch.shared_bytes));
          r != CUDA_SUCCESS)
        return CandidateFault{Outcome::launch_error,
                              fmt::format("kernel '{}' cannot have {} bytes of dynamic shared memory: {}",
                                          launch.kernel, launch.shared_bytes, cuda::describe(r)),
                              cuda::is_sticky(r)};
    }
    loaded.functions.push_back(fn);
  }
  return std::nullopt;
}

/// The device buffers one run of the candidate sees.
struct Bindings {
  const Tensors* inputs = nullptr;
  const Tensors* parameters = nullptr;
  std::vector<torch::Tensor> outputs;
  std::vector<torch::Tensor> scratch;
  const std::vector<ScalarSpec>* scalars = nullptr;
};

/// Argument storage for one launch: 8-byte slots whose addresses go to cuLaunchKernel.
struct ArgBlock {
  std::vector<uint64_t> slots;
  std::vector<void*> pointers;
};

std::optional<CandidateFault> build_args(const Launch& launch, const Bindings& b, ArgBlock& block) {
  block.slots.assign(launch.args.size(), 0);
  block.pointers.clear();
  auto tensor_at = [](const std::vector<torch::Tensor>& list, int i) -> std::optional<torch::Tensor> {
    if (i < 0 || i >= static_cast<int>(list.size())) return std::nullopt;
    return list[i];
  };
  for (size_t a = 0; a < launch.args.size(); ++a) {
    const KernelArg& arg = launch.args[a];
    uint64_t& slot = block.slots[a];
    std::optional<torch::Tensor> t;
    switch (arg.kind) {
      case ArgKind::input: t = tensor_at(*b.inputs, arg.index); break;
      case ArgKind::parameter: t = tensor_at(*b.parameters, arg.index); break;
      case ArgKind::output: t = tensor_at(b.outputs, arg.index); break;
      case ArgKind::scratch: t = tensor_at(b.scratch, arg.index); break;
      case ArgKind::task_scalar: {
        if (arg.index < 0 || arg.index >= static_cast<int>(b.scalars->size()))
          return CandidateFault{Outcome::launch_error, fmt::format("no task scalar {}", arg.index)};
        const float v = static_cast<float>((*b.scalars)[arg.index].value);
        std::memcpy(&slot, &v, sizeof v);
        break;
      }
      case ArgKind::f32: {
        const float v = static_cast<float>(arg.value);
        std::memcpy(&slot, &v, sizeof v);
        break;
      }
      case ArgKind::i32: {
        const int32_t v = static_cast<int32_t>(arg.ivalue);
        std::memcpy(&slot, &v, sizeof v);
        break;
      }
      case ArgKind::i64: slot = static_cast<uint64_t>(arg.ivalue); break;
    }
    const bool is_tensor = arg.kind == ArgKind::input || arg.kind == ArgKind::parameter ||
                           arg.kind == ArgKind::output || arg.kind == ArgKind::scratch;
    if (is_tensor) {
      if (!t)
        return CandidateFault{Outcome::launch_error,
                              fmt::format("launch '{}' argument {} refers to a missing tensor (index {})",
                                          launch.kernel, a, arg.index)};
      slot = reinterpret_cast<uint64_t>(t->data_ptr());
    }
    block.pointers.push_back(&slot);
  }
  return std::nullopt;
}

/// Enqueues every launch of the plan on the stream (no synchronisation).
std::optional<CandidateFault> enqueue(const GpuJob& job, const LoadedCandidate& loaded,
                                      const Bindings& bindings, CUstream stream) {
  const auto& api = cuda::driver();
  for (size_t i = 0; i < job.candidate.launches.size(); ++i) {
    const Launch& l = job.candidate.launches[i];
    ArgBlock args;
    if (auto fault = build_args(l, bindings, args)) return fault;
    CUresult r = api.launch_kernel(loaded.functions[i], l.grid.x, l.grid.y, l.grid.z, l.block.x,
                                   l.block.y, l.block.z, l.shared_bytes, stream,
                                   args.pointers.data(), nullptr);
    if (r != CUDA_SUCCESS)
      return CandidateFault{cuda::is_sticky(r) ? Outcome::runtime_error : Outcome::launch_error,
                            fmt::format("launch {} ('{}', grid {}x{}x{}, block {}x{}x{}, {} B shared): {}",
                                        i, l.kernel, l.grid.x, l.grid.y, l.grid.z, l.block.x,
                                        l.block.y, l.block.z, l.shared_bytes, cuda::describe(r)),
                            cuda::is_sticky(r)};
  }
  return std::nullopt;
}

std::optional<CandidateFault> synchronize(CUstream stream) {
  CUresult r = cuda::driver().stream_synchronize(stream);
  if (r == CUDA_SUCCESS) return std::nullopt;
  return CandidateFault{Outcome::runtime_error, "the candidate faulted: " + cuda::describe(r),
                        cuda::is_sticky(r)};
}

/// Compares one output with the reference: NaN/Inf fail, then |ref - out| <= atol + rtol*|ref|.
TrialCheck compare(const torch::Tensor& out, const torch::Tensor& ref, const CheckSettings& s,
                   const CompareKernel& kernel, CUstream stream) {
  TrialCheck check;
  if (out.scalar_type() != ref.scalar_type() || out.sizes() != ref.sizes()) {
    check.failure = "output shape or dtype differs from the reference";
    return check;
  }
  if (!out.is_floating_point()) {
    const int64_t mismatches = out.ne(ref).sum().item<int64_t>();
    check.max_abs_error = mismatches ? (out - ref).abs().max().item<double>() : 0.0;
    check.passed = mismatches == 0;
    if (!check.passed) check.failure = fmt::format("{} of {} elements differ", mismatches, out.numel());
    return check;
  }
  // One pass of the harness's comparison kernel (harness/compare_kernel.h) over both tensors.
  KBRL_ASSERT(out.scalar_type() == torch::kFloat32, "floating outputs are float32, not {}",
              c10::toString(out.scalar_type()));
  const auto o_all = out.contiguous(), r_all = ref.contiguous();
  const int64_t n = o_all.numel();
  auto partials = torch::empty({CompareKernel::kBlocks, kCompareStats},
                               torch::TensorOptions().dtype(torch::kFloat64).device(out.device()));
  kernel.launch(reinterpret_cast<CUdeviceptr>(o_all.data_ptr()), reinterpret_cast<CUdeviceptr>(r_all.data_ptr()),
                n, s.atol, s.rtol, reinterpret_cast<CUdeviceptr>(partials.data_ptr()), stream);
  const auto totals = partials.sum(0).cpu();
  const auto maxima = std::get<0>(partials.max(0)).cpu();
  const int64_t non_finite = static_cast<int64_t>(totals[kNonFinite].item<double>());
  const int64_t bad = static_cast<int64_t>(totals[kOutside].item<double>());
  check.max_abs_error = maxima[kMaxAbs].item<double>();
  check.max_rel_error = maxima[kMaxRel].item<double>();
  const double diff_sq = totals[kDiffSq].item<double>(), ref_sq = totals[kRefSq].item<double>();
  if (non_finite > 0) {
    check.max_abs_error = check.max_rel_error = INFINITY;
    check.failure = fmt::format("{} of {} output elements are NaN or Inf (unwritten outputs stay NaN)",
                                non_finite, n);
    return check;
  }
  if (bad > 0) {
    check.failure = fmt::format("{} of {} elements outside atol={:g} rtol={:g} (max abs error {:.3g})",
                                bad, n, s.atol, s.rtol, check.max_abs_error);
    return check;
  }
  // allclose alone passes an all-zero output wherever |ref| is far below atol (softmax over 393216
  // columns: every value is ~2.5e-6). The relative L2 error of the whole output closes that hole.
  const double rel_l2 = ref_sq > 0 ? std::sqrt(diff_sq / ref_sq) : 0.0;
  if (rel_l2 > kRelL2Factor * s.rtol) {
    check.failure = fmt::format("relative L2 error {:.3g} exceeds {:g} (= {} x rtol) although allclose passed",
                                rel_l2, kRelL2Factor * s.rtol, kRelL2Factor);
    return check;
  }
  check.passed = true;
  return check;
}

/// Adds the keyed fingerprint of `t`'s bytes (its own bytes when contiguous, else its whole storage)
/// to slot `index` of the int64 tensor `slots` (compare_kernel.h), on the stream.
void fingerprint_into(const torch::Tensor& t, uint64_t key, const torch::Tensor& slots, int64_t index,
                      const CompareKernel& kernel, CUstream stream) {
  const bool whole = t.is_contiguous();
  const auto data = reinterpret_cast<CUdeviceptr>(whole ? t.data_ptr() : t.storage().data());
  const int64_t bytes = whole ? t.numel() * static_cast<int64_t>(t.element_size())
                              : static_cast<int64_t>(t.storage().nbytes());
  const auto slot = reinterpret_cast<CUdeviceptr>(slots.data_ptr()) + static_cast<CUdeviceptr>(index) * 8;
  kernel.fingerprint(data, bytes, key, slot, stream);
}

/// Overwrites a harness tensor that must not outlive its use (a reference output): NaN, -1 or false.
void poison_tensor(torch::Tensor& t) {
  if (t.is_floating_point()) t.fill_(std::numeric_limits<float>::quiet_NaN());
  else if (t.scalar_type() == torch::kBool) t.fill_(false);
  else t.fill_(-1);
}

std::vector<double> scalars_of(const TaskSpec& spec) {
  std::vector<double> v;
  for (const auto& s : spec.scalars) v.push_back(s.value);
  return v;
}

}  // namespace

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
  s.start = std::make_unique<RaiiEvent>();
  s.stop = std::make_unique<RaiiEvent>();
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
  bool drop_reference = false;  // a candidate wrote a parameter: rebuild the reference next time
  auto fail = [&](const CandidateFault& f) {
    result.outcome = f.outcome;
    result.detail = f.detail;
    result.restart_worker = f.sticky;
    if (drop_reference) s.references.erase({spec.id, spec.scale});
    return result;
  };

  ReferenceModel& model = s.reference(spec);
  const Tensors params = model.parameters();
  const auto scalars = scalars_of(spec);

  LoadedCandidate loaded;
  if (auto fault = load_candidate(job, loaded)) return fail(*fault);

  // Scratch buffers, as declared by the plan.
  Bindings bindings;
  bindings.parameters = &params;
  bindings.scalars = &spec.scalars;
  int64_t scratch_total = 0;
  for (const auto& sb : job.candidate.scratch) {
    scratch_total += std::max<int64_t>(sb.bytes, 0);
    if (sb.bytes <= 0 || scratch_total > plan_limits::kMaxScratchBytes)
      return fail({Outcome::launch_error,
                   fmt::format("scratch '{}' of {} bytes: each must be positive and all together at most {} bytes",
                               sb.name, sb.bytes, plan_limits::kMaxScratchBytes)});
    bindings.scratch.push_back(torch::empty({sb.bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(s.device)));
  }
  std::vector<GuardedOutput> outputs;
  for (const auto& o : spec.outputs) outputs.emplace_back(o, s.device);
  for (auto& o : outputs) bindings.outputs.push_back(o.tensor);
  std::vector<torch::Tensor> raw_outputs;
  for (auto& o : outputs) raw_outputs.push_back(o.raw());

  // Keyed fingerprints instead of pristine copies (compare_kernel.h): nothing the candidate could find
  // by pointer arithmetic holds its inputs' original bytes or the reference's answer while it runs.
  const uint64_t key = trial_seed(job.check.secret, spec.id, 0x4B42524C);
  const uint64_t input_key = key ^ 0x1, param_key = key ^ 0x2, output_key = key ^ 0x3;
  auto fingerprints = [&](const std::vector<torch::Tensor>& tensors, uint64_t k) {
    auto slots = torch::zeros({static_cast<int64_t>(tensors.size())},
                              torch::TensorOptions().dtype(torch::kInt64).device(s.device));
    for (size_t i = 0; i < tensors.size(); ++i) fingerprint_into(tensors[i], k + i, slots, static_cast<int64_t>(i), *s.compare, s.cu_stream());
    const auto host = slots.cpu();
    std::vector<int64_t> out(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) out[i] = host[static_cast<int64_t>(i)].item<int64_t>();
    return out;
  };
  const std::vector<int64_t> param_fp = fingerprints(params, param_key);

  // Runs the plan once over freshly poisoned outputs; returns a fault or nothing.
  auto run_once = [&]() -> std::optional<CandidateFault> {
    for (auto& o : outputs) o.poison();
    if (auto fault = enqueue(job, loaded, bindings, s.cu_stream())) return fault;
    if (auto fault = synchronize(s.cu_stream())) return fault;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (!outputs[i].guards_intact())
        return CandidateFault{Outcome::guard_violation,
                              fmt::format("the candidate wrote outside output '{}' (into its guard band)",
                                          spec.outputs[i].name)};
    return std::nullopt;
  };

  // The trials: the stress inputs first (when asked), then KernelBench's distribution; the last trial's
  // inputs stay for timing.
  struct TrialPlan {
    InputSet set;
    uint64_t seed;
    std::string seed_id;
  };
  std::vector<TrialPlan> plan;
  if (job.check.stress_trial && job.check.trials > 0)
    plan.push_back({InputSet::stress, trial_seed(job.check.secret, spec.id, -1), "stress-0"});
  for (int t = 0; t < job.check.trials; ++t)
    plan.push_back({InputSet::kernelbench, trial_seed(job.check.secret, spec.id, t), fmt::format("trial-{}", t)});

  Tensors inputs;
  std::vector<int64_t> checked_fp;  // the output fingerprints of the last checked run
  if (plan.empty()) {  // timing only (benchmarks): one input set, no checks
    inputs = make_inputs(spec, trial_seed(job.check.secret, spec.id, 0), s.device);
    bindings.inputs = &inputs;
    if (auto fault = run_once()) return fail(*fault);
    checked_fp = fingerprints(raw_outputs, output_key);
  }
  for (size_t k = 0; k < plan.size(); ++k) {
    const TrialPlan& p = plan[k];
    const std::string where =
        p.set == InputSet::stress ? fmt::format("trial {} (stress inputs: {})", k, describe_inputs(spec, p.set))
                                  : fmt::format("trial {}", k);
    inputs = make_inputs(spec, p.seed, s.device, p.set);
    bindings.inputs = &inputs;
    const std::vector<int64_t> input_fp = fingerprints(inputs, input_key);

    if (auto fault = run_once()) return fail(*fault);
    const std::vector<int64_t> first_fp = fingerprints(raw_outputs, output_key);
    if (auto fault = run_once()) return fail(*fault);
    checked_fp = fingerprints(raw_outputs, output_key);

    const std::vector<int64_t> input_after = fingerprints(inputs, input_key);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (input_after[i] != input_fp[i])
        return fail({Outcome::input_mutated, fmt::format("{}: input '{}' changed", where, spec.inputs[i].name)});
    const std::vector<int64_t> param_after = fingerprints(params, param_key);
    for (size_t i = 0; i < params.size(); ++i) {
      if (param_after[i] != param_fp[i]) {
        drop_reference = true;  // its parameters are no longer the seeded ones
        return fail({Outcome::input_mutated,
                     fmt::format("{}: parameter '{}' changed", where, spec.parameters[i].name)});
      }
    }

    // The reference runs only now, after the candidate's runs: while the candidate ran, no reference
    // output for these inputs existed anywhere in device memory.
    Tensors expected = model(inputs, scalars);
    TrialCheck check;
    check.trial = static_cast<int>(k);
    check.seed_id = p.seed_id;
    check.passed = true;
    for (size_t i = 0; i < outputs.size() && check.passed; ++i) {
      CheckSettings settings = job.check;
      // Stress inputs make outputs of any magnitude: the absolute tolerance scales with the output's
      // RMS (a sum of signed terms can be near zero where its terms are large).
      if (p.set == InputSet::stress && expected[i].is_floating_point() && expected[i].numel() > 0) {
        const double rms = expected[i].norm().item<double>() / std::sqrt(static_cast<double>(expected[i].numel()));
        if (std::isfinite(rms) && rms > 1.0) settings.atol *= rms;
      }
      const TrialCheck c = compare(outputs[i].tensor, expected[i], settings, *s.compare, s.cu_stream());
      check.max_abs_error = std::max(check.max_abs_error, c.max_abs_error);
      check.max_rel_error = std::max(check.max_rel_error, c.max_rel_error);
      if (!c.passed) {
        check.passed = false;
        check.failure = fmt::format("output '{}': {}", spec.outputs[i].name, c.failure);
      }
    }
    for (auto& t : expected) poison_tensor(t);  // the answer does not outlive its comparison
    expected.clear();
    result.trials.push_back(check);
    if (!check.passed) {
      result.outcome = Outcome::wrong_answer;
      result.detail = fmt::format("{}: {}", where, check.failure);
      return result;
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      if (first_fp[i] != checked_fp[i])
        return fail({Outcome::nondeterministic,
                     fmt::format("{}: two runs on the same inputs gave different bytes in output '{}'", where,
                                 spec.outputs[i].name)});
  }

  if (job.timing.stop.max_samples <= 0) return result;  // checks only (benchmarks)

  // Timing on the last trial's inputs: warm-ups (a number drawn from the secret), then samples, each
  // after an L2 flush with the outputs poisoned before it. Every timed run's output is fingerprinted
  // right after it (outside the timed region) and must be the checked output's bytes, so no timed run
  // goes unchecked. Each sample is paired with a reference run on the same inputs, before or after it
  // in an order drawn from the secret; the reference's output is poisoned as soon as it is timed.
  std::optional<CandidateFault> fault;
  auto candidate_once = [&] {
    if (!fault) fault = enqueue(job, loaded, bindings, s.cu_stream());
  };
  auto poison_outputs = [&] {
    for (auto& o : outputs) o.poison();
  };
  Tensors reference_out;
  auto reference_once = [&] { reference_out = model(inputs, scalars); };
  auto drop_reference_out = [&] {
    for (auto& t : reference_out) poison_tensor(t);
    reference_out.clear();
  };
  for (int i = 0; i < job.timing.warmups; ++i) {
    poison_outputs();
    candidate_once();
    if (job.timing.time_reference) {
      reference_once();
      drop_reference_out();
    }
  }
  if (!fault) fault = synchronize(s.cu_stream());
  if (fault) return fail(*fault);
  const auto n_out = static_cast<int64_t>(outputs.size());
  const int64_t capacity = std::max<int64_t>(job.timing.stop.max_samples, 1);
  auto timed_fp = torch::zeros({capacity * n_out}, torch::TensorOptions().dtype(torch::kInt64).device(s.device));
  AdaptiveStop stop(job.timing.stop);
  int64_t sample = 0;
  bool stopped = false;
  while (!stopped && sample < capacity) {
    const bool reference_first = (trial_seed(job.check.secret, spec.id, 1'000'000 + static_cast<int>(sample)) & 1) != 0;
    auto time_reference = [&] {
      result.reference_ms.push_back(s.timed_sample(reference_once));
      drop_reference_out();
    };
    if (job.timing.time_reference && reference_first) time_reference();
    poison_outputs();
    const double ms = s.timed_sample(candidate_once);
    if (fault) return fail(*fault);
    for (int64_t o = 0; o < n_out; ++o)
      fingerprint_into(raw_outputs[o], output_key + static_cast<uint64_t>(o), timed_fp, sample * n_out + o,
                       *s.compare, s.cu_stream());
    result.candidate_ms.push_back(ms);
    if (job.timing.time_reference && !reference_first) time_reference();
    ++sample;
    stopped = stop.add(ms);
  }
  if (auto late = synchronize(s.cu_stream())) return fail(*late);
  const auto host_fp = timed_fp.cpu();
  for (int64_t j = 0; j < sample; ++j)
    for (int64_t o = 0; o < n_out; ++o)
      if (host_fp[j * n_out + o].item<int64_t>() != checked_fp[o])
        return fail({Outcome::wrong_answer,
                     fmt::format("timed run {} of {}: output '{}' differs from the checked output of the same "
                                 "inputs (every timed run is verified)",
                                 j + 1, sample, spec.outputs[o].name)});
  for (size_t i = 0; i < outputs.size(); ++i)
    if (!outputs[i].guards_intact())
      return fail({Outcome::guard_violation,
                   fmt::format("a timed run wrote outside output '{}'", spec.outputs[i].name)});
  result.timed_runs_checked = sample;
  return result;
}

}  // namespace kbrl
