#pragma once
// Internal to the compile stage: one NVRTC compile in a child process of its own, kbrl-nvrtc
// (nvrtc_child_main.cpp), exec'd with an empty environment, under a wall-time limit (killed on
// expiry), a CPU-time limit, an address-space limit, dying with its parent, and inside the compile
// sandbox: it can read the CUDA headers and nothing else.
//
// The sandbox: NVRTC reads files only through #include, so a compile that can read nothing but the
// CUDA headers cannot leak a host file through its log, whatever the source scanner misses. Applied
// in the child after it read its job: Landlock (read-only access beneath the allowed folders; no
// write, no TCP), a network namespace of its own where the kernel lets it make one, no new
// privileges.
#include <cstdint>
#include <string>
#include <vector>

#include "nvrtc_job.h"

namespace kbrl {

/// Runs `job` in a kbrl-nvrtc child. Throws ApiError for an NVRTC API fault inside the child (other
/// than a compilation error), for a failure to start it, and when job.sandbox is required and the
/// kernel offers no Landlock.
NvrtcOutput run_nvrtc_isolated(const NvrtcJob& job, double time_limit_seconds,
                               int64_t memory_limit_bytes);

/// The same compile in this process, unconfined: what the child runs once it is confined.
NvrtcOutput run_nvrtc(const NvrtcJob& job);

/// The kbrl-nvrtc program: $KBRL_NVRTC_CHILD, else beside this process's executable, else where
/// this build put it. Throws ApiError naming the places looked at when none exists.
const std::string& nvrtc_child_path();

// ---- the sandbox ----

/// What the kernel offers: the Landlock ABI version (0: none) and whether this process could make
/// a network namespace. Probed once, in this process, without restricting it.
struct SandboxSupport {
  int landlock_abi = 0;
  std::string describe() const;  // "Landlock ABI 7" or "no Landlock (...)"
};
SandboxSupport probe_sandbox_support();

/// Restricts the calling process for good: it may read (and map) files beneath `read_only_dirs`
/// only, write nowhere, connect nowhere. Returns what was applied ("Landlock ABI 7, own network
/// namespace"); an empty string when Landlock is unavailable (then nothing file-related was
/// restricted). Never throws.
std::string enter_compile_sandbox(const std::vector<std::string>& read_only_dirs);

}  // namespace kbrl
