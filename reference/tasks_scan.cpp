// Level-1 scan tasks: cumulative sums and products along dim 1 of x:[32768,32768].
// FLOPs: 1 per element (one add or multiply); masked cumsum 2 (the multiply by the mask, the add).
// Stress inputs: uniform[-10, 10) for the sums (running sums that cross zero), the mask stays a
// bool mask; the cumulative product takes signed magnitudes around 1 (cumprod_stress).
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "task_def.h"

namespace kbrl::detail {
namespace {

constexpr int64_t kDim = 1;  // KernelBench's `dim` for every scan task

// Small scale: a length that is not a power of two. Cumprod gets a short one: the products of
// uniform [0,1) values shrink like e^-n and would leave the normal float range near n = 87.
std::vector<int64_t> scan_shape(Scale s, int64_t small_length) {
  return s == Scale::kernelbench ? std::vector<int64_t>{32768, 32768}
                                 : std::vector<int64_t>{64, small_length};
}

/// A scan task y = fn(x) with x and y of the same shape.
TaskDef scan(int id, std::string name, std::function<torch::Tensor(const torch::Tensor&)> fn,
             int64_t small_length = 1000) {
  TaskDef def;
  def.id = id;
  def.name = std::move(name);
  def.family = Family::scan;
  def.spec = [small_length](Scale s) {
    TaskSpec spec;
    spec.inputs = {f32("x", scan_shape(s, small_length))};
    spec.outputs = {f32("y", scan_shape(s, small_length))};
    spec.flops = static_cast<double>(spec.inputs[0].numel());
    return spec;
  };
  def.make_model = [fn](const TaskSpec&) {
    return stateless([fn](const Tensors& in) { return fn(in[0]); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// Task 90's stress law: x = s * exp(u), s = +-1, u ~ uniform[-w, w). log|y| along a row is a
/// random walk with zero drift and step variance w^2/3, so after all L elements it has standard
/// deviation w * sqrt(L/3); w makes that 1 (rounded to 3 digits so the text states it exactly):
/// w = 0.00957 at L = 32768, 0.245 at the small L = 50. Even the largest excursion over 32768 rows
/// (about 6 standard deviations, e^6) stays far inside fp32's normal range e^-87..e^88, so nothing
/// overflows and no row underflows to zeros. The spread is kept at 1, not wider, because the stress
/// check's absolute tolerance scales with the output's RMS: a few rows wandering to e^30 would set it
/// so high that the other rows went unchecked. At spread 1 the RMS stays near 2 (E[y^2] averaged
/// along a row is (e^2 - 1)/2), so every element is checked to about 1e-4 of its size.
std::vector<InputLaw> cumprod_stress(const TaskSpec& spec) {
  const double length = static_cast<double>(spec.inputs[0].shape.at(kDim));
  const double w = std::sqrt(3.0 / length);
  return {signed_log_uniform(std::stod(fmt::format("{:.3g}", w)))};
}

/// Task 93: cumsum(x * mask) with a bool mask drawn as torch.randint(0, 2, x.shape).bool().
TaskDef masked_cumsum() {
  TaskDef def;
  def.id = 93;
  def.name = "93_masked_cumsum";
  def.family = Family::scan;
  def.spec = [](Scale s) {
    TaskSpec spec;
    spec.inputs = {f32("x", scan_shape(s, 1000)), {"mask", scan_shape(s, 1000), DType::b8}};
    spec.outputs = {f32("y", scan_shape(s, 1000))};
    spec.flops = 2.0 * static_cast<double>(spec.inputs[0].numel());
    return spec;
  };
  def.make_model = [](const TaskSpec&) {
    return stateless([](const Tensors& in) { return torch::cumsum(in[0] * in[1], kDim); });
  };
  def.make_inputs = [](const TaskSpec& spec, torch::Device device) {
    const auto options = torch::TensorOptions().device(device);
    auto x = torch::rand(spec.inputs[0].shape, options);
    auto mask = torch::randint(0, 2, spec.inputs[1].shape, options.dtype(torch::kInt64));
    return Tensors{x, mask.to(torch::kBool)};
  };
  def.kernelbench_laws = per_input({uniform(0, 1), bool_mask()});
  def.stress_laws = per_input({uniform(-10, 10), bool_mask()});
  return def;
}

}  // namespace

void add_scan_tasks(TaskDefs& defs) {
  defs.push_back(
      scan(89, "89_cumsum", [](const torch::Tensor& x) { return torch::cumsum(x, kDim); }));
  TaskDef cumprod = scan(
      90, "90_cumprod", [](const torch::Tensor& x) { return torch::cumprod(x, kDim); },
      /*small_length=*/50);
  cumprod.stress_laws = cumprod_stress;
  defs.push_back(std::move(cumprod));
  defs.push_back(scan(91, "91_cumsum_reverse", [](const torch::Tensor& x) {
    return torch::cumsum(x.flip(kDim), kDim).flip(kDim);
  }));
  // KernelBench's current file (fixed 2025-12-24): a zero column, then the cumsum of all but the
  // last column, so y has x's shape.
  defs.push_back(scan(92, "92_cumsum_exclusive", [](const torch::Tensor& x) {
    const int64_t length = x.size(kDim);
    return torch::cat({torch::zeros_like(x.narrow(kDim, 0, 1)),
                       torch::cumsum(x.narrow(kDim, 0, length - 1), kDim)},
                      kDim);
  }));
  defs.push_back(masked_cumsum());
}

}  // namespace kbrl::detail
