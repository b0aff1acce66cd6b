#pragma once
// Helpers for the reference tests: run a task's reference at small scale on the CPU and compare it
// with an independent implementation (plain loops or a different composition of ops).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <reference/reference_model.h>
#include <reference/task_registry.h>

namespace kbrl::testing {

struct SmallRun {
  TaskSpec spec;
  ReferenceModel model;
  Tensors inputs;
  Tensors outputs;
};

/// Builds task `id` at small scale, draws inputs with `seed` and runs the reference on the CPU.
inline SmallRun run_small(int id, uint64_t seed = 1) {
  SmallRun run{task_spec(id, Scale::small), {}, {}, {}};
  run.model = make_reference(run.spec);
  run.inputs = make_inputs(run.spec, seed, torch::kCPU);
  std::vector<double> scalars;
  for (const auto& s : run.spec.scalars) scalars.push_back(s.value);
  run.outputs = run.model(run.inputs, scalars);
  return run;
}

/// fp32 tolerance for comparing two fp32 implementations of the same operator.
inline constexpr double kTol = 1e-4;

/// Expects `actual` close to `expected` (same shape, |a-e| <= atol + rtol*|e|), both compared in
/// float64, and reports the worst element.
inline void expect_close(const torch::Tensor& actual, const torch::Tensor& expected,
                         double rtol = kTol, double atol = kTol) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  auto a = actual.to(torch::kFloat64);
  auto e = expected.to(torch::kFloat64);
  auto excess = (a - e).abs() - (atol + rtol * e.abs());
  const double worst = excess.numel() ? excess.max().item<double>() : -1.0;
  EXPECT_LE(worst, 0.0) << "max |actual-expected| = " << (a - e).abs().max().item<double>();
}

/// Applies `fn` to every element of a float tensor, with plain loops (an independent implementation).
template <typename Fn>
torch::Tensor map_elements(const torch::Tensor& x, Fn fn) {
  auto in = x.contiguous().to(torch::kFloat64);
  auto out = torch::empty_like(in);
  const double* src = in.data_ptr<double>();
  double* dst = out.data_ptr<double>();
  for (int64_t i = 0; i < in.numel(); ++i) dst[i] = fn(src[i]);
  return out;
}

}  // namespace kbrl::testing
