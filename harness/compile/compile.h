#pragma once
// The compile stage (jitify2-like value types): Candidate -> CompileResult holding a
// CompiledModule (PTX, CUBIN, log, options, precision audit) or a structured compile_error; many
// at once on a CompilePool; the preflight of a compiled candidate's launch plan.
//
// NVRTC runs in a child process per compile (kbrl-nvrtc, exec'd), under a wall-time limit (the
// child is killed on expiry), a CPU-time limit and an address-space limit, so a compile bomb costs a
// compile_error, never the parent; the child can read the CUDA headers and no other file
// (compile_child.h), so no #include the source scanner misses can leak a host file into the log.
// NVRTC never touches the GPU: all of this works on a machine without one.
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>

#include <kbrl/outcome.h>
#include <kernels/candidate.h>

#include "kernel_params.h"
#include "nvrtc_job.h"
#include "precision_audit.h"

namespace kbrl {

class CompileCache;

struct CompileOptions {
  /// The target: "sm_90a" by default; on a GPU, the device's ("sm_" + major + minor, with the "a"
  /// suffix for sm_90 and later). A "compute_XX" arch yields PTX only.
  std::string arch = "sm_90a";
  double time_limit_seconds = 60.0;
  /// How much the compile child's address space may grow beyond its size at fork (RLIMIT_AS).
  /// 0 means no limit.
  int64_t memory_limit_bytes = int64_t{4} << 30;
  /// Where the allowed headers (source_scan.h) are found: the CUDA toolkit's include directory of
  /// this build by default. Its cccl/ subdirectory is added when present (cooperative_groups).
  std::string cuda_include_dir = default_cuda_include_dir();
  CompileSandbox sandbox = CompileSandbox::best_effort;

  static std::string default_cuda_include_dir();
};

/// A successful compile. Every field is a plain value: cheap to cache, log and send to a worker.
struct CompiledModule {
  std::string key;                   // the content key (compile_cache.h), 64 hex digits
  std::string arch;                  // e.g. "sm_90a"
  std::string ptx;
  std::string cubin;                 // bytes; empty for a compute_XX arch
  std::string log;                   // NVRTC's log (warnings)
  std::vector<std::string> options;  // every NVRTC option, as passed
  PrecisionAudit audit;
  KernelParams kernels;              // each kernel's parameters, read from the cubin once; none without one
  bool operator==(const CompiledModule&) const = default;
};

/// Why a candidate did not compile, in one line: a rejected option, include or size; "compile timed
/// out after 2 s"; "compiler exceeded its memory limit ..."; or the first error line of NVRTC's log.
struct CompileError {
  std::string message;
  bool operator==(const CompileError&) const = default;
};

/// What compile() made of a candidate: a compiled module or a compile error (one or the other,
/// never both), with what the call did on either side (NVRTC's log, options, key, time, cache).
struct CompileResult {
  std::variant<CompileError, CompiledModule> value;
  std::string log;                   // NVRTC's log, kept on failure too
  std::vector<std::string> options;  // the NVRTC options (empty when rejected before NVRTC)
  std::string key;                   // the content key ("" when rejected before hashing)
  double seconds = 0.0;              // wall time of this call
  bool cache_hit = false;

  bool ok() const { return std::holds_alternative<CompiledModule>(value); }
  /// The module; throws std::logic_error when the candidate did not compile (ask ok() first).
  const CompiledModule& module() const;
  /// Why it did not compile; "" when it did.
  const std::string& error() const;
  /// ok or compile_error.
  Outcome outcome() const { return ok() ? Outcome::ok : Outcome::compile_error; }
};

/// `log` with kNvrtcProgramName replaced by `file` (the user's candidate file) where NVRTC names it
/// (at the start of a line, and quoted in its closing "errors detected" line),
/// so a compile error points into the file they wrote. A scaffolded file's #line directives name it
/// already.
std::string log_naming_file(std::string_view log, std::string_view file);

/// Compiles a candidate. A candidate's fault (bad option, include, size, syntax, timeout, memory,
/// PTX that calls device printf) is a CompileResult with ok == false; throws InputError for bad CompileOptions (malformed arch)
/// and ApiError for a failure of NVRTC or the OS that is not the candidate's doing.
/// With a cache, a hit returns the stored result (cache_hit == true) without running NVRTC;
/// successes, NVRTC's own failures and timeouts are stored (a timeout under its time limit: a
/// longer limit compiles again), rejections are not.
CompileResult compile(const Candidate& candidate, const CompileOptions& options = {},
                      CompileCache* cache = nullptr);

/// The NVRTC options compile() passes for `candidate_options` (already canonical) under `options`.
std::vector<std::string> nvrtc_options(const std::vector<std::string>& candidate_options,
                                       const CompileOptions& options);

/// The arch string of a compute capability: 9.0 -> "sm_90a", 8.6 -> "sm_86", 10.0 -> "sm_100a".
std::string arch_for(int major, int minor);

// ---- the preflight: the stage between compile and run ----
// Whether a compiled candidate can be launched at all, decided from values alone (the candidate's
// plan and the compiled module's kernel parameters) before anything reaches a GPU: an args= list
// that does not match its kernel would be undefined behaviour at launch, so it is a launch_error
// "refused before any launch".

/// Why the candidate's launch plan cannot be launched with these kernels' parameters: a launch
/// passing another number of arguments than its kernel takes, or an argument whose size
/// (arg_bytes: pointers and i64 8 bytes, i32, f32 and task scalars 4) differs from its parameter's,
/// naming the launch, the kernel, the argument index and both sides. nullopt when every launch
/// matches. A launch whose kernel is not among `kernels` is left to the load stage (its
/// load_error); with no kernels (a compute_XX compile: PTX only) nothing can be checked: nullopt.
std::optional<std::string> launch_argument_mismatch(const Candidate& candidate, const KernelParams& kernels);

/// Why a compiled candidate cannot be launched: its plan over the plan limits
/// (plan_limit_violation, kernels/candidate.h), else its arguments against the module's kernels
/// (launch_argument_mismatch). nullopt when it can be.
std::optional<std::string> preflight(const Candidate& candidate, const CompiledModule& module);

/// A pool of threads that compile candidates (docs/design.md: compilation runs in the parent on a
/// thread pool; NVRTC never touches the GPU). Each compile still runs NVRTC in its own child process,
/// so N threads give N compiles at once.
class CompilePool {
 public:
  /// `threads` workers (0: std::thread::hardware_concurrency()), all compiling under `options`
  /// and sharing `cache` (may be null; must outlive the pool).
  explicit CompilePool(size_t threads, CompileOptions options = {}, CompileCache* cache = nullptr);
  /// Finishes every submitted compile, then joins the threads.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// Queues a compile. The future holds the CompileResult, or the exception compile() threw
  /// (ApiError, InputError).
  std::future<CompileResult> submit(Candidate candidate);

  size_t size() const { return threads_.size(); }

 private:
  void work();

  CompileOptions options_;
  CompileCache* cache_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<CompileResult()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kbrl
