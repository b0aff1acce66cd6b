#pragma once
// The generic check macro every API family builds its own from (one check macro per API family,
// each built from this one). A family macro is one line, for example
//   #define KBRL_NVRTC_CHECK(call) KBRL_API_CHECK("NVRTC", call, NVRTC_SUCCESS, nvrtcGetErrorString)
//   #define KBRL_CU_CHECK(call)    KBRL_API_CHECK("CUDA driver", call, CUDA_SUCCESS, describe_cu)
// A failure throws kbrl::ApiError carrying the API, the call's text, the status, file and line.
#include <cerrno>
#include <cstring>
#include <string>
#include <type_traits>

#include <fmt/format.h>

#include "error.h"

namespace kbrl::detail {

/// "<description> (status <n>)" for a status value and a function that describes it (returning a
/// `const char*`, possibly null, or a std::string).
template <typename Status, typename Describe>
std::string describe_status(Status status, Describe describe) {
  const auto text = describe(status);
  if constexpr (std::is_pointer_v<decltype(text)>) {
    return fmt::format("{} (status {})", text ? text : "unknown status", static_cast<long long>(status));
  } else {
    return fmt::format("{} (status {})", text, static_cast<long long>(status));
  }
}

}  // namespace kbrl::detail

/// Evaluates `call` once; throws ApiError unless it returned `success`. `describe(status)` gives
/// the status's text (a `const char*`, for example nvrtcGetErrorString, or a std::string).
#define KBRL_API_CHECK(api, call, success, describe)                                          \
  do {                                                                                        \
    const auto kbrl_api_status_ = (call);                                                     \
    if (kbrl_api_status_ != (success))                                                        \
      throw ::kbrl::ApiError((api), #call,                                                    \
                             ::kbrl::detail::describe_status(kbrl_api_status_, (describe)),   \
                             __FILE__, __LINE__);                                             \
  } while (0)

/// For POSIX calls that return -1 and set errno: throws ApiError("OS", ...) with strerror(errno).
#define KBRL_POSIX_CHECK(call)                                                                \
  do {                                                                                        \
    if ((call) == -1) {                                                                       \
      const int kbrl_errno_ = errno;                                                          \
      throw ::kbrl::ApiError("OS", #call,                                                     \
                             ::fmt::format("{} (errno {})", ::std::strerror(kbrl_errno_),     \
                                           kbrl_errno_),                                      \
                             __FILE__, __LINE__);                                             \
    }                                                                                         \
  } while (0)
