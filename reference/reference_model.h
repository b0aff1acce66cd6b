#pragma once
// The libtorch reference of a task: KernelBench's Model as a callable with its parameters, and the
// inputs drawn the way KernelBench's get_inputs() draws them.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "task.h"

namespace kbrl {

/// The seed under which every reference module's parameters are created (torch::manual_seed).
inline constexpr uint64_t kModelSeed = 42;

using Tensors = std::vector<torch::Tensor>;

/// KernelBench's Model for one task. The module holds the parameters (possibly none); forward runs
/// the task's operator. The module is left in training mode, as KernelBench leaves it.
struct ReferenceModel {
  std::shared_ptr<torch::nn::Module> module;
  std::function<Tensors(const Tensors& inputs, const std::vector<double>& scalars)> forward;

  Tensors operator()(const Tensors& inputs, const std::vector<double>& scalars) const {
    return forward(inputs, scalars);
  }
  /// Parameters in named_parameters() order, matching TaskSpec::parameters.
  Tensors parameters() const;
  void to(torch::Device device);
};

/// Builds the task's reference on the CPU under torch::manual_seed(seed).
ReferenceModel make_reference(const TaskSpec& spec, uint64_t seed = kModelSeed);

/// Draws one input set on `device` as KernelBench's get_inputs() does (uniform [0,1) floats, int64
/// class targets, a bool mask, symmetrized or triangular matrices, ...), under torch::manual_seed(seed).
Tensors make_inputs(const TaskSpec& spec, uint64_t seed, torch::Device device);

torch::ScalarType to_torch(DType dtype);

}  // namespace kbrl
