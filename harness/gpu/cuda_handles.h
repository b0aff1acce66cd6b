#pragma once
// Owners of CUDA driver handles: move-only, released by a noexcept destructor. Driver
// API only (no libtorch), so the always-built comparison kernel uses them as well as the session.
// A failed release is ignored: it happens after a sticky error, when the context is already lost and
// the worker process is about to be replaced, and a destructor must not throw.
#include <cuda.h>

#include <utility>

#include "cuda_driver.h"

namespace kbrl::cuda {

/// Owns one handle of the kind `Kind` describes (its type and how to release it).
template <typename Kind>
class UniqueHandle {
 public:
  using Handle = typename Kind::Handle;

  UniqueHandle() noexcept = default;
  explicit UniqueHandle(Handle handle) noexcept : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() { reset(); }

  Handle get() const noexcept { return handle_; }
  explicit operator bool() const noexcept { return handle_ != nullptr; }
  /// Releases the handle held, if any, and returns where a driver call may write a new one
  /// (`api.module_load_data_ex(module.out(), ...)`).
  Handle* out() noexcept {
    reset();
    return &handle_;
  }
  void reset() noexcept {
    if (handle_) Kind::release(std::exchange(handle_, nullptr));
  }

 private:
  Handle handle_ = nullptr;
};

namespace handle_kind {
struct Module {
  using Handle = CUmodule;
  static void release(CUmodule module) noexcept {
    try {
      driver().module_unload(module);
    } catch (...) {  // no driver: nothing was ever loaded (unreachable while a handle exists)
    }
  }
};
struct Event {
  using Handle = CUevent;
  static void release(CUevent event) noexcept {
    try {
      driver().event_destroy(event);
    } catch (...) {
    }
  }
};
}  // namespace handle_kind

/// A loaded module (cuModuleLoadDataEx); unloaded on destruction.
using Module = UniqueHandle<handle_kind::Module>;
/// An event (cuEventCreate); destroyed on destruction.
using Event = UniqueHandle<handle_kind::Event>;

/// Creates an event with CU_EVENT_DEFAULT in the current context; throws ApiError.
inline Event create_event() {
  Event event;
  KBRL_CU_CHECK(driver().event_create(event.out(), CU_EVENT_DEFAULT));
  return event;
}

}  // namespace kbrl::cuda
