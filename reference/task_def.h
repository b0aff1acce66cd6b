#pragma once
// Internal: how a family file defines its tasks. Each family file adds its TaskDefs in a function
// called from task_registry.cpp (explicit registration: nothing depends on static initialisation).
#include <functional>
#include <string>
#include <vector>

#include "reference_model.h"

namespace kbrl::detail {

struct TaskDef {
  int id = 0;
  std::string name;
  Family family = Family::elementwise;
  /// Shapes, scalars, parameters and FLOPs at a scale. id, name, family, scale and min_bytes are
  /// filled in by the registry.
  std::function<TaskSpec(Scale)> spec;
  /// The reference module (called under the model seed, on the CPU).
  std::function<ReferenceModel(const TaskSpec&)> make_model;
  /// Optional: the task's own input distribution (called under the input seed). Default: every
  /// input uniform [0,1) in its spec's shape.
  std::function<Tensors(const TaskSpec&, torch::Device)> make_inputs;
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
