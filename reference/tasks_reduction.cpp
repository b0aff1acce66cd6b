// Level-1 reductions over dim 1 (sum, mean, max, min) and arg-reductions (argmax, argmin: int64
// indices). FLOPs: 1 per input element; mean 1 more per output element (the division).
// Stress inputs: uniform[-10, 10); max, min, argmax and argmin add a shift of -15, 0 or +15 shared by
// the values reduced together, so some reduced slices are all negative and some all positive (a
// max that starts at 0, a min that starts at 0, fails on them).
#include "task_def.h"

namespace kbrl::detail {
namespace {

struct Reduction {
  int id;
  const char* name;
  Family family;      // reduction, or arg_reduction (int64 output)
  bool keepdim;       // the output keeps the reduced dim as size 1
  double per_output;  // FLOPs per output element beyond the 1 per input element
  torch::Tensor (*fn)(const torch::Tensor&);
  bool extremum;      // max, min, argmax, argmin: stress slices of one sign
};

const Reduction kReductions[] = {
    {47, "47_Sum_reduction_over_a_dimension", Family::reduction, true, 0,
     [](const torch::Tensor& x) { return torch::sum(x, 1, /*keepdim=*/true); }, false},
    {48, "48_Mean_reduction_over_a_dimension", Family::reduction, false, 1,
     [](const torch::Tensor& x) { return torch::mean(x, 1); }, false},
    {49, "49_Max_reduction_over_a_dimension", Family::reduction, false, 0,
     [](const torch::Tensor& x) { return std::get<0>(torch::max(x, 1)); }, true},
    {51, "51_Argmax_over_a_dimension", Family::arg_reduction, false, 0,
     [](const torch::Tensor& x) { return torch::argmax(x, 1); }, true},
    {52, "52_Argmin_over_a_dimension", Family::arg_reduction, false, 0,
     [](const torch::Tensor& x) { return torch::argmin(x, 1); }, true},
    {53, "53_Min_reduction_over_a_dimension", Family::reduction, false, 0,
     [](const torch::Tensor& x) { return std::get<0>(torch::min(x, 1)); }, true},
};

// Every task reduces dim 1 of x:[128,4096,4095] (the kept last dim stays odd).
std::vector<int64_t> input_shape(Scale s) {
  return s == Scale::kernelbench ? std::vector<int64_t>{128, 4096, 4095}
                                 : std::vector<int64_t>{16, 256, 255};
}

TaskDef reduction(const Reduction& r) {
  TaskDef def;
  def.id = r.id;
  def.name = r.name;
  def.family = r.family;
  def.spec = [r](Scale s) {
    const auto in = input_shape(s);
    std::vector<int64_t> out = {in[0], in[2]};
    if (r.keepdim) out = {in[0], 1, in[2]};
    TaskSpec spec;
    spec.inputs = {f32("x", in)};
    spec.outputs = {{"y", out, r.family == Family::arg_reduction ? DType::i64 : DType::f32}};
    spec.flops = static_cast<double>(spec.inputs[0].numel()) +
                 r.per_output * static_cast<double>(spec.outputs[0].numel());
    return spec;
  };
  def.make_model = [fn = r.fn](const TaskSpec&) {
    return stateless([fn](const Tensors& in) { return fn(in[0]); });
  };
  def.stress_laws = every_input(
      r.extremum ? shifted_uniform(-10, 10, 15, {0, 2}, "(b, k): the x[b, :, k] reduced together")
                 : uniform(-10, 10));
  return def;
}

}  // namespace

void add_reduction_tasks(TaskDefs& defs) {
  for (const auto& r : kReductions) defs.push_back(reduction(r));
}

}  // namespace kbrl::detail
