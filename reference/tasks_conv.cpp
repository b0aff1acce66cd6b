// Level-1 convolution tasks: 50 and 54-87 (Conv1d/2d/3d, ConvTranspose1d/2d/3d, depthwise,
// depthwise-separable, pointwise).
//
// One row per task: the module KernelBench's Model really builds (its quirks included) and the
// input shape at each scale. Both scales use the same constructor arguments; `small` shrinks batch
// and spatial dims only, so every channel count (and every groups value) is KernelBench's.
// FLOPs: conv 2 * output elements * (C_in/groups) * kernel volume (+1 per output element with
// bias); transposed conv 2 * input elements * (C_out/groups) * kernel volume.
// Stress inputs: x ~ uniform[-10, 10) (the weights are parameters and stay as the module draws them).
#include <functional>
#include <numeric>

#include <kbrl/error.h>

#include "task_def.h"

namespace kbrl::detail {
namespace {

using Dims = std::vector<int64_t>;

/// Constructor arguments besides channels and kernel. A one-element list stands for the same value
/// in every spatial dim (as Python's int does); an empty one for PyTorch's default.
struct ConvOptions {
  Dims stride{};
  Dims padding{};
  Dims dilation{};
  Dims output_padding{};  // transposed only
  int64_t groups = 1;
  bool bias = false;
};

/// One convolution module; in_channels is the channel dim of its input.
struct Conv {
  bool transposed = false;
  int64_t out_channels = 0;
  Dims kernel;  // one entry per spatial dim
  ConvOptions opt{};

  size_t dims() const { return kernel.size(); }
  Dims expand(const Dims& v, int64_t fallback) const {
    if (v.empty()) return Dims(dims(), fallback);
    if (v.size() == 1) return Dims(dims(), v[0]);
    return v;
  }
  Dims stride() const { return expand(opt.stride, 1); }
  Dims padding() const { return expand(opt.padding, 0); }
  Dims dilation() const { return expand(opt.dilation, 1); }
  Dims output_padding() const { return expand(opt.output_padding, 0); }
  int64_t kernel_volume() const {
    return std::accumulate(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<>());
  }

  /// Output shape for input x:[N, C_in, spatial...] (the conv and transposed-conv size formulas).
  Dims output_shape(const Dims& x) const {
    Dims out = {x[0], out_channels};
    const Dims s = stride(), p = padding(), d = dilation(), op = output_padding();
    for (size_t i = 0; i < dims(); ++i) {
      const int64_t in = x[2 + i], span = d[i] * (kernel[i] - 1);
      out.push_back(transposed ? (in - 1) * s[i] - 2 * p[i] + span + op[i] + 1
                               : (in + 2 * p[i] - span - 1) / s[i] + 1);
    }
    return out;
  }

  double flops(const Dims& x) const {
    const Dims y = output_shape(x);
    const auto numel = [](const Dims& v) {
      return std::accumulate(v.begin(), v.end(), 1.0, std::multiplies<>());
    };
    const double k = static_cast<double>(kernel_volume());
    double f = transposed ? 2 * numel(x) * static_cast<double>(out_channels / opt.groups) * k
                          : 2 * numel(y) * static_cast<double>(x[1] / opt.groups) * k;
    if (opt.bias) f += numel(y);
    return f;
  }

  /// Parameters in named_parameters() order: weight [C_out, C_in/g, k...] (transposed: [C_in,
  /// C_out/g, k...]), then bias [C_out].
  std::vector<TensorSpec> parameters(int64_t in_channels, const std::string& prefix = "") const {
    Dims w = transposed ? Dims{in_channels, out_channels / opt.groups}
                        : Dims{out_channels, in_channels / opt.groups};
    w.insert(w.end(), kernel.begin(), kernel.end());
    std::vector<TensorSpec> params = {f32(prefix + "weight", w)};
    if (opt.bias) params.push_back(f32(prefix + "bias", {out_channels}));
    return params;
  }
};

template <size_t D>
struct ConvModules;
template <>
struct ConvModules<1> {
  using Conv = torch::nn::Conv1d;
  using ConvTranspose = torch::nn::ConvTranspose1d;
};
template <>
struct ConvModules<2> {
  using Conv = torch::nn::Conv2d;
  using ConvTranspose = torch::nn::ConvTranspose2d;
};
template <>
struct ConvModules<3> {
  using Conv = torch::nn::Conv3d;
  using ConvTranspose = torch::nn::ConvTranspose3d;
};

template <size_t D>
torch::nn::AnyModule make_conv_nd(const Conv& c, int64_t in_channels) {
  using E = torch::ExpandingArray<D>;
  if (c.transposed) {
    auto o = torch::nn::ConvTransposeOptions<D>(in_channels, c.out_channels, E(c.kernel))
                 .stride(E(c.stride()))
                 .padding(E(c.padding()))
                 .output_padding(E(c.output_padding()))
                 .dilation(E(c.dilation()))
                 .groups(c.opt.groups)
                 .bias(c.opt.bias);
    return torch::nn::AnyModule(typename ConvModules<D>::ConvTranspose(o));
  }
  auto o = torch::nn::ConvOptions<D>(in_channels, c.out_channels, E(c.kernel))
               .stride(E(c.stride()))
               .padding(E(c.padding()))
               .dilation(E(c.dilation()))
               .groups(c.opt.groups)
               .bias(c.opt.bias);
  return torch::nn::AnyModule(typename ConvModules<D>::Conv(o));
}

/// The libtorch module for `c` (parameters drawn now, under the caller's seed).
torch::nn::AnyModule make_conv(const Conv& c, int64_t in_channels) {
  switch (c.dims()) {
    case 1: return make_conv_nd<1>(c, in_channels);
    case 2: return make_conv_nd<2>(c, in_channels);
    case 3: return make_conv_nd<3>(c, in_channels);
  }
  throw InternalError("conv with an unsupported number of spatial dims");
}

constexpr bool kConv = false, kTransposed = true;

struct ConvTask {
  int id;
  const char* name;
  Conv conv;
  Dims x_kernelbench;  // [N, C_in, spatial...]
  Dims x_small;
};

// clang-format off
const std::vector<ConvTask>& conv_tasks() {
  static const std::vector<ConvTask> tasks = {
    // AlexNet's conv1, hard-coded (get_init_inputs' num_classes is unused).
    {50, "50_conv_standard_2D__square_input__square_kernel",
     {kConv, 96, {11, 11}, {.stride = {4}, .padding = {2}, .bias = true}}, {256, 3, 224, 224}, {2, 3, 35, 35}},
    {54, "54_conv_standard_3D__square_input__square_kernel",
     {kConv, 64, {3, 3, 3}}, {16, 3, 64, 64, 64}, {2, 3, 8, 8, 8}},
    {55, "55_conv_standard_2D__asymmetric_input__square_kernel",
     {kConv, 128, {3, 3}}, {8, 64, 512, 1024}, {2, 64, 6, 10}},
    {56, "56_conv_standard_2D__asymmetric_input__asymmetric_kernel",
     {kConv, 128, {5, 7}}, {8, 64, 512, 256}, {2, 64, 8, 9}},
    {57, "57_conv_transposed_2D__square_input__square_kernel",
     {kTransposed, 64, {3, 3}}, {8, 64, 1024, 1024}, {2, 64, 8, 8}},
    {58, "58_conv_transposed_3D__asymmetric_input__asymmetric_kernel",
     {kTransposed, 16, {3, 5, 7}}, {16, 32, 16, 32, 64}, {2, 32, 3, 4, 5}},
    // The module builds kernel (k, k, 1) from kernel_size=3.
    {59, "59_conv_standard_3D__asymmetric_input__square_kernel",
     {kConv, 64, {3, 3, 1}}, {16, 3, 256, 256, 10}, {2, 3, 12, 12, 4}},
    {60, "60_conv_standard_3D__square_input__asymmetric_kernel",
     {kConv, 64, {3, 5, 7}}, {16, 3, 64, 64, 64}, {2, 3, 8, 8, 8}},
    {61, "61_conv_transposed_3D__square_input__square_kernel",
     {kTransposed, 48, {3, 3, 3}}, {8, 48, 64, 64, 64}, {2, 48, 4, 4, 4}},
    {62, "62_conv_standard_2D__square_input__asymmetric_kernel",
     {kConv, 64, {5, 9}}, {8, 32, 512, 512}, {2, 32, 12, 12}},
    {63, "63_conv_standard_2D__square_input__square_kernel",
     {kConv, 128, {3, 3}}, {16, 16, 1024, 1024}, {2, 16, 12, 12}},
    {64, "64_conv_transposed_1D",
     {kTransposed, 128, {3}}, {64, 128, 65536}, {2, 128, 64}},
    {65, "65_conv_transposed_2D__square_input__asymmetric_kernel",
     {kTransposed, 64, {3, 7}}, {8, 64, 512, 512}, {2, 64, 6, 6}},
    {66, "66_conv_standard_3D__asymmetric_input__asymmetric_kernel",
     {kConv, 64, {3, 5, 7}}, {8, 3, 16, 128, 128}, {2, 3, 5, 12, 12}},
    {67, "67_conv_standard_1D",
     {kConv, 128, {3}}, {32, 64, 131072}, {2, 64, 128}},
    {68, "68_conv_transposed_3D__square_input__asymmetric_kernel",
     {kTransposed, 64, {3, 5, 5}}, {16, 32, 64, 64, 64}, {2, 32, 3, 3, 3}},
    {69, "69_conv_transposed_2D__asymmetric_input__asymmetric_kernel",
     {kTransposed, 128, {3, 5}}, {64, 64, 128, 256}, {2, 64, 4, 8}},
    {70, "70_conv_transposed_3D__asymmetric_input__square_kernel",
     {kTransposed, 24, {3, 3, 3}}, {8, 48, 96, 96, 96}, {2, 48, 4, 4, 4}},
    {71, "71_conv_transposed_2D__asymmetric_input__square_kernel",
     {kTransposed, 32, {3, 3}}, {8, 32, 512, 1024}, {2, 32, 8, 16}},
    {72, "72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_",
     {kTransposed, 32, {3, 5, 7}, {.stride = {2}, .padding = {1, 2, 3}, .output_padding = {1}, .groups = 4}},
     {8, 32, 12, 24, 48}, {2, 32, 3, 4, 6}},
    // The file's groups=4 lands in the output_padding parameter, which the module never passes on:
    // the module is ConvTranspose3d(32, 32, 3, stride=2, padding=1) with groups=1, output_padding=0.
    {73, "73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped",
     {kTransposed, 32, {3, 3, 3}, {.stride = {2}, .padding = {1}}}, {4, 32, 32, 64, 128}, {2, 32, 4, 4, 8}},
    {74, "74_conv_transposed_1D_dilated",
     {kTransposed, 64, {5}, {.dilation = {3}}}, {32, 32, 131072}, {2, 32, 64}},
    {75, "75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__",
     {kTransposed, 64, {3, 5}, {.stride = {2, 3}, .padding = {1, 2}, .dilation = {2, 1}, .groups = 4}},
     {16, 32, 128, 256}, {2, 32, 8, 16}},
    {76, "76_conv_standard_1D_dilated_strided__",
     {kConv, 128, {3}, {.stride = {3}, .dilation = {4}}}, {64, 64, 524280}, {2, 64, 120}},
    {77, "77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__",
     {kTransposed, 64, {3, 3, 3}, {.stride = {2}, .padding = {1}, .dilation = {2}}},
     {16, 32, 16, 32, 32}, {2, 32, 3, 4, 4}},
    {78, "78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__",
     {kTransposed, 32, {3, 7}, {.padding = {1, 3}}}, {8, 32, 512, 1024}, {2, 32, 8, 16}},
    {79, "79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__",
     {kTransposed, 64, {3}, {.stride = {2}, .padding = {1}, .dilation = {2}}}, {16, 32, 131072}, {2, 32, 64}},
    {80, "80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__",
     {kConv, 64, {5, 9}, {.padding = {2, 4}, .dilation = {2, 3}}}, {8, 32, 512, 512}, {1, 32, 20, 20}},
    {81, "81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__",
     {kTransposed, 64, {3, 3}, {.stride = {5}, .padding = {1}, .dilation = {2}}}, {16, 32, 64, 128}, {2, 32, 4, 8}},
    // 82-85 are depthwise: groups = in_channels = out_channels (85 ignores its out_channels and groups).
    {82, "82_conv_depthwise_2D_square_input_square_kernel",
     {kConv, 64, {3, 3}, {.groups = 64}}, {16, 64, 512, 512}, {2, 64, 16, 16}},
    {83, "83_conv_depthwise_2D_square_input_asymmetric_kernel",
     {kConv, 8, {3, 1}, {.groups = 8}}, {64, 8, 512, 512}, {2, 8, 16, 16}},
    {84, "84_conv_depthwise_2D_asymmetric_input_square_kernel",
     {kConv, 128, {3, 3}, {.groups = 128}}, {64, 128, 256, 512}, {2, 128, 8, 16}},
    {85, "85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel",
     {kConv, 128, {3, 7}, {.groups = 128}}, {32, 128, 128, 256}, {2, 128, 8, 16}},
    {87, "87_conv_pointwise_2D",
     {kConv, 128, {1, 1}}, {16, 64, 1024, 1024}, {2, 64, 16, 16}},
  };
  return tasks;
}
// clang-format on

TaskDef single_conv(const ConvTask& t) {
  TaskDef def;
  def.id = t.id;
  def.name = t.name;
  def.family = Family::conv;
  def.spec = [t](Scale s) {
    const Dims& x = s == Scale::kernelbench ? t.x_kernelbench : t.x_small;
    TaskSpec spec;
    spec.inputs = {f32("x", x)};
    spec.parameters = t.conv.parameters(x[1]);
    spec.outputs = {f32("y", t.conv.output_shape(x))};
    spec.flops = t.conv.flops(x);
    return spec;
  };
  def.make_model = [conv = t.conv](const TaskSpec& spec) {
    return with_module<torch::nn::AnyModule>(
        make_conv(conv, spec.inputs[0].shape[1]),
        [](torch::nn::AnyModule& m, const Tensors& in) { return m.forward(in[0]); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

/// Task 86: depthwise Conv2d(64, 64, 3, padding=1, groups=64) then pointwise Conv2d(64, 128, 1),
/// both without bias, as the submodules `depthwise` and `pointwise`.
TaskDef depthwise_separable() {
  const int64_t in = 64, out = 128;
  const Conv depthwise{kConv, in, {3, 3}, {.padding = {1}, .groups = in}};
  const Conv pointwise{kConv, out, {1, 1}};
  TaskDef def;
  def.id = 86;
  def.name = "86_conv_depthwise_separable_2D";
  def.family = Family::conv;
  def.spec = [=](Scale s) {
    const Dims x = s == Scale::kernelbench ? Dims{16, in, 512, 512} : Dims{2, in, 16, 16};
    const Dims mid = depthwise.output_shape(x);
    TaskSpec spec;
    spec.inputs = {f32("x", x)};
    spec.parameters = depthwise.parameters(in, "depthwise.");
    for (auto& p : pointwise.parameters(in, "pointwise.")) spec.parameters.push_back(p);
    spec.outputs = {f32("y", pointwise.output_shape(mid))};
    spec.flops = depthwise.flops(x) + pointwise.flops(mid);
    return spec;
  };
  def.make_model = [=](const TaskSpec&) {
    torch::nn::Sequential seq;
    seq->push_back("depthwise", make_conv(depthwise, in));
    seq->push_back("pointwise", make_conv(pointwise, in));
    return with_module<torch::nn::Sequential>(
        seq, [](torch::nn::Sequential& m, const Tensors& in) { return m->forward(in[0]); });
  };
  def.stress_laws = every_input(uniform(-10, 10));
  return def;
}

}  // namespace

void add_conv_tasks(TaskDefs& defs) {
  for (const auto& t : conv_tasks()) defs.push_back(single_conv(t));
  defs.push_back(depthwise_separable());
}

}  // namespace kbrl::detail
