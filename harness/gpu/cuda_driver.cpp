#include "cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

namespace kbrl::cuda {
namespace {

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

struct Loaded {
  DriverStatus status;
  DriverApi api;
};

template <typename Fn>
bool resolve(GetProcAddress get, const char* name, Fn& fn, std::string& missing) {
  void* ptr = nullptr;
  CUdriverProcAddressQueryResult found{};
  if (get(name, &ptr, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || !ptr) {
    missing += missing.empty() ? name : std::string(", ") + name;
    return false;
  }
  fn = reinterpret_cast<Fn>(ptr);
  return true;
}

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    out.status.reason = "libcuda.so.1 not found (no NVIDIA driver on this machine)";
    return out;
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get) {
    out.status.reason = "the NVIDIA driver is too old: cuGetProcAddress_v2 is missing";
    return out;
  }
  DriverApi& a = out.api;
  std::string missing;
  resolve(get, "cuInit", a.init, missing);
  resolve(get, "cuDriverGetVersion", a.driver_get_version, missing);
  resolve(get, "cuGetErrorName", a.get_error_name, missing);
  resolve(get, "cuGetErrorString", a.get_error_string, missing);
  resolve(get, "cuDeviceGetCount", a.device_get_count, missing);
  resolve(get, "cuDeviceGet", a.device_get, missing);
  resolve(get, "cuDeviceGetName", a.device_get_name, missing);
  resolve(get, "cuDeviceGetAttribute", a.device_get_attribute, missing);
  resolve(get, "cuDevicePrimaryCtxRetain", a.primary_ctx_retain, missing);
  resolve(get, "cuCtxSetCurrent", a.ctx_set_current, missing);
  resolve(get, "cuCtxSynchronize", a.ctx_synchronize, missing);
  resolve(get, "cuModuleLoadDataEx", a.module_load_data_ex, missing);
  resolve(get, "cuModuleUnload", a.module_unload, missing);
  resolve(get, "cuModuleGetFunction", a.module_get_function, missing);
  resolve(get, "cuFuncSetAttribute", a.func_set_attribute, missing);
  resolve(get, "cuFuncGetAttribute", a.func_get_attribute, missing);
  resolve(get, "cuLaunchKernel", a.launch_kernel, missing);
  resolve(get, "cuStreamSynchronize", a.stream_synchronize, missing);
  resolve(get, "cuEventCreate", a.event_create, missing);
  resolve(get, "cuEventDestroy", a.event_destroy, missing);
  resolve(get, "cuEventRecord", a.event_record, missing);
  resolve(get, "cuEventSynchronize", a.event_synchronize, missing);
  resolve(get, "cuEventElapsedTime", a.event_elapsed_time, missing);
  if (!missing.empty()) {
    out.status.reason = "the NVIDIA driver lacks " + missing;
    return out;
  }
  if (CUresult r = a.init(0); r != CUDA_SUCCESS) {
    const char* name = nullptr;
    a.get_error_name(r, &name);
    out.status.reason = fmt::format("cuInit failed: {} (no usable GPU)", name ? name : "?");
    return out;
  }
  a.device_get_count(&out.status.device_count);
  if (out.status.device_count == 0) {
    out.status.reason = "the NVIDIA driver sees no GPU";
    return out;
  }
  out.status.available = true;
  return out;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

const DriverStatus& driver_status() { return loaded().status; }

const DriverApi& driver() {
  const auto& l = loaded();
  if (!l.status.available) throw Error("no GPU: " + l.status.reason);
  return l.api;
}

std::string describe(CUresult result) {
  const auto& l = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (l.api.get_error_name) l.api.get_error_name(result, &name);
  if (l.api.get_error_string) l.api.get_error_string(result, &text);
  return fmt::format("{}: {}", name ? name : fmt::format("CUresult {}", static_cast<int>(result)),
                     text ? text : "unknown error");
}

bool is_sticky(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return true;
    default:
      return false;
  }
}

}  // namespace kbrl::cuda
