#pragma once
// KernelBench's fast_p events and the speedup interval they read: the one rule shared by the
// harness's records (harness/record/eval_record.h) and the experiments' statistics and selection
// (experiments/selection.h), so it lives where both may include it.
#include <optional>

namespace kbrl {

/// A confidence interval of a speedup (reference time over candidate time).
struct SpeedupInterval {
  double low = 0.0;
  double high = 0.0;
  bool operator==(const SpeedupInterval&) const = default;
};

/// KernelBench's fast_p event: correct and speedup > p (strict). The one rule behind is_fast(record),
/// the rollouts', the samples.csv rows' and the selection's events.
inline bool fast_event(bool correct, double speedup, double p) { return correct && speedup > p; }
/// The significant fast_p event: fast, and the lower end of the speedup's interval above p.
inline bool significantly_fast_event(bool correct, double speedup, double interval_low, double p) {
  return fast_event(correct, speedup, p) && interval_low > p;
}
/// The same with the interval itself; without one (not timed, an old record), never significant.
inline bool significantly_fast_event(bool correct, double speedup, const std::optional<SpeedupInterval>& ci,
                                     double p) {
  return ci && significantly_fast_event(correct, speedup, ci->low, p);
}

}  // namespace kbrl
