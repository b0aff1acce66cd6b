#pragma once
// Values the evaluation's stages produce and the record keeps: one correctness trial (TrialCheck,
// from the GPU check) and a device's peak rates (DevicePeaks, measured by the GPU session, read by
// the reward's speed-of-light floor). At the bottom of harness/: the stages (gpu/, worker/), the
// reward (reward.h) and the record (record/) include this header, so no stage includes the record's
// schema to name what it returns.
#include <optional>
#include <string>

namespace kbrl {

/// One correctness trial. `seed_id` names the trial's seed (never the run secret).
struct TrialCheck {
  int trial = 0;
  std::string seed_id;
  bool passed = false;
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;
  std::string failure;  // the first failing reason; empty when passed
  /// The relative L2 error against a float64 computation of the same operator on the same inputs:
  /// the candidate's, and the float32 reference's own (set on the trial that measured them).
  std::optional<double> f64_error, f64_reference_error;
  bool operator==(const TrialCheck&) const = default;
};

/// Peak rates of a device, measured (a copy kernel's bandwidth, FMA-bound kernels' FLOP rates).
/// A rate of 0 means unknown: that bound is then left out of the floor.
struct DevicePeaks {
  double copy_bytes_per_s = 0.0;
  double fp32_flops_per_s = 0.0;
  double tf32_flops_per_s = 0.0;
  bool operator==(const DevicePeaks&) const = default;
};

}  // namespace kbrl
