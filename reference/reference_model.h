#pragma once
// The libtorch reference of a task: KernelBench's Model as a callable with its parameters, and its
// inputs: drawn the way KernelBench's get_inputs() draws them, or from the task's stress set.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
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

/// Draws the task's inputs on `device` under torch::manual_seed(seed). kernelbench: as KernelBench's
/// get_inputs() does (uniform [0,1) floats, int64 class targets, a bool mask, symmetrized or
/// triangular matrices, ...), bit for bit the same tensors for the same seed. stress: the task's
/// stress set (describe_inputs says what it is). outliers: KernelBench's draw with 1 in 2^6..2^12
/// positions taken from a stress draw; mixture: blocks of 16..4096 elements, each from KernelBench's
/// or the stress draw (the rate, block size and positions drawn from the seed; inputs with a
/// restricted domain stay KernelBench's). Same (spec, seed, set), same tensors.
Tensors make_inputs(const TaskSpec& spec, uint64_t seed, torch::Device device,
                    InputSet set = InputSet::kernelbench);

/// One line saying how `set` draws this task's inputs, one "name law" clause per input joined by
/// "; ", e.g. "x ~ uniform[-100, 100)" or "predictions ~ uniform[-10, 10); targets ~ uniform
/// integers in [0, 4096)".
std::string describe_inputs(const TaskSpec& spec, InputSet set);

/// What every value of one drawn input satisfies. The reference tests check each declaration.
struct InputDomain {
  enum class Kind {
    interval,           // float, lo <= v <= hi
    class_index,        // int64, 0 <= v < hi
    probability_rows,   // float, 0 < v <= 1, each row along the last dim sums to 1
    sign,               // float, v is -1 or +1
    mask,               // bool
  };
  enum class Structure { dense, symmetric, upper_triangular, lower_triangular };

  Kind kind = Kind::interval;
  double lo = 0.0;
  double hi = 1.0;
  Structure structure = Structure::dense;  // of a square matrix input

  /// A domain narrowed on purpose (indices, probabilities, signs, masks): the input cannot take
  /// arbitrary signs and magnitudes without leaving the operator's domain.
  bool restricted() const { return kind != Kind::interval; }
};

/// The domain of each input of `set`, in the order of spec.inputs.
std::vector<InputDomain> input_domains(const TaskSpec& spec, InputSet set);

/// Changes a few values of every plain float input (float32, contiguous, a dense interval domain in
/// `set`) of inputs drawn from `set`: 1 in 4,096 positions (at least 64, at most 2^20, never more
/// than the input holds), drawn under `seed`, each taking the value at another position drawn under
/// it, so the set's law holds (a cumulative product stays in range, a probability stays one) and no
/// second draw of the whole set is made. Returns how many values it set (0 when no input takes
/// arbitrary values: indices, probabilities, signs, masks). Same (inputs, set, seed), same change.
int64_t change_few_values(const TaskSpec& spec, Tensors& inputs, InputSet set, uint64_t seed);

torch::ScalarType to_torch(DType dtype);

}  // namespace kbrl
