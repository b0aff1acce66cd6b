#pragma once
// Records for the regression-check tests (test_regression.cpp, test_regression_decide.cpp).
#include <string>

#include <harness/record/eval_record.h>
#include <harness/regression.h>

namespace kbrl::testing {

inline EvalRecord with_outcome(Outcome outcome, bool compiled = true) {
  EvalRecord r;
  r.task_id = 19;
  r.outcome = outcome;
  r.compile.ok = compiled;
  return r;
}

/// A correct, timed record with this speedup and 95% interval, its median time `ms` and quartiles
/// `spread` (a fraction) either side.
inline EvalRecord timed(double speedup, double low, double high, double ms = 1.0, double spread = 0.01) {
  EvalRecord r = with_outcome(Outcome::ok);
  r.speedup = speedup;
  r.speedup_ci = SpeedupInterval{low, high};
  RuntimeStats t;
  t.n = 50;
  t.median_ms = t.mean_ms = ms;
  t.q1_ms = ms * (1 - spread);
  t.q3_ms = ms * (1 + spread);
  t.iqr_ms = t.q3_ms - t.q1_ms;
  t.min_ms = t.q1_ms;
  t.max_ms = t.q3_ms;
  r.runtime = t;
  return r;
}

inline KernelVerdict decide_one(const EvalRecord& was, const EvalRecord& now, double threshold = kDefaultRegressThreshold) {
  return decide("k.cu", was, now, threshold);
}


}  // namespace kbrl::testing
