#pragma once
// The accuracy check against float64 (docs/design.md, "Accuracy against float64"). On one trial of
// KernelBench's draw the harness computes the task's operator in float64 and measures two relative
// L2 errors against it: the candidate's and the float32 reference's own. An honest float32 kernel's
// error is of the reference's order (another summation order, another rounding of a transcendental);
// an estimate (part of the operator computed from a sample of the input) is hundreds of times
// larger while still inside atol/rtol. A candidate fails when its error exceeds
//   accuracy_factor(family) * max(reference error, kAccuracyFloor).
// The factors were chosen on an H100 from every known-good kernel and the generated kernels of the gpu
// tests (results/<device>/accuracy/ has the measured ratios).
#include <optional>
#include <string>

#include <reference/task.h>

namespace kbrl {

/// float32's unit roundoff, 2^-24: the error floor where the reference itself is exact (ReLU, max).
inline constexpr double kAccuracyFloor = 0x1p-24;

/// How many times the float32 reference's own error a candidate's may be, for a task family.
double accuracy_factor(Family family);

/// The failure text when `candidate_error` is beyond the limit for `family`, else nothing.
std::optional<std::string> accuracy_failure(Family family, double candidate_error, double reference_error);

}  // namespace kbrl
