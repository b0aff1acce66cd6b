// The compile child (compile_child.h): the parent's side (run_nvrtc_isolated: exec kbrl-nvrtc,
// limits, output), the child's compile (run_nvrtc) and its confinement (enter_compile_sandbox).
#include "compile_child.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <new>
#include <string_view>

#include <fmt/format.h>

#include <kbrl/check.h>
#include <kbrl/subprocess.h>

#include "nvrtc_check.h"
#include "nvrtc_wire.h"

#ifndef KBRL_NVRTC_CHILD_BUILD_PATH
#define KBRL_NVRTC_CHILD_BUILD_PATH ""
#endif

namespace kbrl {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace nvrtc_wire;

void warn_unconfined_once(const std::string& why) {
  static std::once_flag once;
  std::call_once(once, [&] {
    std::fprintf(stderr,
                 "kbrl: warning: compiles run unconfined (%s): a candidate's #include could read host "
                 "files; kbrl serve refuses to start this way\n",
                 why.c_str());
  });
}

}  // namespace

const std::string& nvrtc_child_path() {
  static const std::string path = [] {
    std::vector<fs::path> candidates;
    if (const char* env = std::getenv("KBRL_NVRTC_CHILD"); env && *env) candidates.emplace_back(env);
    std::error_code ec;
    if (const fs::path self = fs::read_symlink("/proc/self/exe", ec); !ec)
      candidates.push_back(self.parent_path() / "kbrl-nvrtc");
    if (*KBRL_NVRTC_CHILD_BUILD_PATH) candidates.emplace_back(KBRL_NVRTC_CHILD_BUILD_PATH);
    std::string looked;
    for (const fs::path& p : candidates) {
      if (access(p.c_str(), X_OK) == 0) return p.string();
      looked += (looked.empty() ? "" : ", ") + p.string();
    }
    throw ApiError("OS", "find kbrl-nvrtc",
                   fmt::format("the compile child kbrl-nvrtc is not at any of: {} (set KBRL_NVRTC_CHILD "
                               "to its path)",
                               looked),
                   __FILE__, __LINE__);
  }();
  return path;
}

NvrtcOutput run_nvrtc_isolated(const NvrtcJob& job, double time_limit_seconds,
                               int64_t memory_limit_bytes) {
  auto [job_read, job_write] = make_pipe();
  auto [reply_read, reply_write] = make_pipe();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, time_limit_seconds)));
  // What the child and NVRTC's helpers print (its stdout and stderr): read back here when the child
  // ends without a reply, so the detail says what it printed before.
  UniqueFd printed(memfd_create("kbrl-nvrtc-printed", MFD_CLOEXEC));
  SpawnSpec spec;
  spec.argv = {nvrtc_child_path(), std::to_string(getpid())};
  spec.env = std::vector<std::string>{};  // nothing of ours to read in /proc/self/environ
  spec.fds = {{job_read.get(), 0}, {reply_write.get(), kReplyFd}};
  if (printed) spec.fds.insert(spec.fds.end(), {{printed.get(), 1}, {printed.get(), 2}});
  ChildProcess child = spawn(spec);
  job_read.reset();
  reply_write.reset();

  ChildJob message{job, memory_limit_bytes, static_cast<int64_t>(std::ceil(time_limit_seconds)) + 1};
  write_all(job_write.get(), encode_job(message));  // a child that died early shows below
  job_write.reset();

  NvrtcOutput out;
  const auto reply = read_until_eof(reply_read.get(), deadline, size_t{1} << 30);
  const std::optional<int> status = reply ? child.wait_until(deadline) : std::nullopt;
  if (!status) {
    out.status = NvrtcOutput::Status::timed_out;
    return out;  // ~ChildProcess kills and reaps
  }

  detail::ByteReader in(*reply);
  const uint64_t kind = in.u64();
  bool out_of_memory = in.ok() && kind == kOutOfMemory;
  if (in.ok() && (kind == kCompiled || kind == kFailed)) {
    out.sandbox = in.str();
    out.log = in.str();
    out.ptx = in.str();
    out.cubin = in.str();
    const std::string printed = in.str();
    if (in.at_end()) {
      out.status = kind == kCompiled ? NvrtcOutput::Status::compiled : NvrtcOutput::Status::failed;
      if (out.sandbox.empty()) warn_unconfined_once(probe_sandbox_support().describe());
      if (!printed.empty()) {
        if (!out.log.empty() && out.log.back() != '\n') out.log += '\n';
        out.log += printed;
      }
      // ptxas reports running out of memory on stderr, and NVRTC as a failure with no log.
      const bool no_memory = printed.find("Memory allocation failure") != std::string::npos ||
                             printed.find("out of memory") != std::string::npos;
      if (kind == kCompiled || !no_memory) return out;
      out_of_memory = true;
    }
  } else if (in.ok() && kind == kApiError) {
    const std::string api = in.str(), call = in.str(), what = in.str();
    if (in.at_end())
      throw ApiError(api, call, fmt::format("in the compile child: {}", what), __FILE__, __LINE__);
  } else if (in.ok() && kind == kNoSandbox) {
    const std::string why = in.str();
    throw ApiError("OS", "enter the compile sandbox",
                   fmt::format("untrusted code must compile confined and this kernel offers {}; run "
                               "where Landlock is enabled, or allow unconfined compiles explicitly",
                               why),
                   __FILE__, __LINE__);
  }
  out.status = NvrtcOutput::Status::died;
  const std::string limit =
      memory_limit_bytes > 0 ? fmt::format(" (memory limit {} MiB)", memory_limit_bytes >> 20) : "";
  if (out_of_memory) {
    out.detail = fmt::format("compile ran out of memory{}", limit);
  } else if (WIFSIGNALED(*status) && WTERMSIG(*status) == SIGXCPU) {
    out.detail = fmt::format("compile ran out of CPU time (limit {} s)", message.cpu_seconds);
  } else {
    out.detail = fmt::format("compiler process ended by {} without a result{}", describe_wait_status(*status), limit);
    out.died_unexplained = true;
  }
  if (printed) {
    char text[1024];
    const ssize_t n = pread(printed.get(), text, sizeof text, 0);
    std::string_view said(text, n > 0 ? static_cast<size_t>(n) : 0);
    while (!said.empty() && std::isspace(static_cast<unsigned char>(said.back()))) said.remove_suffix(1);
    if (!said.empty()) out.printed = std::string(said);
  }
  return out;
}

// ---- the compile in the child (once confined) ----

namespace {

std::string fetch_log(nvrtcProgram program) {
  size_t size = 0;
  KBRL_NVRTC_CHECK(nvrtcGetProgramLogSize(program, &size));
  std::string log(size, '\0');
  if (size > 0) KBRL_NVRTC_CHECK(nvrtcGetProgramLog(program, log.data()));
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return log;
}

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

// ---- the child's confinement ----

namespace {

// The ruleset attribute as of Landlock ABI 6 (Debian 12's headers stop at ABI 3): the kernel takes
// the prefix its ABI knows, so the size passed follows the ABI.
struct RulesetAttr {
  uint64_t handled_access_fs = 0;
  uint64_t handled_access_net = 0;  // ABI 4
  uint64_t scoped = 0;              // ABI 6
};
constexpr uint64_t kNetBindTcp = 1u << 0, kNetConnectTcp = 1u << 1;
constexpr uint64_t kScopeAbstractUnixSocket = 1u << 0, kScopeSignal = 1u << 1;

int landlock_abi() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

/// Every file-system right the kernel's ABI can restrict.
uint64_t handled_fs(int abi) {
  uint64_t rights = (1ull << 13) - 1;  // ABI 1: EXECUTE .. MAKE_SYM
  if (abi >= 2) rights |= 1ull << 13;  // REFER
  if (abi >= 3) rights |= 1ull << 14;  // TRUNCATE
  if (abi >= 5) rights |= 1ull << 15;  // IOCTL_DEV
  return rights;
}

}  // namespace

std::string SandboxSupport::describe() const {
  return landlock_abi > 0 ? fmt::format("Landlock ABI {}", landlock_abi)
                          : "no Landlock (kernel without it, or disabled: lsm= on the kernel command line)";
}

SandboxSupport probe_sandbox_support() {
  // KBRL_ASSUME_NO_LANDLOCK=1: answer as a kernel without Landlock would (to test what callers do
  // then); the compile child itself still confines where it can.
  if (const char* v = std::getenv("KBRL_ASSUME_NO_LANDLOCK"); v && std::string_view(v) == "1") return {0};
  return {landlock_abi()};
}

std::string enter_compile_sandbox(const std::vector<std::string>& read_only_dirs) {
  std::string applied;
  // Our own network namespace: no interface but a down loopback. As root directly; otherwise
  // through a user namespace of our own, where the kernel allows unprivileged ones.
  if (unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) applied = "own network namespace";
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  const int abi = landlock_abi();
  if (abi <= 0) return {};
  RulesetAttr attr;
  attr.handled_access_fs = handled_fs(abi);
  size_t size = sizeof(uint64_t);
  if (abi >= 4) {
    attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
    size = 2 * sizeof(uint64_t);
  }
  if (abi >= 6) {
    attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
    size = sizeof attr;
  }
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return {};
  const uint64_t read = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE;
  for (const std::string& dir : read_only_dirs) {
    const int fd = open(dir.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    landlock_path_beneath_attr rule{read, fd};
    syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
    close(fd);
  }
  const bool restricted = syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  if (!restricted) return {};
  return fmt::format("Landlock ABI {}{}{}", abi, applied.empty() ? "" : ", ", applied);
}

}  // namespace kbrl
