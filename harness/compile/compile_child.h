#pragma once
// Internal to the compile stage: one NVRTC compile in a child process of its own, kbrl-nvrtc
// (nvrtc_child_main.cpp), exec'd with an empty environment, under a wall-time limit (killed on
// expiry), a CPU-time limit, an address-space limit, dying with its parent, and inside the compile
// sandbox (compile_sandbox.h): it can read the CUDA headers and nothing else.
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

}  // namespace kbrl
