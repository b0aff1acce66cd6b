#pragma once
// The task suite's torch-free description of a KernelBench task: what goes in, what comes out, how
// much work it is. The harness, the kernels' scaffold and the CLI read tasks through this header.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <kbrl/enum_names.h>

namespace kbrl {

enum class DType { f32, i64, b8 };
enum class Scale { kernelbench, small };
enum class Family {
  gemm,
  elementwise,
  softmax,
  norm,
  reduction,
  arg_reduction,
  pooling,
  scan,
  loss,
  conv,
  attention,
};


template <>
struct EnumNames<DType> {
  static constexpr std::string_view what = "dtype";
  static constexpr EnumEntry<DType> entries[] = {
      {DType::f32, "float32"}, {DType::i64, "int64"}, {DType::b8, "bool"}};
};
template <>
struct EnumNames<Scale> {
  static constexpr std::string_view what = "scale";
  static constexpr EnumEntry<Scale> entries[] = {{Scale::kernelbench, "kernelbench"},
                                                 {Scale::small, "small"}};
};
template <>
struct EnumNames<Family> {
  static constexpr std::string_view what = "operator family";
  static constexpr EnumEntry<Family> entries[] = {
      {Family::gemm, "gemm"},
      {Family::elementwise, "elementwise"},
      {Family::softmax, "softmax"},
      {Family::norm, "norm"},
      {Family::reduction, "reduction"},
      {Family::arg_reduction, "arg_reduction"},
      {Family::pooling, "pooling"},
      {Family::scan, "scan"},
      {Family::loss, "loss"},
      {Family::conv, "conv"},
      {Family::attention, "attention"},
  };
};

std::string_view to_string(DType);
std::string_view to_string(Scale);
std::string_view to_string(Family);
Scale parse_scale(std::string_view);    // throws InputError naming the legal values
Family parse_family(std::string_view);  // likewise
int64_t dtype_size(DType);

/// Which distribution a task's inputs are drawn from. kernelbench: as KernelBench's get_inputs()
/// draws them (mostly uniform [0,1)). stress: the task's own set, with signs and magnitudes well
/// beyond [0,1) where the operator stays well defined in fp32 (reference/README.md lists them).
/// How a trial draws a task's inputs: KernelBench's draw; the task's stress set (signs and
/// magnitudes beyond [0,1)); KernelBench's draw with a few outliers from the stress set at positions
/// drawn from the seed; or KernelBench's and the stress draw mixed block by block (reference_model.h).
enum class InputSet { kernelbench, stress, outliers, mixture };
template <>
struct EnumNames<InputSet> {
  static constexpr std::string_view what = "input set";
  static constexpr EnumEntry<InputSet> entries[] = {{InputSet::kernelbench, "kernelbench"},
                                                    {InputSet::stress, "stress"},
                                                    {InputSet::outliers, "outliers"},
                                                    {InputSet::mixture, "mixture"}};
};
std::string_view to_string(InputSet);
InputSet parse_input_set(std::string_view);  // throws InputError naming the legal values

/// A tensor by name, shape and element type. A 0-d tensor has an empty shape.
struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype = DType::f32;

  int64_t numel() const;
  int64_t bytes() const { return numel() * dtype_size(dtype); }
  bool operator==(const TensorSpec&) const = default;
};

/// A Python scalar passed to forward (task 5's `s`).
struct ScalarSpec {
  std::string name;
  double value = 0.0;
  bool operator==(const ScalarSpec&) const = default;
};

/// One task at one scale. `parameters` are the reference module's parameters in the order of
/// named_parameters(); a candidate reads them, never re-creates them.
struct TaskSpec {
  int id = 0;
  std::string name;  // KernelBench's file name without ".py", e.g. "19_ReLU"
  Family family = Family::elementwise;
  Scale scale = Scale::kernelbench;
  std::vector<TensorSpec> inputs;
  std::vector<ScalarSpec> scalars;
  std::vector<TensorSpec> parameters;
  std::vector<TensorSpec> outputs;
  double flops = 0.0;      // arithmetic of the operator, by the conventions in reference/README.md
  double min_bytes = 0.0;  // every input and parameter read once, every output written once
};

/// Renders a shape as "[4096,393216]" (and "[]" for a 0-d tensor).
std::string format_shape(const std::vector<int64_t>& shape);

}  // namespace kbrl
