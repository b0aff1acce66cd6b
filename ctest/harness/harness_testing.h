#pragma once
// Shared fixtures of the harness's unit tests: a fully populated evaluation record, and a
// source-only candidate and a compile bomb for the compile tests.
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <harness/record/eval_record.h>
#include <kernels/candidate.h>

namespace kbrl::testing {

/// A candidate of task 19 with this source and these options and no launch plan: what the compile
/// stage's tests compile.
inline Candidate candidate_of(std::string source, std::vector<std::string> options = {}) {
  Candidate c;
  c.task_id = 19;
  c.source = std::move(source);
  c.options = std::move(options);
  return c;
}

/// 2^28 tokens from 28 nested macros: a source whose compile never finishes (the time and CPU limits'
/// tests).
inline std::string macro_bomb() {
  std::string s = "#define A0 y[0]\n";
  for (int i = 1; i <= 28; ++i)
    s += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + "+A" + std::to_string(i - 1) + "\n";
  return s + "extern \"C\" __global__ void k(float* y) { y[1] = A28; }\n";
}

/// A record with every field set (policy, runtime and reference present).
inline EvalRecord sample_record(const std::string& key = "0123456789abcdef0123456789abcdef") {
  EvalRecord r;
  r.key = key;
  r.task_id = 19;
  r.task_name = "19_ReLU";
  r.scale = Scale::small;
  r.policy = "heuristic";
  r.raw_action = "block=256 vector=4";
  r.candidate.task_id = 19;
  r.candidate.source = "extern \"C\" __global__ void relu(const float* x, float* y, long n) {}\n";
  Launch launch;
  launch.kernel = "relu";
  launch.grid = {64, 1, 1};
  launch.block = {256, 1, 1};
  launch.args = {{ArgKind::input, 0, 0.0, 0}, {ArgKind::output, 0, 0.0, 0},
                 {ArgKind::i64, 0, 0.0, 16384}};
  r.candidate.launches = {launch};
  r.candidate.options = {"--use_fast_math"};
  r.compile = {true, "warning: unused variable", 0.25, false, {"fast-math: __expf"}};
  r.trials = {{0, "trial-0", true, 0.0, 0.0, "", 1.25e-7, 5e-8},
              {1, "stress-1", true, 1.5e-7, 2.5e-7, "", std::nullopt, std::nullopt}};
  r.runtime = RuntimeStats{5, 0.5, 0.52, 0.025, 0.5, 0.56, 0.5, 0.54, 0.04};
  r.reference = RuntimeStats{5, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0};
  r.speedup = 2.0;
  r.speedup_ci = SpeedupInterval{1.75, 2.25};
  r.reward = 2.0;
  r.outcome = Outcome::ok;
  r.outcome_detail = "";
  r.flags = {"reduced_precision"};
  r.inputs = "robust";
  r.device = "NVIDIA H100 80GB HBM3";
  r.kbrl_version = "0.1.0";
  r.timestamp = "2026-03-05T12:34:56.789Z";
  r.gpu_stage_ms = {{"load", 0.5}, {"check", 20.25}, {"accuracy", 3.5}, {"time", 12.0}};
  return r;
}

}  // namespace kbrl::testing
