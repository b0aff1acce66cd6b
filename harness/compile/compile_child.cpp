#include "compile_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>

#include <harness/worker/byte_io.h>
#include <kbrl/check.h>

#include "nvrtc_check.h"

namespace kbrl {
namespace {

using Clock = std::chrono::steady_clock;

// How the child's reply starts: what happened.
enum Reply : uint64_t { kCompiled = 0, kFailed = 1, kApiError = 2, kOutOfMemory = 3 };

std::string fetch_log(nvrtcProgram program) {
  size_t size = 0;
  KBRL_NVRTC_CHECK(nvrtcGetProgramLogSize(program, &size));
  std::string log(size, '\0');
  if (size > 0) KBRL_NVRTC_CHECK(nvrtcGetProgramLog(program, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

/// The child's address space may grow by `limit` bytes beyond its size now.
void limit_memory(int64_t limit) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (limit <= 0) return;
  char buffer[128] = {};
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (n <= 0) return;
  const unsigned long long pages = std::strtoull(buffer, nullptr, 10);
  const auto size = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE));
  rlimit as{size + static_cast<rlim_t>(limit), size + static_cast<rlim_t>(limit)};
  setrlimit(RLIMIT_AS, &as);
}

bool write_all(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// What NVRTC's helpers (ptxas) printed to stdout and stderr, at most 64 KiB of it.
std::string read_captured(int fd) {
  std::string text;
  if (fd < 0 || lseek(fd, 0, SEEK_SET) != 0) return text;
  char buffer[4096];
  while (text.size() < (64u << 10)) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

/// Closes every descriptor above stderr except `a` and `b`, so that the child holds no copy of
/// the parent's other pipes (a worker's, another compile's) while it compiles.
void close_other_fds(int a, int b) {
  const unsigned lo = static_cast<unsigned>(std::min(a, b)), hi = static_cast<unsigned>(std::max(a, b));
  auto close_between = [](unsigned first, unsigned last) {
    if (first > last) return;
    if (close_range(first, last, 0) == 0) return;
    for (unsigned fd = first; fd <= std::min(last, 4095u); ++fd) close(static_cast<int>(fd));
  };
  close_between(3, lo - 1);
  close_between(lo + 1, hi - 1);
  close_between(hi + 1, ~0u);
}

[[noreturn]] void child_main(int fd, const NvrtcJob& job, int64_t memory_limit) {
  // Keep the parent's stdout and stderr clean: what ptxas prints goes into the reply instead.
  const int captured = memfd_create("kbrl-nvrtc-output", MFD_CLOEXEC);
  if (captured >= 0) {
    dup2(captured, STDOUT_FILENO);
    dup2(captured, STDERR_FILENO);
  }
  close_other_fds(fd, captured >= 0 ? captured : fd);
  limit_memory(memory_limit);
  detail::ByteWriter reply;
  try {
    const NvrtcOutput out = run_nvrtc(job);
    reply.u64(out.status == NvrtcOutput::Status::compiled ? kCompiled : kFailed);
    reply.str(out.log);
    reply.str(out.ptx);
    reply.str(out.cubin);
    reply.str(read_captured(captured));
  } catch (const ApiError& e) {
    reply = {};
    reply.u64(kApiError);
    reply.str(e.api());
    reply.str(e.call());
    reply.str(e.what());
  } catch (const std::bad_alloc&) {
    reply = {};
    reply.u64(kOutOfMemory);
  } catch (...) {
    _exit(3);
  }
  _exit(write_all(fd, reply.bytes()) ? 0 : 2);
}

std::string signal_name(int sig) {
  const char* name = sigdescr_np(sig);
  return name ? fmt::format("signal {} ({})", sig, name) : fmt::format("signal {}", sig);
}

/// Kills and reaps the child unless it was reaped already.
struct ChildGuard {
  pid_t pid = -1;
  bool reaped = false;
  ~ChildGuard() {
    if (pid > 0 && !reaped) {
      kill(pid, SIGKILL);
      while (waitpid(pid, nullptr, 0) == -1 && errno == EINTR) {
      }
    }
  }
};

struct FdGuard {
  int fd = -1;
  ~FdGuard() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

NvrtcOutput run_nvrtc(const NvrtcJob& job) {
  NvrtcProgram program(job.source, job.name);
  std::vector<const char*> options;
  for (const auto& o : job.options) options.push_back(o.c_str());
  const nvrtcResult compile_status =
      nvrtcCompileProgram(program.get(), static_cast<int>(options.size()), options.data());
  NvrtcOutput out;
  out.log = fetch_log(program.get());  // before the status: a failed compile keeps its log
  if (compile_status == NVRTC_ERROR_COMPILATION) {
    out.status = NvrtcOutput::Status::failed;
    return out;
  }
  if (compile_status == NVRTC_ERROR_OUT_OF_MEMORY) throw std::bad_alloc();
  KBRL_NVRTC_CHECK(compile_status);
  size_t size = 0;
  KBRL_NVRTC_CHECK(nvrtcGetPTXSize(program.get(), &size));
  out.ptx.resize(size);
  KBRL_NVRTC_CHECK(nvrtcGetPTX(program.get(), out.ptx.data()));
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (job.want_cubin) {
    KBRL_NVRTC_CHECK(nvrtcGetCUBINSize(program.get(), &size));
    out.cubin.resize(size);
    if (size > 0) KBRL_NVRTC_CHECK(nvrtcGetCUBIN(program.get(), out.cubin.data()));
  }
  out.status = NvrtcOutput::Status::compiled;
  return out;
}

NvrtcOutput run_nvrtc_isolated(const NvrtcJob& job, double time_limit_seconds,
                               int64_t memory_limit_bytes) {
  // Fork one child at a time and close the parent's copy of the write end before the next fork,
  // so that no other compile child inherits it and the reader sees EOF when its own child exits.
  static std::mutex fork_mutex;
  FdGuard read_end;
  ChildGuard child;
  {
    std::lock_guard lock(fork_mutex);
    int fds[2];
    KBRL_POSIX_CHECK(pipe2(fds, O_CLOEXEC));
    read_end.fd = fds[0];
    FdGuard write_end{fds[1]};
    const pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      child_main(fds[1], job, memory_limit_bytes);
    }
    KBRL_POSIX_CHECK(pid);
    child.pid = pid;
  }

  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, time_limit_seconds)));
  NvrtcOutput out;
  auto timed_out = [&] {
    out.status = NvrtcOutput::Status::timed_out;
    return out;
  };
  std::string reply;
  char buffer[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return timed_out();  // ~ChildGuard kills and reaps
    pollfd p{read_end.fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    KBRL_POSIX_CHECK(ready);
    if (ready == 0) continue;
    const ssize_t n = read(read_end.fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    KBRL_POSIX_CHECK(n);
    if (n == 0) break;
    reply.append(buffer, static_cast<size_t>(n));
  }
  int status = 0;
  for (;;) {  // EOF came: the child is exiting
    const pid_t done = waitpid(child.pid, &status, WNOHANG);
    if (done == child.pid) break;
    if (done == -1 && errno == EINTR) continue;
    KBRL_POSIX_CHECK(done);
    if (Clock::now() > deadline) return timed_out();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  child.reaped = true;

  detail::ByteReader in(reply);
  const uint64_t kind = in.u64();
  bool kind_out_of_memory = in.ok() && kind == kOutOfMemory;
  if (in.ok() && (kind == kCompiled || kind == kFailed)) {
    out.log = in.str();
    out.ptx = in.str();
    out.cubin = in.str();
    const std::string printed = in.str();
    if (in.at_end()) {
      out.status = kind == kCompiled ? NvrtcOutput::Status::compiled : NvrtcOutput::Status::failed;
      if (!printed.empty()) {
        if (!out.log.empty() && out.log.back() != '\n') out.log += '\n';
        out.log += printed;
      }
      // ptxas reports running out of memory on stderr, and NVRTC as a failure with no log.
      const bool no_memory = printed.find("Memory allocation failure") != std::string::npos ||
                             printed.find("out of memory") != std::string::npos;
      if (kind == kCompiled || !no_memory) return out;
      kind_out_of_memory = true;
    }
  } else if (in.ok() && kind == kApiError) {
    const std::string api = in.str(), call = in.str(), what = in.str();
    if (in.at_end())
      throw ApiError(api, call, fmt::format("in the compile child: {}", what), __FILE__, __LINE__);
  }
  out.status = NvrtcOutput::Status::died;
  const std::string limit =
      memory_limit_bytes > 0 ? fmt::format(" (memory limit {} MiB)", memory_limit_bytes >> 20) : "";
  if (kind_out_of_memory) {
    out.detail = memory_limit_bytes > 0
                     ? fmt::format("compile ran out of memory (memory limit {} MiB)", memory_limit_bytes >> 20)
                     : "compile ran out of memory";
  } else if (WIFSIGNALED(status)) {
    out.detail = fmt::format("compiler process died of {}{}", signal_name(WTERMSIG(status)), limit);
  } else {
    out.detail = fmt::format("compiler process exited with status {} without a result{}",
                             WIFEXITED(status) ? WEXITSTATUS(status) : -1, limit);
  }
  return out;
}

}  // namespace kbrl
