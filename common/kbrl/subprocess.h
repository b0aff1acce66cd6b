#pragma once
// Child processes, one way: an owned file descriptor, a pipe, a spawn that execs (posix_spawn, safe
// from a threaded parent) with chosen descriptors and environment, reading a pipe until EOF or a
// deadline, and reaping. The compile child, the SASS tool and the GPU worker run through this.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kbrl {

/// An owned file descriptor, closed on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset() noexcept;

 private:
  int fd_ = -1;
};

/// A close-on-exec pipe: {read end, write end}. Throws ApiError.
std::pair<UniqueFd, UniqueFd> make_pipe();

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is a path, searched in PATH only with search_path
  /// The child's whole environment ("NAME=value"); nullopt: this process's.
  std::optional<std::vector<std::string>> env;
  /// {parent fd, child fd}: each parent fd appears in the child at the child fd. Child fds 0-2 not
  /// named here read /dev/null and write to /dev/null; every other descriptor is closed.
  std::vector<std::pair<int, int>> fds;
  bool new_process_group = false;
  bool search_path = false;  // posix_spawnp: argv[0] without a '/' is looked up in PATH
};

/// A running child, killed (SIGKILL) and reaped on destruction unless waited for. Move-only.
class ChildProcess {
 public:
  ChildProcess() = default;
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(ChildProcess&& other) noexcept : pid_(std::exchange(other.pid_, -1)) {}
  ChildProcess& operator=(ChildProcess&&) = delete;
  ~ChildProcess();
  pid_t pid() const { return pid_; }
  /// Gives up ownership: the caller kills and reaps the child (a worker's own bookkeeping).
  pid_t release() { return std::exchange(pid_, -1); }
  /// Waits for the child's end; the raw status of waitpid.
  int wait();
  /// The raw status if the child has ended by `deadline`; nullopt (still running) otherwise.
  std::optional<int> wait_until(std::chrono::steady_clock::time_point deadline);
  void kill() noexcept;

 private:
  pid_t pid_ = -1;
};

/// Starts spec.argv. Throws ApiError when the spawn or the exec fails.
ChildProcess spawn(const SpawnSpec& spec);

/// Reads `fd` until EOF, `max_bytes` (the rest is drained and dropped) or `deadline`. Returns
/// nullopt when the deadline came first.
std::optional<std::string> read_until_eof(int fd, std::chrono::steady_clock::time_point deadline,
                                          size_t max_bytes);

/// Writes all of `bytes` (EINTR retried); false on any error (a closed reader, EPIPE).
bool write_all(int fd, std::string_view bytes);

/// "signal 9 (Killed)" or "exit status 3": how a raw wait status ended.
std::string describe_wait_status(int status);

}  // namespace kbrl
