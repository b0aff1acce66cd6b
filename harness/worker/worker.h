#pragma once
// Process isolation (docs/design.md, "Isolation"): the parent feeds jobs to a worker process over two pipes
// and survives whatever the worker does. A job that hangs is killed by a per-call watchdog; a worker
// that crashes, hangs or talks nonsense is killed and started afresh on the next call.
//
// Wire protocol, both directions: a frame is a 4-byte big-endian payload length followed by that
// many bytes of UTF-8 JSON (at most kMaxFrameBytes). The worker reads requests on fd
// kWorkerRequestFd and writes replies on fd kWorkerReplyFd; its stdin is /dev/null and its stdout
// and stderr go to one pipe whose last lines the parent keeps (device printf lands there too).
// The worker first sends a hello frame {"kbrl_worker": "ready", "pid": <pid>} once it has
// initialized (so start-up, e.g. CUDA context creation, is not charged to the first job), then
// one reply frame per request, in order.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <kbrl/enum_names.h>

namespace kbrl {

inline constexpr int kWorkerRequestFd = 3;
inline constexpr int kWorkerReplyFd = 4;
inline constexpr size_t kMaxFrameBytes = size_t{64} << 20;
/// A reply key the handler sets to true to have the worker exit after this reply (a sticky CUDA
/// error poisoned its context); the parent removes it from the reply and restarts the worker
/// lazily on the next call.
inline constexpr std::string_view kRestartWorkerKey = "restart_worker";
/// A reply key serve() sets, with the exception's message, when the handler throws.
inline constexpr std::string_view kWorkerErrorKey = "worker_error";

enum class CallStatus {
  ok,              // a reply came back
  timeout,         // no reply within the timeout; the worker was killed
  crashed,         // the worker died (signal, exit, closed its pipes) before replying
  protocol_error,  // the worker sent something that is not a frame of JSON; it was killed
  handler_error,   // the handler threw (reply holds kWorkerErrorKey); the worker lives on
};
template <>
struct EnumNames<CallStatus> {
  static constexpr std::string_view what = "call status";
  static constexpr EnumEntry<CallStatus> entries[] = {{CallStatus::ok, "ok"},
                                                      {CallStatus::timeout, "timeout"},
                                                      {CallStatus::crashed, "crashed"},
                                                      {CallStatus::protocol_error, "protocol_error"},
                                                      {CallStatus::handler_error, "handler_error"}};
};
std::string_view to_string(CallStatus);

struct CallResult {
  CallStatus status = CallStatus::ok;
  nlohmann::json reply;    // the handler's reply (ok, handler_error); null otherwise
  std::string detail;      // for failures: what happened, exit status or signal, last stderr lines
  int exit_code = -1;      // the worker's exit status when it exited by itself
  int term_signal = 0;     // the signal that ended it (SIGKILL after a timeout), else 0
  bool restart_requested = false;  // the handler set kRestartWorkerKey
  bool started_worker = false;     // this call started a fresh worker process
  double seconds = 0.0;            // wall time of the call, a start-up included
};

struct WorkerOptions {
  std::vector<std::string> argv;  // the worker program and its arguments (argv[0] searched in PATH)
  std::chrono::milliseconds start_timeout{60'000};  // until the hello frame
  std::chrono::milliseconds exit_grace{1'000};      // for a worker asked to exit, before SIGKILL
  size_t stderr_tail_lines = 20;                    // kept for `detail`
};

/// The parent's handle on one worker process (one per GPU). Not thread-safe: one call at a time.
/// Move-only; the destructor closes the request pipe, gives the worker `exit_grace` to exit, then
/// kills its process group. Constructing a Worker makes this process ignore SIGPIPE (if it had the
/// default disposition), so writing to a dead worker is an error, not death.
class Worker {
 public:
  explicit Worker(WorkerOptions options);
  ~Worker();
  Worker(Worker&&) noexcept;
  Worker& operator=(Worker&&) noexcept;

  /// Sends one request and waits up to `timeout` for the reply; starts the worker first when none
  /// is running (that start-up is bounded by start_timeout, not by `timeout`). Every failure of the
  /// worker is a status, never an exception; after timeout, crashed or protocol_error the worker
  /// is gone and the next call starts a fresh one. Throws ApiError only when the worker cannot be
  /// started at all (pipes, or the spawn of argv[0] fail).
  CallResult call(const nlohmann::json& request, std::chrono::milliseconds timeout);

  /// Starts the worker now if none is running and waits for its hello (status ok when ready).
  CallResult start();

  /// Stops the worker (close, grace, SIGKILL to its process group); a no-op when none runs.
  void stop();

  bool running() const;
  pid_t pid() const;                                // -1 when none runs
  int64_t starts() const;                           // worker processes started so far
  const std::vector<std::string>& stderr_tail() const;  // the last lines since the last call began

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The worker side: sends the hello frame, then for each request frame on `in_fd` calls
/// `handler` and writes its reply on `out_fd`. A handler's exception becomes a reply
/// {kWorkerErrorKey: message}. Returns 0 when the parent closes the request pipe or after a reply
/// with kRestartWorkerKey true, and 1 on a broken frame or a failed read or write (the reason goes
/// to stderr). Ignores SIGPIPE. A worker's main is typically
/// `return kbrl::serve(kbrl::kWorkerRequestFd, kbrl::kWorkerReplyFd, handler);`
int serve(int in_fd, int out_fd,
          const std::function<nlohmann::json(const nlohmann::json&)>& handler);

/// One frame: the 4-byte big-endian length, then the JSON text (invalid UTF-8 replaced by U+FFFD).
/// Throws InputError when the text exceeds kMaxFrameBytes.
std::string encode_frame(const nlohmann::json& message);
/// The payload length a frame's 4-byte header announces.
uint32_t decode_frame_length(const unsigned char* header);

/// "SIGSEGV (Segmentation fault)" and the like; "signal N" for one without a name.
std::string describe_signal(int signal);

}  // namespace kbrl
