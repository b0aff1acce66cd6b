#pragma once
// Internal to worker.cpp: the OS side of a worker process. An owned file descriptor, the
// start of a worker (kbrl::spawn) with its pipes on the fixed fds, the tail of its output, how it ended.
#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <kbrl/subprocess.h>

namespace kbrl::detail {

using kbrl::UniqueFd;  // <kbrl/subprocess.h>

/// A started worker: its pid (also its process group id) and the parent's ends of its pipes, all
/// non-blocking and close-on-exec.
struct WorkerProcess {
  pid_t pid = -1;
  UniqueFd request;  // the parent writes requests here
  UniqueFd reply;    // and reads replies here
  UniqueFd output;   // and the worker's stdout and stderr here
};

/// Starts argv (argv[0] searched in PATH) through kbrl::spawn (posix_spawn: safe from a threaded
/// parent; every other descriptor closed) in a new process group, with the request pipe on
/// kWorkerRequestFd, the reply pipe on kWorkerReplyFd, stdin from /dev/null and stdout and stderr
/// into one pipe. Throws ApiError when a pipe or the exec fails.
WorkerProcess spawn_worker_process(const std::vector<std::string>& argv);

/// Makes this process ignore SIGPIPE, once, if it had the default disposition.
void ignore_sigpipe();

/// The last lines of an output stream, each cut at a maximum length.
class OutputTail {
 public:
  static constexpr size_t kMaxLineChars = 2000;

  explicit OutputTail(size_t max_lines = 20) : max_lines_(max_lines < 1 ? 1 : max_lines) {}
  void feed(std::string_view text);
  void flush();  // ends a pending unterminated line
  void clear() { lines_.clear(); }
  /// Forgets a pending partial line (a new process's output starts afresh).
  void reset_partial() {
    partial_.clear();
    cut_ = false;
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  void push();
  size_t max_lines_;
  std::string partial_;
  bool cut_ = false;
  std::vector<std::string> lines_;
};

/// How a worker process ended: an exit status, a signal, or neither (not reaped in time).
struct ProcessEnd {
  int exit_code = -1;
  int signal = 0;
  std::string describe(pid_t pid) const;
};

}  // namespace kbrl::detail
