#include "accuracy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <kbrl/error.h>

namespace kbrl {

// Chosen on an H100 (results/h100-80gb-hbm3/evaluator-trust-3/accuracy.csv) from the largest ratio of an honest float32
// kernel (every known-good kernel, the generated kernels of the gpu tests and a sweep sample; fp16,
// TF32 and fast-math variants left out), with at least 4x to spare, in powers of 2.
double accuracy_factor(Family family) {
  switch (family) {
    // Each output from a few inputs or a short sum (measured at most 1.8x).
    case Family::elementwise:
    case Family::pooling:
    case Family::arg_reduction:
    case Family::scan:
    case Family::softmax:
    case Family::attention:
      return 16;
    // Sums of thousands of terms in any order (serial per thread: up to 8.0x).
    case Family::gemm:
    case Family::conv:
    case Family::reduction:
      return 64;
    // Sums over a whole tensor of 1e9 elements: an honest kernel that adds per-thread partials into one
    // float (atomics) loses hundreds of times the reference's error (a loss kernel accumulating in fp32:
    // 1,542x), as much as a good estimate would. The check catches only what is far worse.
    case Family::norm:
      return 1024;
    case Family::loss:
      return 8192;
  }
  KBRL_ASSERT(false, "unhandled family {}", static_cast<int>(family));
}

std::optional<std::string> accuracy_failure(Family family, double candidate_error, double reference_error) {
  if (!std::isfinite(reference_error)) return std::nullopt;  // nothing to compare with
  const double factor = accuracy_factor(family);
  const double limit = factor * std::max(reference_error, kAccuracyFloor);
  if (candidate_error <= limit) return std::nullopt;
  return fmt::format(
      "relative L2 error against a float64 computation {:.3g}, {:.0f} times the float32 reference's own "
      "({:.3g}); {} kernels may be {:g} times less accurate (at least {:.3g}): more than a float32 computation "
      "of the operator loses (an estimate?)",
      candidate_error, candidate_error / std::max(reference_error, kAccuracyFloor), reference_error,
      to_string(family), factor, limit);
}

}  // namespace kbrl
