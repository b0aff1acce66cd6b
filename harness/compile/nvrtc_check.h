#pragma once
// NVRTC basics: the one check macro for nvrtcResult, an RAII program handle, and the version.
#include <string>
#include <utility>

#include <nvrtc.h>

#include <kbrl/check.h>

/// Throws kbrl::ApiError("NVRTC", call, status text, file, line) unless `call` returns NVRTC_SUCCESS.
#define KBRL_NVRTC_CHECK(call) KBRL_API_CHECK("NVRTC", call, NVRTC_SUCCESS, nvrtcGetErrorString)

namespace kbrl {

/// Owns an nvrtcProgram (move-only; the destructor never throws).
class NvrtcProgram {
 public:
  /// nvrtcCreateProgram with no headers; throws ApiError.
  NvrtcProgram(const std::string& source, const std::string& name) {
    KBRL_NVRTC_CHECK(nvrtcCreateProgram(&program_, source.c_str(), name.c_str(), 0, nullptr, nullptr));
  }
  NvrtcProgram(NvrtcProgram&& other) noexcept : program_(std::exchange(other.program_, nullptr)) {}
  NvrtcProgram& operator=(NvrtcProgram&& other) noexcept {
    std::swap(program_, other.program_);
    return *this;
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  ~NvrtcProgram() {
    if (program_) nvrtcDestroyProgram(&program_);  // a failure here leaks, nothing worse
  }
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

/// "13.0": NVRTC's major.minor (part of every compile cache key).
inline std::string nvrtc_version() {
  int major = 0, minor = 0;
  KBRL_NVRTC_CHECK(nvrtcVersion(&major, &minor));
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace kbrl
