#pragma once
// kbrl's error taxonomy. Two channels (see docs/design.md): a candidate's failure is an Outcome in its
// record, never an exception; a harness fault or bad user input is one of these exceptions.
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join lives here since fmt 11 (libtorch 2.x bundles fmt 12)

namespace kbrl {

/// Base of every kbrl exception: a message that already carries its context.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad input from a user or a config: unknown task id, malformed option, unreadable file.
/// The CLI prints the message and exits with status 2.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A broken invariant inside kbrl itself.
class InternalError : public Error {
 public:
  using Error::Error;
};

/// A failure of an external API (CUDA driver, NVRTC, the OS) that is not a candidate's fault.
class ApiError : public Error {
 public:
  ApiError(const std::string& api, const std::string& call, const std::string& detail,
           const char* file, int line)
      : Error(fmt::format("{} call `{}` failed: {} ({}:{})", api, call, detail, file, line)),
        api_(api),
        call_(call) {}
  const std::string& api() const { return api_; }
  const std::string& call() const { return call_; }

 private:
  std::string api_;
  std::string call_;
};

}  // namespace kbrl

/// Throws InputError with a formatted message unless `cond` holds.
#define KBRL_CHECK_INPUT(cond, ...)                                  \
  do {                                                               \
    if (!(cond)) throw ::kbrl::InputError(::fmt::format(__VA_ARGS__)); \
  } while (0)

/// Throws InternalError naming the failed condition, file and line.
#define KBRL_ASSERT(cond, ...)                                                          \
  do {                                                                                  \
    if (!(cond))                                                                        \
      throw ::kbrl::InternalError(::fmt::format("internal error: {} ({}:{}): {}", #cond, \
                                                __FILE__, __LINE__,                     \
                                                ::fmt::format(__VA_ARGS__)));           \
  } while (0)
