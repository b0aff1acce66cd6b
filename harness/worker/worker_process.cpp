#include "worker_process.h"

#include <fcntl.h>
#include <signal.h>

#include <algorithm>
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

}  // namespace

WorkerProcess spawn_worker_process(const std::vector<std::string>& argv) {
  KBRL_CHECK_INPUT(!argv.empty(), "a worker needs a program to run (argv is empty)");
  auto [request_read, request_write] = make_pipe();
  auto [reply_read, reply_write] = make_pipe();
  auto [output_read, output_write] = make_pipe();
  SpawnSpec spec;
  spec.argv = argv;
  spec.search_path = true;
  spec.new_process_group = true;  // the worker and whatever it starts are killed as one group
  spec.fds = {{request_read.get(), kWorkerRequestFd}, {reply_write.get(), kWorkerReplyFd},
              {output_write.get(), 1}, {output_write.get(), 2}};
  static_assert(kWorkerRequestFd == 3 && kWorkerReplyFd == 4, "the descriptors kept open are 0-4");
  ChildProcess child = spawn(spec);  // throws ApiError when the exec fails
  set_nonblocking(request_write.get());
  set_nonblocking(reply_read.get());
  set_nonblocking(output_read.get());
  return {child.release(), std::move(request_write), std::move(reply_read), std::move(output_read)};
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
