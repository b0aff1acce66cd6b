#pragma once
// Internal: how a family file defines its tasks. Each family file adds its TaskDefs in a function
// called from task_registry.cpp (explicit registration: nothing depends on static initialisation).
#include <functional>
#include <string>
#include <vector>

#include "reference_model.h"

namespace kbrl::detail {

/// How one input of an input set is drawn, in words and in code, and what its values satisfy.
struct InputLaw {
  std::string text;  // follows the input's name in describe_inputs: "~ uniform[-10, 10)"
  InputDomain domain;
  /// Draws the input in its spec's shape and dtype (called in input order, under the set's seed).
  /// Used by the stress set only (the kernelbench set draws as it always has); empty in a law that
  /// is only `declared`.
  std::function<torch::Tensor(const TensorSpec&, torch::Device)> draw;
  /// Whether `draw` draws every element alone from one law (no structure across elements): then any
  /// number of values can be drawn as a flat tensor (the mixed sets draw only the values they use).
  bool elementwise = false;
};

/// The laws of a task's inputs at a spec, one per input in spec.inputs' order.
using InputLaws = std::function<std::vector<InputLaw>(const TaskSpec&)>;

struct TaskDef {
  int id = 0;
  std::string name;
  Family family = Family::elementwise;
  /// Shapes, scalars, parameters and FLOPs at a scale. id, name, family, scale and min_bytes are
  /// filled in by the registry.
  std::function<TaskSpec(Scale)> spec;
  /// The reference module (called under the model seed, on the CPU).
  std::function<ReferenceModel(const TaskSpec&)> make_model;
  /// Optional: the task's own KernelBench input distribution (called under the input seed).
  /// Default: every input uniform [0,1) in its spec's shape.
  std::function<Tensors(const TaskSpec&, torch::Device)> make_inputs;
  /// What the KernelBench draw is, in words and domains (draws unused). Required with make_inputs;
  /// default: every input uniform [0,1).
  InputLaws kernelbench_laws;
  /// Required: the stress set, drawn law by law in input order.
  InputLaws stress_laws;
};

using TaskDefs = std::vector<TaskDef>;

// One per family file.
void add_gemm_tasks(TaskDefs&);
void add_elementwise_tasks(TaskDefs&);
void add_norm_tasks(TaskDefs&);
void add_reduction_tasks(TaskDefs&);
void add_pooling_tasks(TaskDefs&);
void add_conv_tasks(TaskDefs&);
void add_scan_tasks(TaskDefs&);
void add_loss_tasks(TaskDefs&);

/// The task with this id (InputError for an unknown id).
const TaskDef& task_def(int id);

// Input laws for family files (input_sets.cpp). Every float law draws with torch's RNG on the
// target device, in place where the shape is large.
/// ~ uniform[lo, hi).
InputLaw uniform(double lo, double hi);
/// uniform[lo, hi) plus shift * o, o uniform over {-1, 0, 1}, one o per slice: the offset has the
/// input's size along `varying_dims` and size 1 along the others (the dims a slice spans), so some
/// slices are all negative and some all positive. `per` names a slice in the text.
InputLaw shifted_uniform(double lo, double hi, double shift, std::vector<int64_t> varying_dims,
                         std::string per);
/// = (u + u^T) / 2 with u ~ uniform[lo, hi): a symmetric square matrix.
InputLaw symmetric_uniform(double lo, double hi);
/// = triu(u) or tril(u) with u ~ uniform[lo, hi).
InputLaw triangular_uniform(double lo, double hi, bool upper);
/// = s * exp(u), s = -1 or +1 equally likely, u ~ uniform[-w, w): magnitudes around 1 with both
/// signs, E[log|x|] = 0, so a product of n of them has log-magnitude standard deviation w*sqrt(n/3).
InputLaw signed_log_uniform(double w);
/// = softmax over the last dim of logits ~ uniform[lo, hi): positive rows that sum to 1.
InputLaw softmax_rows(double lo, double hi);
/// int64 ~ uniform integers in [0, classes).
InputLaw class_indices(int64_t classes);
/// float -1 or +1, equally likely.
InputLaw signs();
/// bool, true with probability 1/2.
InputLaw bool_mask();
/// A law stated in words only (a kernelbench declaration of a task with its own make_inputs).
InputLaw declared(std::string text, InputDomain domain);
/// The same law for every input of the task.
InputLaws every_input(InputLaw law);
/// These laws, in input order, at every scale.
InputLaws per_input(std::vector<InputLaw> laws);

// The mixed input sets (input_mixes.cpp): InputSet::outliers and InputSet::mixture.
Tensors make_mixed_inputs(const TaskSpec& spec, uint64_t seed, torch::Device device, InputSet set);
std::string describe_mixed(const TaskSpec& spec, InputSet set);
std::vector<InputDomain> mixed_domains(const TaskSpec& spec);

// Helpers for family files.
inline TensorSpec f32(std::string name, std::vector<int64_t> shape) {
  return {std::move(name), std::move(shape), DType::f32};
}
/// A module with no parameters and a forward that maps inputs to one output.
ReferenceModel stateless(std::function<torch::Tensor(const Tensors&)> fn);
/// A module holding `module` whose forward is `fn(module, inputs)`.
template <typename M>
ReferenceModel with_module(M module, std::function<torch::Tensor(M&, const Tensors&)> fn) {
  ReferenceModel model;
  model.module = module.ptr();
  model.forward = [module, fn](const Tensors& in, const std::vector<double>&) mutable {
    return Tensors{fn(module, in)};
  };
  return model;
}

}  // namespace kbrl::detail
