#include "task.h"

#include <array>
#include <numeric>

#include <kbrl/error.h>

namespace kbrl {
namespace {

constexpr std::array<std::pair<Family, std::string_view>, 11> kFamilies{{
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
}};

}  // namespace

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::f32: return "float32";
    case DType::i64: return "int64";
    case DType::b8: return "bool";
  }
  return "?";
}

std::string_view to_string(Scale scale) {
  return scale == Scale::kernelbench ? "kernelbench" : "small";
}

std::string_view to_string(Family family) {
  for (const auto& [f, name] : kFamilies)
    if (f == family) return name;
  return "?";
}

Scale parse_scale(std::string_view text) {
  if (text == "kernelbench") return Scale::kernelbench;
  if (text == "small") return Scale::small;
  throw InputError(fmt::format("unknown scale '{}': expected 'kernelbench' or 'small'", text));
}

std::string_view to_string(InputSet set) {
  return set == InputSet::kernelbench ? "kernelbench" : "stress";
}

InputSet parse_input_set(std::string_view text) {
  if (text == "kernelbench") return InputSet::kernelbench;
  if (text == "stress") return InputSet::stress;
  throw InputError(
      fmt::format("unknown input set '{}': expected 'kernelbench' or 'stress'", text));
}

Family parse_family(std::string_view text) {
  std::string names;
  for (const auto& [f, name] : kFamilies) {
    if (name == text) return f;
    names += names.empty() ? "" : ", ";
    names += name;
  }
  throw InputError(fmt::format("unknown operator family '{}': expected one of {}", text, names));
}

int64_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::f32: return 4;
    case DType::i64: return 8;
    case DType::b8: return 1;
  }
  return 0;
}

int64_t TensorSpec::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

std::string format_shape(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

}  // namespace kbrl
