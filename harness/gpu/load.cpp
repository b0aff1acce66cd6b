// The load step: the candidate's module and functions, its buffers, its arguments and its launches.
#include <algorithm>
#include <cstring>

#include "session_impl.h"

namespace kbrl::gpu {
namespace {

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

/// The run's fingerprint key for this task; inputs, parameters and outputs each use their own.
uint64_t fingerprint_key(const GpuJob& job, const TaskSpec& spec) {
  return trial_seed(job.check.secret, spec.id, 0x4B42524C);
}

}  // namespace

std::vector<double> scalars_of(const TaskSpec& spec) {
  std::vector<double> v;
  for (const auto& s : spec.scalars) v.push_back(s.value);
  return v;
}

JobState::JobState(const GpuJob& job, const TaskSpec& spec, ReferenceModel& model)
    : job(job),
      spec(spec),
      model(model),
      params(model.parameters()),
      scalars(scalars_of(spec)),
      input_key(fingerprint_key(job, spec) ^ 0x1),
      param_key(fingerprint_key(job, spec) ^ 0x2),
      output_key(fingerprint_key(job, spec) ^ 0x3) {
  bindings.parameters = &params;
  bindings.scalars = &spec.scalars;
}

JobState::~JobState() {
  try {
    for (auto& o : outputs) o.poison();
  } catch (const c10::Error&) {  // a context the candidate broke: the worker is replaced anyway
  }
}

std::optional<CandidateFault> load_candidate(const GpuJob& job, LoadedCandidate& loaded) {
  const auto& api = cuda::driver();
  if (CUresult r = api.module_load_data_ex(loaded.module.out(), job.cubin.data(), 0, nullptr, nullptr);
      r != CUDA_SUCCESS)
    return CandidateFault{Outcome::load_error, "module load failed: " + cuda::describe(r), cuda::is_sticky(r)};
  if (job.candidate.launches.empty())
    return CandidateFault{Outcome::launch_error, "the launch plan is empty", false};
  for (const auto& launch : job.candidate.launches) {
    CUfunction fn = nullptr;
    if (CUresult r = api.module_get_function(&fn, loaded.module.get(), launch.kernel.c_str());
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

std::optional<CandidateFault> bind_buffers(const torch::Device& device, JobState& state) {
  // Scratch buffers, as declared by the plan.
  int64_t scratch_total = 0;
  for (const auto& sb : state.job.candidate.scratch) {
    scratch_total += std::max<int64_t>(sb.bytes, 0);
    if (sb.bytes <= 0 || scratch_total > plan_limits::kMaxScratchBytes)
      return CandidateFault{Outcome::launch_error,
                            fmt::format("scratch '{}' of {} bytes: each must be positive and all together at most {} bytes",
                                        sb.name, sb.bytes, plan_limits::kMaxScratchBytes)};
    state.bindings.scratch.push_back(torch::empty({sb.bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device)));
  }
  for (size_t i = 0; i < state.spec.outputs.size(); ++i)  // each output's guards keyed by the job's secret key
    state.outputs.emplace_back(state.spec.outputs[i], device, derive_seed(state.output_key, {static_cast<int64_t>(i)}));
  for (auto& o : state.outputs) state.bindings.outputs.push_back(o.tensor);
  for (auto& o : state.outputs) state.raw_outputs.push_back(o.raw());
  return std::nullopt;
}

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

}  // namespace kbrl::gpu
