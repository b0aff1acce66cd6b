// Level-1 pooling tasks (max and average pooling in 1, 2 and 3 dimensions).
// FLOPs: the kernel volume per output element (one compare or add per window element).
// Stress inputs: uniform[-10, 10); max pooling adds a shift of -15, 0 or +15 per (n, c) channel, so
// whole channels are negative (a max that starts at 0, or pads with 0, fails on them) and whole
// channels positive.
#include "task_def.h"

namespace kbrl::detail {
namespace {

namespace nn = torch::nn;

/// One pooling window, the same along every spatial dimension (as in all of KernelBench's tasks).
struct Window {
  int64_t kernel = 1;
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;  // max pooling only
};

/// Output length of one spatial dimension (floor mode, as PyTorch's default ceil_mode=false).
int64_t pooled_length(int64_t n, const Window& w) {
  return (n + 2 * w.padding - w.dilation * (w.kernel - 1) - 1) / w.stride + 1;
}

template <typename Module, typename Options>
Module max_pool(const Window& w) {
  return Module(Options(w.kernel).stride(w.stride).padding(w.padding).dilation(w.dilation));
}

/// Average pooling with count_include_pad=true (the default): the divisor is the kernel volume.
template <typename Module, typename Options>
Module avg_pool(const Window& w) {
  return Module(Options(w.kernel).stride(w.stride).padding(w.padding));
}

/// A pooling task y = pool(x) over x:[N,C,spatial...]; `make_module(window)` builds the module.
template <typename MakeModule>
TaskDef pooling(int id, std::string name, std::vector<int64_t> kernelbench_shape,
                std::vector<int64_t> small_shape, Window window, MakeModule make_module,
                InputLaw stress) {
  TaskDef def;
  def.id = id;
  def.name = std::move(name);
  def.family = Family::pooling;
  def.spec = [=](Scale s) {
    const auto& shape = s == Scale::kernelbench ? kernelbench_shape : small_shape;
    std::vector<int64_t> out = {shape[0], shape[1]};
    double kernel_volume = 1;
    for (size_t d = 2; d < shape.size(); ++d) {
      out.push_back(pooled_length(shape[d], window));
      kernel_volume *= static_cast<double>(window.kernel);
    }
    TaskSpec spec;
    spec.inputs = {f32("x", shape)};
    spec.outputs = {f32("y", out)};
    spec.flops = kernel_volume * static_cast<double>(spec.outputs[0].numel());
    return spec;
  };
  def.make_model = [=](const TaskSpec&) {
    using Module = decltype(make_module(window));
    return with_module<Module>(make_module(window),
                               [](Module& pool, const Tensors& in) { return pool(in[0]); });
  };
  def.stress_laws = every_input(std::move(stress));
  return def;
}

InputLaw max_pool_stress() {
  return shifted_uniform(-10, 10, 15, {0, 1}, "(n, c) channel");
}

}  // namespace

void add_pooling_tasks(TaskDefs& defs) {
  defs.push_back(pooling(41, "41_Max_Pooling_1D", {64, 192, 65536}, {4, 16, 500},
                         {.kernel = 8, .stride = 1, .padding = 4, .dilation = 3},
                         max_pool<nn::MaxPool1d, nn::MaxPool1dOptions>, max_pool_stress()));
  defs.push_back(pooling(42, "42_Max_Pooling_2D", {32, 64, 512, 512}, {2, 8, 40, 40},
                         {.kernel = 4, .stride = 1, .padding = 1, .dilation = 1},
                         max_pool<nn::MaxPool2d, nn::MaxPool2dOptions>, max_pool_stress()));
  defs.push_back(pooling(43, "43_Max_Pooling_3D", {16, 32, 128, 128, 128}, {2, 4, 20, 20, 20},
                         {.kernel = 3, .stride = 2, .padding = 1, .dilation = 3},
                         max_pool<nn::MaxPool3d, nn::MaxPool3dOptions>, max_pool_stress()));
  defs.push_back(pooling(44, "44_Average_Pooling_1D", {64, 128, 65536}, {4, 16, 500},
                         {.kernel = 8, .stride = 1, .padding = 4},
                         avg_pool<nn::AvgPool1d, nn::AvgPool1dOptions>, uniform(-10, 10)));
  // KernelBench passes only kernel_size=11: stride=None means stride = kernel_size, padding 0.
  defs.push_back(pooling(45, "45_Average_Pooling_2D", {16, 64, 2048, 2048}, {2, 8, 64, 64},
                         {.kernel = 11, .stride = 11, .padding = 0},
                         avg_pool<nn::AvgPool2d, nn::AvgPool2dOptions>, uniform(-10, 10)));
  defs.push_back(pooling(46, "46_Average_Pooling_3D", {16, 32, 128, 128, 256}, {2, 4, 16, 16, 32},
                         {.kernel = 3, .stride = 2, .padding = 1},
                         avg_pool<nn::AvgPool3d, nn::AvgPool3dOptions>, uniform(-10, 10)));
}

}  // namespace kbrl::detail
