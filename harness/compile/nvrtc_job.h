#pragma once
// The compile stage's smallest values, shared by the parent and the compile child (kbrl-nvrtc,
// which links nothing else of kbrl): what one NVRTC compile is given and what it gives back.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl {

/// Whether a compile must run confined (compile_child.h's sandbox: read the CUDA headers, nothing else).
enum class CompileSandbox : uint8_t {
  /// Confined where the kernel offers Landlock; elsewhere unconfined, with one warning on stderr
  /// per process (trusted sources: your own kernels, the generators').
  best_effort = 0,
  /// Confined, or the compile throws ApiError: for untrusted sources (kbrl serve).
  required = 1,
};

/// The name NVRTC compiles every candidate's source under, so its log says "candidate.cu(12): error
/// ..." (fixed: the log is part of the cached result, which must not depend on where a file was).
inline constexpr std::string_view kNvrtcProgramName = "candidate.cu";

struct NvrtcJob {
  std::string source;
  std::string name = std::string(kNvrtcProgramName);
  std::vector<std::string> options;  // as passed to nvrtcCompileProgram
  bool want_cubin = true;
  /// Folders the compile may read (the CUDA include folders); NVRTC's own library folder is added
  /// by the child.
  std::vector<std::string> read_only_dirs;
  CompileSandbox sandbox = CompileSandbox::required;
};

struct NvrtcOutput {
  enum class Status {
    compiled,   // NVRTC succeeded: ptx (and cubin) are set
    failed,     // NVRTC reported a compilation error: see log
    timed_out,  // the child ran past the time limit and was killed
    died,       // the child died (a signal, the memory or CPU limit): see detail
  };
  Status status = Status::failed;
  std::string log;  // fetched before the result was checked, so a failure keeps it
  std::string ptx;
  std::string cubin;
  std::string detail;   // for died: what happened
  std::string printed;  // for died: what the child printed before it ended (at most 1 KiB)
  /// died with no limit reached (no signal, no memory or CPU limit): a run of the same compile may
  /// end otherwise, so the caller compiles again before calling it the candidate's.
  bool died_unexplained = false;
  std::string sandbox;  // what confined the child ("Landlock ABI 7, own network namespace"; "" none)
};

}  // namespace kbrl
