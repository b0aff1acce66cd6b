#pragma once
// The accuracy check against float64 (docs/design.md, "Accuracy against float64"). On one trial of
// KernelBench's draw the harness knows the float32 reference's own relative L2 error against a
// float64 computation of the task's operator, and (within that error, by the triangle inequality)
// the candidate's. An honest float32 kernel's error is of the reference's order (another summation
// order, another rounding of a transcendental); an estimate (part of the operator computed from a
// sample of the input) can be thousands of times larger while still inside atol/rtol. A candidate
// fails when its error exceeds
//   accuracy_factor(family) * max(reference error, kAccuracyFloor).
// The factors were chosen on an H100 from every known-good kernel, the generated kernels of the gpu
// tests and a sweep sample (results/h100-80gb-hbm3/evaluator-trust-3/accuracy.csv).
#include <optional>
#include <string>

#include <reference/task.h>

namespace kbrl {

/// float32's unit roundoff, 2^-24: the error floor where the reference itself is exact (ReLU, max).
inline constexpr double kAccuracyFloor = 0x1p-24;

/// The tolerance at or under which the accuracy is judged (the strict 1e-4); under a looser one
/// (legacy: 1e-2) reduced precision is accepted, and the errors are only recorded.
inline constexpr double kStrictTolerance = 1e-4;
inline bool accuracy_judged(double atol, double rtol) { return atol <= kStrictTolerance && rtol <= kStrictTolerance; }

/// How many times the float32 reference's own error a candidate's may be, for a task family.
double accuracy_factor(Family family);

/// The failure text when `candidate_error` is beyond the limit for `family`, else nothing.
std::optional<std::string> accuracy_failure(Family family, double candidate_error, double reference_error);

}  // namespace kbrl
