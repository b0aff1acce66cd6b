// Level-1 norm tasks (33-40): the batch, instance, group and layer norm modules, and the RMS,
// Frobenius, L1 and L2 normalizations KernelBench writes out with torch ops.
// FLOPs per element: statistics 3, normalize 2, affine 2 (batch 7, instance 5, group 7, layer 7);
// RMS, Frobenius, L1 and L2 3.
// Stress inputs: uniform[-10, 10) (signed values: an L1 norm without the abs, a variance that
// assumes positive values, fail).
#include "task_def.h"

namespace kbrl::detail {
namespace {

constexpr int64_t kFeatures = 64;  // channels of tasks 33-37 and 40
constexpr int64_t kGroups = 8;     // task 35
constexpr double kEps = 1e-5;      // task 36

// Tasks 33-37 run on x:[batch,64,512,512] (batch 64 for batch norm, 112 for the others).
std::vector<int64_t> image_shape(Scale s, int64_t batch) {
  return s == Scale::kernelbench ? std::vector<int64_t>{batch, kFeatures, 512, 512}
                                 : std::vector<int64_t>{8, kFeatures, 32, 32};
}

// Tasks 38 and 39 run on x:[32768,65535] (the reduced row length stays odd).
std::vector<int64_t> row_shape(Scale s) {
  return s == Scale::kernelbench ? std::vector<int64_t>{32768, 65535}
                                 : std::vector<int64_t>{128, 4095};
}

// Task 40 runs on x:[16,64,256,256] and normalizes over its last three dims.
std::vector<int64_t> layer_shape(Scale s) {
  return s == Scale::kernelbench ? std::vector<int64_t>{16, kFeatures, 256, 256}
                                 : std::vector<int64_t>{4, kFeatures, 32, 32};
}

/// y = norm(x) in x's shape, `ops` FLOPs per element; an affine norm has "weight" and "bias" (the
/// order of named_parameters()) of shape `affine`.
TaskSpec norm_spec(const std::vector<int64_t>& shape, double ops,
                   std::vector<int64_t> affine = {}) {
  TaskSpec spec;
  spec.inputs = {f32("x", shape)};
  spec.outputs = {f32("y", shape)};
  if (!affine.empty()) spec.parameters = {f32("weight", affine), f32("bias", affine)};
  spec.flops = ops * static_cast<double>(spec.inputs[0].numel());
  return spec;
}

TaskDef norm(int id, std::string name, std::function<TaskSpec(Scale)> spec,
             std::function<ReferenceModel(const TaskSpec&)> make_model) {
  TaskDef def;
  def.id = id;
  def.name = std::move(name);
  def.family = Family::norm;
  def.spec = std::move(spec);
  def.make_model = std::move(make_model);
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// A module whose forward is module(x).
template <typename M>
ReferenceModel applying(M module) {
  return with_module<M>(std::move(module), [](M& m, const Tensors& in) { return m(in[0]); });
}

/// A parameterless normalization y = fn(x), written with torch ops as KernelBench writes it.
std::function<ReferenceModel(const TaskSpec&)> written(torch::Tensor (*fn)(const torch::Tensor&)) {
  return [fn](const TaskSpec&) { return stateless([fn](const Tensors& in) { return fn(in[0]); }); };
}

}  // namespace

void add_norm_tasks(TaskDefs& defs) {
  namespace nn = torch::nn;
  // BatchNorm2d in training mode (make_reference calls train()): batch statistics.
  defs.push_back(norm(
      33, "33_BatchNorm", [](Scale s) { return norm_spec(image_shape(s, 64), 7, {kFeatures}); },
      [](const TaskSpec&) { return applying(nn::BatchNorm2d(kFeatures)); }));
  // InstanceNorm2d's defaults: affine=false, track_running_stats=false.
  defs.push_back(norm(
      34, "34_InstanceNorm", [](Scale s) { return norm_spec(image_shape(s, 112), 5); },
      [](const TaskSpec&) { return applying(nn::InstanceNorm2d(kFeatures)); }));
  defs.push_back(norm(
      35, "35_GroupNorm_", [](Scale s) { return norm_spec(image_shape(s, 112), 7, {kFeatures}); },
      [](const TaskSpec&) {
        return applying(nn::GroupNorm(nn::GroupNormOptions(kGroups, kFeatures)));
      }));
  defs.push_back(norm(
      36, "36_RMSNorm_", [](Scale s) { return norm_spec(image_shape(s, 112), 3); },
      written([](const torch::Tensor& x) {
        return x / torch::sqrt(torch::mean(torch::pow(x, 2), 1, /*keepdim=*/true) + kEps);
      })));
  defs.push_back(norm(
      37, "37_FrobeniusNorm_", [](Scale s) { return norm_spec(image_shape(s, 112), 3); },
      // torch.norm(x, p='fro') over all elements is the vector 2-norm (what torch.norm calls).
      written([](const torch::Tensor& x) { return x / torch::linalg_vector_norm(x, 2); })));
  defs.push_back(norm(
      38, "38_L1Norm_", [](Scale s) { return norm_spec(row_shape(s), 3); },
      written([](const torch::Tensor& x) {
        return x / torch::mean(torch::abs(x), 1, /*keepdim=*/true);
      })));
  defs.push_back(norm(
      39, "39_L2Norm_", [](Scale s) { return norm_spec(row_shape(s), 3); },
      written([](const torch::Tensor& x) {
        return x / torch::norm(x, 2, {1}, /*keepdim=*/true);
      })));
  // LayerNorm over (64,256,256) at kernelbench scale: the input's last three dims.
  defs.push_back(norm(
      40, "40_LayerNorm",
      [](Scale s) {
        const auto shape = layer_shape(s);
        return norm_spec(shape, 7, {shape.begin() + 1, shape.end()});
      },
      [](const TaskSpec& spec) {
        const auto& shape = spec.inputs[0].shape;
        return applying(nn::LayerNorm(nn::LayerNormOptions({shape.begin() + 1, shape.end()})));
      }));
}

}  // namespace kbrl::detail
