#include "compile_child.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include <kbrl/check.h>
#include <kbrl/subprocess.h>

#include "compile_sandbox.h"
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

}  // namespace kbrl
