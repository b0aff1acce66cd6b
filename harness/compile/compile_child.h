#pragma once
// Internal to the compile stage: one NVRTC compile in a forked child process, with a wall-time
// limit and an address-space limit. The child writes its result back over a pipe and _exits.
#include <cstdint>
#include <string>
#include <vector>

#include "compile.h"

namespace kbrl {

struct NvrtcJob {
  std::string source;
  std::string name = std::string(kNvrtcProgramName);
  std::vector<std::string> options;  // as passed to nvrtcCompileProgram
  bool want_cubin = true;
};

struct NvrtcOutput {
  enum class Status {
    compiled,   // NVRTC succeeded: ptx (and cubin) are set
    failed,     // NVRTC reported a compilation error: see log
    timed_out,  // the child ran past the time limit and was killed
    died,       // the child died (a signal, the memory limit): see detail
  };
  Status status = Status::failed;
  std::string log;  // fetched before the result was checked, so a failure keeps it
  std::string ptx;
  std::string cubin;
  std::string detail;  // for died: what happened
};

/// Runs `job` in a forked child. Throws ApiError for an NVRTC API fault inside the child (other
/// than a compilation error) and for a failure of fork or pipe.
NvrtcOutput run_nvrtc_isolated(const NvrtcJob& job, double time_limit_seconds,
                               int64_t memory_limit_bytes);

/// The same compile in this process (no isolation): what the child runs.
NvrtcOutput run_nvrtc(const NvrtcJob& job);

}  // namespace kbrl
