#include "subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "check.h"

extern char** environ;

namespace kbrl {

using Clock = std::chrono::steady_clock;

void UniqueFd::reset() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  KBRL_POSIX_CHECK(::pipe2(fds, O_CLOEXEC));
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

ChildProcess::~ChildProcess() { kill(); }

void ChildProcess::kill() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) == -1 && errno == EINTR) {
  }
  pid_ = -1;
}

int ChildProcess::wait() {
  int status = 0;
  while (::waitpid(pid_, &status, 0) == -1) {
    if (errno != EINTR) KBRL_POSIX_CHECK(-1);
  }
  pid_ = -1;
  return status;
}

std::optional<int> ChildProcess::wait_until(Clock::time_point deadline) {
  for (auto pause = std::chrono::microseconds(50);; pause = std::min(pause * 2, std::chrono::microseconds(5000))) {
    int status = 0;
    const pid_t done = ::waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      pid_ = -1;
      return status;
    }
    if (done == -1 && errno != EINTR) KBRL_POSIX_CHECK(-1);
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
  }
}

ChildProcess spawn(const SpawnSpec& spec) {
  KBRL_CHECK_INPUT(!spec.argv.empty(), "spawn: argv is empty");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  struct Cleanup {
    posix_spawn_file_actions_t* a;
    posix_spawnattr_t* b;
    ~Cleanup() {
      posix_spawn_file_actions_destroy(a);
      posix_spawnattr_destroy(b);
    }
  } cleanup{&actions, &attributes};
  // Each parent fd first onto a high fd, then onto its child fd, so no target is overwritten early
  // (the high copies lose close-on-exec only where dup2 puts them).
  int highest = 2;
  for (const auto& [from, to] : spec.fds) highest = std::max(highest, to);
  const int staging = std::max(highest + 1, 64);
  for (size_t i = 0; i < spec.fds.size(); ++i)
    posix_spawn_file_actions_adddup2(&actions, spec.fds[i].first, staging + static_cast<int>(i));
  for (int fd = 0; fd <= 2; ++fd) {
    const bool named = std::any_of(spec.fds.begin(), spec.fds.end(), [&](auto& p) { return p.second == fd; });
    if (!named) posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  for (size_t i = 0; i < spec.fds.size(); ++i)
    posix_spawn_file_actions_adddup2(&actions, staging + static_cast<int>(i), spec.fds[i].second);
  posix_spawn_file_actions_addclosefrom_np(&actions, highest + 1);

  sigset_t none, all_default;
  sigemptyset(&none);
  sigemptyset(&all_default);
  sigaddset(&all_default, SIGPIPE);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all_default);
  if (spec.new_process_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attributes, 0);
  }
  posix_spawnattr_setflags(&attributes, flags);

  std::vector<char*> args, env;
  for (const auto& a : spec.argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (spec.env)
    for (const auto& e : *spec.env) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  pid_t pid = -1;
  char* const* envp = spec.env ? env.data() : environ;
  const int rc = spec.search_path ? posix_spawnp(&pid, args[0], &actions, &attributes, args.data(), envp)
                                  : posix_spawn(&pid, args[0], &actions, &attributes, args.data(), envp);
  if (rc != 0)
    throw ApiError("OS", fmt::format("posix_spawn({})", spec.argv[0]),
                   fmt::format("{} (errno {})", std::strerror(rc), rc), __FILE__, __LINE__);
  return ChildProcess(pid);
}

std::optional<std::string> read_until_eof(int fd, Clock::time_point deadline, size_t max_bytes) {
  std::string out;
  char buffer[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    KBRL_POSIX_CHECK(ready);
    if (ready == 0) continue;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    KBRL_POSIX_CHECK(n);
    if (n == 0) return out;
    if (out.size() < max_bytes) out.append(buffer, std::min(static_cast<size_t>(n), max_bytes - out.size()));
  }
}

bool write_all(int fd, std::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = sigdescr_np(sig);
    return name ? fmt::format("signal {} ({})", sig, name) : fmt::format("signal {}", sig);
  }
  return fmt::format("exit status {}", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

}  // namespace kbrl
