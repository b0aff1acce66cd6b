#include "worker_process.h"

#include <fcntl.h>
#if __has_include(<linux/close_range.h>)
#include <linux/close_range.h>  // CLOSE_RANGE_CLOEXEC
#endif
#include <sys/syscall.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <kbrl/check.h>
#include <kbrl/error.h>

#include "worker.h"

namespace kbrl::detail {
namespace {

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  KBRL_POSIX_CHECK(flags);
  KBRL_POSIX_CHECK(::fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}

// Runs in the forked child: async-signal-safe calls only. Moves the pipes onto the fixed fds
// (through fds >= 10 so no target is overwritten early), marks every other descriptor close-on-exec
// (the parent's sockets, files and pipes not made with O_CLOEXEC must not live on in the worker: a
// client's connection kbrl serve closed stayed open while a worker held it), then execs argv; on
// failure sends errno.
[[noreturn]] void exec_child(int request, int reply, int output, int exec_error,
                             char* const* argv) {
  ::setpgid(0, 0);
  const int in = ::fcntl(request, F_DUPFD_CLOEXEC, 10);
  const int out = ::fcntl(reply, F_DUPFD_CLOEXEC, 10);
  const int err = ::fcntl(output, F_DUPFD_CLOEXEC, 10);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int null_high = null_fd < 0 ? -1 : ::fcntl(null_fd, F_DUPFD_CLOEXEC, 10);
  if (in >= 0 && out >= 0 && err >= 0 && null_high >= 0 && ::dup2(null_high, 0) == 0 &&
      ::dup2(err, 1) == 1 && ::dup2(err, 2) == 2 && ::dup2(in, kWorkerRequestFd) >= 0 &&
      ::dup2(out, kWorkerReplyFd) >= 0) {
    static_assert(kWorkerRequestFd == 3 && kWorkerReplyFd == 4, "the descriptors kept open are 0-4");
    bool marked = false;
#if defined(SYS_close_range) && defined(CLOSE_RANGE_CLOEXEC)
    marked = ::syscall(SYS_close_range, 5u, ~0u, CLOSE_RANGE_CLOEXEC) == 0;
#endif
    if (!marked)  // Linux before 5.11: one at a time
      for (int fd = 5; fd < 65536; ++fd) ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    ::signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(argv[0], argv);
  }
  const int code = errno;
  [[maybe_unused]] ssize_t ignored = ::write(exec_error, &code, sizeof code);
  ::_exit(127);
}

}  // namespace

WorkerProcess spawn_worker_process(const std::vector<std::string>& argv) {
  KBRL_CHECK_INPUT(!argv.empty(), "a worker needs a program to run (argv is empty)");
  auto [request_read, request_write] = make_pipe();
  auto [reply_read, reply_write] = make_pipe();
  auto [output_read, output_write] = make_pipe();
  auto [error_read, error_write] = make_pipe();
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  const pid_t child = ::fork();
  KBRL_POSIX_CHECK(child);
  if (child == 0)
    exec_child(request_read.get(), reply_write.get(), output_write.get(), error_write.get(),
               args.data());
  ::setpgid(child, child);  // the child does it too; whichever comes first wins
  request_read.reset();
  reply_write.reset();
  output_write.reset();
  error_write.reset();
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(error_read.get(), &exec_errno, sizeof exec_errno);
  } while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    ::waitpid(child, nullptr, 0);
    throw ApiError("OS", fmt::format("execvp({})", argv[0]),
                   fmt::format("{} (errno {})", std::strerror(exec_errno), exec_errno), __FILE__,
                   __LINE__);
  }
  set_nonblocking(request_write.get());
  set_nonblocking(reply_read.get());
  set_nonblocking(output_read.get());
  return {child, std::move(request_write), std::move(reply_read), std::move(output_read)};
}

void ignore_sigpipe() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) != 0) return;
    if ((old.sa_flags & SA_SIGINFO) == 0 && old.sa_handler == SIG_DFL) {
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      sigemptyset(&ignore.sa_mask);
      ::sigaction(SIGPIPE, &ignore, nullptr);
    }
  });
}

void OutputTail::feed(std::string_view text) {
  for (;;) {
    const size_t newline = text.find('\n');
    const std::string_view piece = text.substr(0, newline);
    const size_t room = kMaxLineChars - std::min(kMaxLineChars, partial_.size());
    partial_.append(piece.substr(0, room));
    if (piece.size() > room) cut_ = true;
    if (newline == std::string_view::npos) return;
    push();
    text.remove_prefix(newline + 1);
  }
}

void OutputTail::flush() {
  if (!partial_.empty() || cut_) push();
}

void OutputTail::push() {
  lines_.push_back(cut_ ? partial_ + " [...]" : partial_);
  reset_partial();
  if (lines_.size() > max_lines_)
    lines_.erase(lines_.begin(), lines_.end() - static_cast<ptrdiff_t>(max_lines_));
}

std::string ProcessEnd::describe(pid_t pid) const {
  if (signal != 0) return fmt::format("worker {} killed by {}", pid, describe_signal(signal));
  if (exit_code >= 0) return fmt::format("worker {} exited with status {}", pid, exit_code);
  return fmt::format("worker {} did not end in time and was left behind", pid);
}

}  // namespace kbrl::detail
