#pragma once
// The preflight: the stage between compile and run. Whether a compiled candidate can be launched at
// all, decided from values alone (the candidate's plan and the compiled module's kernel parameters)
// before anything reaches a GPU: an args= list that does not match its kernel would be undefined
// behaviour at launch, so it is a launch_error "refused before any launch".
#include <optional>
#include <string>

#include <harness/compile/compile.h>
#include <kernels/candidate.h>

namespace kbrl {

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

}  // namespace kbrl
