#pragma once
// The CUDA driver API, loaded at run time (dlopen of libcuda.so.1), so that every kbrl binary starts on
// a machine without a GPU or driver. GPU paths ask `driver()` and get a clear error when it is absent.
#include <cuda.h>

#include <string>

#include <kbrl/check.h>
#include <kbrl/error.h>

namespace kbrl::cuda {

/// Entry points resolved through cuGetProcAddress for the toolkit's CUDA_VERSION.
struct DriverApi {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuCtxSynchronize) ctx_synchronize = nullptr;
  decltype(&::cuModuleLoadDataEx) module_load_data_ex = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuFuncGetAttribute) func_get_attribute = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventDestroy) event_destroy = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime) event_elapsed_time = nullptr;
};

/// Why the driver is unusable, or empty when it is usable.
struct DriverStatus {
  bool available = false;
  std::string reason;  // e.g. "libcuda.so.1 not found (no NVIDIA driver on this machine)"
  int device_count = 0;
};

/// Loads the driver once (thread-safe) and reports whether a GPU can be used. Never throws.
const DriverStatus& driver_status();

/// The driver API table; throws kbrl::Error with driver_status().reason when there is no usable GPU.
const DriverApi& driver();

/// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".
std::string describe(CUresult result);

/// Errors that leave the context unusable: the process must be restarted.
bool is_sticky(CUresult result);

}  // namespace kbrl::cuda

/// Throws kbrl::ApiError naming the call, file and line when a driver call fails.
#define KBRL_CU_CHECK(call) KBRL_API_CHECK("CUDA driver", call, CUDA_SUCCESS, ::kbrl::cuda::describe)
