#include "task_features.h"

#include <array>
#include <cmath>
#include <string>

namespace kbrl {
namespace {

constexpr std::array kFamilies = {Family::gemm,    Family::elementwise, Family::softmax,
                                  Family::norm,    Family::reduction,   Family::arg_reduction,
                                  Family::pooling, Family::scan,        Family::loss,
                                  Family::conv,    Family::attention};

double numel(const TensorSpec& t) {
  double n = 1;
  for (int64_t d : t.shape) n *= static_cast<double>(d);
  return n;
}

double total_numel(const std::vector<TensorSpec>& tensors) {
  double n = 0;
  for (const auto& t : tensors) n += numel(t);
  return n;
}

/// log10(1 + x) / 10: 0 for 0, ~1 for 1e10.
float log_size(double x) { return static_cast<float>(std::log10(1.0 + x) / 10.0); }

}  // namespace

const std::vector<std::string_view>& task_feature_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> n;
    for (Family f : kFamilies) n.push_back(to_string(f));  // one-hot
    for (std::string_view s : {"log_input_numel", "log_output_numel", "log_parameter_numel",
                               "log_flops", "log_min_bytes", "log2_intensity", "input_rank",
                               "output_rank", "inputs", "integer_output", "small_scale"})
      n.push_back(s);
    return n;
  }();
  return names;
}

std::vector<float> task_features(const TaskSpec& task) {
  std::vector<float> f;
  f.reserve(task_feature_names().size());
  for (Family fam : kFamilies) f.push_back(task.family == fam ? 1.0f : 0.0f);
  f.push_back(log_size(total_numel(task.inputs)));
  f.push_back(log_size(total_numel(task.outputs)));
  f.push_back(log_size(total_numel(task.parameters)));
  f.push_back(log_size(task.flops));
  f.push_back(log_size(task.min_bytes));
  const double intensity = task.flops / std::max(1.0, task.min_bytes);
  f.push_back(static_cast<float>(std::log2(intensity + 1.0 / 64) / 10.0));
  f.push_back(task.inputs.empty() ? 0.0f : static_cast<float>(task.inputs[0].shape.size()) / 5.0f);
  f.push_back(task.outputs.empty() ? 0.0f : static_cast<float>(task.outputs[0].shape.size()) / 5.0f);
  f.push_back(static_cast<float>(task.inputs.size()) / 3.0f);
  f.push_back(!task.outputs.empty() && task.outputs[0].dtype != DType::f32 ? 1.0f : 0.0f);
  f.push_back(task.scale == Scale::small ? 1.0f : 0.0f);
  return f;
}

}  // namespace kbrl
