// Level-1 scan tasks: cumulative sums and products along dim 1 of x:[32768,32768].
// FLOPs: 1 per element (one add or multiply); masked cumsum 2 (the multiply by the mask, the add).
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
  return def;
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
  return def;
}

}  // namespace

void add_scan_tasks(TaskDefs& defs) {
  defs.push_back(
      scan(89, "89_cumsum", [](const torch::Tensor& x) { return torch::cumsum(x, kDim); }));
  defs.push_back(scan(
      90, "90_cumprod", [](const torch::Tensor& x) { return torch::cumprod(x, kDim); },
      /*small_length=*/50));
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
