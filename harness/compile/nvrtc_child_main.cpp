// kbrl-nvrtc: one NVRTC compile, confined. Started by run_nvrtc_isolated (compile_child.cpp) with an
// empty environment: reads its job on stdin, dies with its parent, limits its CPU time and address
// space, enters the compile sandbox (it can read the CUDA headers and NVRTC's own library folder,
// nothing else; no network), compiles, and writes the reply on fd 3. Not meant to be run by hand.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include <nvrtc.h>

#include <kbrl/error.h>
#include <kbrl/subprocess.h>

#include "compile_child.h"
#include "nvrtc_wire.h"

namespace {

using namespace kbrl;
using namespace kbrl::nvrtc_wire;

/// The address space may grow by `limit` bytes beyond its size now (after the dynamic loader).
void limit_resources(int64_t memory_limit, int64_t cpu_seconds) {
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (cpu_seconds > 0) {
    rlimit cpu{static_cast<rlim_t>(cpu_seconds), static_cast<rlim_t>(cpu_seconds)};
    setrlimit(RLIMIT_CPU, &cpu);
  }
  if (memory_limit <= 0) return;
  char buffer[128] = {};
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  const ssize_t n = read(fd, buffer, sizeof buffer - 1);
  close(fd);
  if (n <= 0) return;
  const auto pages = static_cast<rlim_t>(std::strtoull(buffer, nullptr, 10));
  const rlim_t size = pages * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + static_cast<rlim_t>(memory_limit);
  rlimit as{size, size};
  setrlimit(RLIMIT_AS, &as);
}

/// The folder of the NVRTC library this process uses (its builtins library is loaded from there).
std::string nvrtc_library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) == 0 || !info.dli_fname) return {};
  std::error_code ec;
  const auto lib = std::filesystem::canonical(info.dli_fname, ec);
  return ec ? std::string() : lib.parent_path().string();
}

/// Loads NVRTC's builtins library from `dir` now: NVRTC opens it by name at its first compile, which
/// reads /etc/ld.so.cache, and the sandbox lets it read nothing of the kind.
void preload_nvrtc_builtins(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("libnvrtc-builtins.so.")) dlopen(entry.path().c_str(), RTLD_NOW | RTLD_GLOBAL);
  }
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

}  // namespace

int main(int argc, char** argv) {
  // Die with the parent (argv[1] is its pid: if it died before prctl, stop now).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (argc != 2 || std::to_string(getppid()) != argv[1]) return 64;
  const auto job_bytes = read_until_eof(STDIN_FILENO, std::chrono::steady_clock::now() + std::chrono::seconds(60),
                                        size_t{64} << 20);
  const auto child = job_bytes ? decode_job(*job_bytes) : std::nullopt;
  if (!child) return 65;
  limit_resources(child->memory_limit_bytes, child->cpu_seconds);

  detail::ByteWriter reply;
  std::vector<std::string> readable = child->job.read_only_dirs;
  if (std::string dir = nvrtc_library_dir(); !dir.empty()) {
    preload_nvrtc_builtins(dir);
    readable.push_back(dir);
  }
  const std::string sandbox = enter_compile_sandbox(readable);
  if (sandbox.empty() && child->job.sandbox == CompileSandbox::required) {
    reply.u64(kNoSandbox);
    reply.str(probe_sandbox_support().describe());
    return write_all(kReplyFd, reply.bytes()) ? 0 : 2;
  }
  // What ptxas prints goes into the reply: stdout and stderr are the parent's memfd (a file it reads
  // back if no reply comes), else (started otherwise) a memfd of our own.
  struct stat out_stat {};
  int captured = STDOUT_FILENO;
  if (fstat(STDOUT_FILENO, &out_stat) != 0 || !S_ISREG(out_stat.st_mode)) {
    captured = memfd_create("kbrl-nvrtc-output", MFD_CLOEXEC);
    if (captured >= 0) {
      dup2(captured, STDOUT_FILENO);
      dup2(captured, STDERR_FILENO);
    }
  }
  try {
    const NvrtcOutput out = run_nvrtc(child->job);
    reply.u64(out.status == NvrtcOutput::Status::compiled ? kCompiled : kFailed);
    reply.str(sandbox);
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
    return 3;
  }
  return write_all(kReplyFd, reply.bytes()) ? 0 : 2;
}
