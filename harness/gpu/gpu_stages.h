#pragma once
// The value types of the GPU stage's steps. GpuSession::run (gpu/session_cuda.cpp) is
//   load (gpu/load.cpp) -> check (gpu/check.cpp): CheckResult -> time (gpu/time.cpp): Timing
// and then assembles the GpuJobResult the worker sends back (gpu_session.h). A candidate's failure
// is a CandidateFault inside these values, never an exception (exceptions are for harness
// faults). No libtorch here.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <harness/stage_values.h>  // TrialCheck
#include <kbrl/outcome.h>

namespace kbrl::gpu {

/// A candidate failure found while loading, checking or timing it: it becomes the job's outcome.
struct CandidateFault {
  Outcome outcome = Outcome::ok;
  std::string detail;
  bool sticky = false;          // a sticky CUDA error: the worker process must be replaced
  bool drop_reference = false;  // the candidate wrote a parameter: rebuild the reference next time
};

/// What checking found. Trials run in trial_plan's order (gpu_session.h); checking stops at the first
/// failure.
struct CheckResult {
  std::vector<TrialCheck> trials;       // every trial compared, the failed one included
  std::optional<CandidateFault> fault;  // why checking failed (wrong_answer, input_mutated, ...)

  bool passed() const { return !fault; }
};

/// What timing measured, sample by sample (each on inputs drawn for it).
struct Timing {
  std::vector<double> candidate_ms;     // timed candidate runs (so far, when a fault stopped them)
  std::vector<double> reference_ms;     // the paired reference runs (empty when not timed)
  int64_t timed_runs_checked = 0;       // timed runs whose output was verified (all, when no fault)
  std::optional<CandidateFault> fault;  // a fault, or a timed run whose output differed
};

}  // namespace kbrl::gpu
