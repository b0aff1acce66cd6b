#include "conv_transposed.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "family_common.h"

namespace kbrl {
namespace {

using Dim3i = std::array<int64_t, 3>;  // (depth, height, width); 1-d and 2-d tasks pad with unit dims

/// A task's constructor options (reference/tasks_conv.cpp, quirks included), in (d, h, w) order
/// with unit leading dims for 1-d and 2-d tasks. Kernel sizes and channel counts come from the
/// spec's weight shape; output_padding only changes the output size, which the spec gives.
struct ConvTTask {
  int id;
  int dims;  // spatial dims of the module
  Dim3i stride;
  Dim3i padding;
  Dim3i dilation;
  Dim3i output_padding;
  int64_t groups;
};

// clang-format off
constexpr ConvTTask kTasks[] = {
    {57, 2, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {58, 3, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {61, 3, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {64, 1, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {65, 2, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {68, 3, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {69, 2, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {70, 3, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {71, 2, {1, 1, 1}, {0, 0, 0}, {1, 1, 1}, {0, 0, 0}, 1},
    {72, 3, {2, 2, 2}, {1, 2, 3}, {1, 1, 1}, {1, 1, 1}, 4},
    // The file's groups=4 never reaches the module: groups=1, output_padding=0.
    {73, 3, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 1},
    {74, 1, {1, 1, 1}, {0, 0, 0}, {1, 1, 3}, {0, 0, 0}, 1},
    {75, 2, {1, 2, 3}, {0, 1, 2}, {1, 2, 1}, {0, 0, 0}, 4},
    {77, 3, {2, 2, 2}, {1, 1, 1}, {2, 2, 2}, {0, 0, 0}, 1},
    {78, 2, {1, 1, 1}, {0, 1, 3}, {1, 1, 1}, {0, 0, 0}, 1},
    {79, 1, {1, 1, 2}, {0, 0, 1}, {1, 1, 2}, {0, 0, 0}, 1},
    {81, 2, {1, 5, 5}, {0, 1, 1}, {1, 2, 2}, {0, 0, 0}, 1},
};
// clang-format on

const ConvTTask* find_task(int task_id) { return find_entry(kTasks, &ConvTTask::id, task_id); }

/// Everything the kernels need, checked against the spec.
struct Geometry {
  int64_t n = 0, groups = 1, cin_g = 0, cout_g = 0;
  Dim3i in{}, out{}, kernel{}, stride{}, padding{}, dilation{};
  bool bias = false;

  int64_t phases() const { return stride[0] * stride[1] * stride[2]; }
  int64_t taps() const { return kernel[0] * kernel[1] * kernel[2]; }
  int64_t in_plane() const { return in[0] * in[1] * in[2]; }
  int64_t out_plane() const { return out[0] * out[1] * out[2]; }
  /// Output positions of phase 0 (the largest phase): ceil(O / s) per dim.
  int64_t max_phase_positions() const {
    int64_t p = 1;
    for (int i = 0; i < 3; ++i) p *= (out[i] + stride[i] - 1) / stride[i];
    return p;
  }
};

const ConvTTask& task_of(const TaskSpec& task) {
  const ConvTTask* t = find_task(task.id);
  check_covered(t != nullptr, "conv_transposed", task);
  return *t;
}

Geometry geometry_of(const TaskSpec& task) {
  const ConvTTask& t = task_of(task);
  const size_t rank = static_cast<size_t>(t.dims) + 2;
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.outputs.size() == 1 &&
                       (task.parameters.size() == 1 || task.parameters.size() == 2) &&
                       task.inputs[0].shape.size() == rank && task.outputs[0].shape.size() == rank &&
                       task.parameters[0].shape.size() == rank,
                   "task {}: the conv_transposed generator expects y = conv_transpose{}d(x, weight"
                   "[, bias])",
                   task.id, t.dims);
  const auto& x = task.inputs[0].shape;
  const auto& w = task.parameters[0].shape;
  const auto& y = task.outputs[0].shape;
  Geometry g;
  g.n = x[0];
  g.groups = t.groups;
  g.cin_g = x[1] / t.groups;
  g.cout_g = w[1];
  g.stride = t.stride;
  g.padding = t.padding;
  g.dilation = t.dilation;
  const int lead = 3 - t.dims;
  for (int i = 0; i < 3; ++i) {
    g.in[i] = i < lead ? 1 : x[2 + i - lead];
    g.kernel[i] = i < lead ? 1 : w[2 + i - lead];
    g.out[i] = i < lead ? 1 : y[2 + i - lead];
  }
  KBRL_CHECK_INPUT(x[1] % t.groups == 0 && w[0] == x[1] && y[0] == x[0] &&
                       y[1] == g.cout_g * t.groups,
                   "task {}: channels do not match ConvTranspose{}d(groups={})", task.id, t.dims,
                   t.groups);
  for (int i = 0; i < 3; ++i) {
    const int64_t expect = (g.in[i] - 1) * g.stride[i] - 2 * g.padding[i] +
                           g.dilation[i] * (g.kernel[i] - 1) + t.output_padding[i] + 1;
    KBRL_CHECK_INPUT(g.out[i] == expect, "task {}: output dim {} is {}, the options give {}",
                     task.id, i, g.out[i], expect);
  }
  g.bias = task.parameters.size() == 2;
  if (g.bias)
    KBRL_CHECK_INPUT(task.parameters[1].shape == std::vector<int64_t>{y[1]},
                     "task {}: bias is not [C_out]", task.id);
  // Offsets inside one channel plane are 32-bit in the kernels; everything above is 64-bit.
  KBRL_CHECK_INPUT(g.in_plane() < (int64_t{1} << 31) && g.out_plane() < (int64_t{1} << 31),
                   "task {}: a spatial plane of 2^31 or more elements", task.id);
  return g;
}

// ---------------------------------------------------------------------------------------------
// Sources (device code: cuda/conv_transposed.cuh)

constexpr const char* kCudaFile = "conv_transposed.cuh";

/// The multiply-add, KBRL_HAS_BIAS and the store.
std::string prelude(bool half, bool bias) {
  std::string s = cuda_text::section(kCudaFile, half ? "k_fma_fp16" : "k_fma_fp32");
  s += fmt::format("#define KBRL_HAS_BIAS {}\n", bias ? 1 : 0);
  return s + cuda_text::section(kCudaFile, "k_store");
}

/// The bias pointer among the kernel's parameters, when the task has one.
std::string bias_param(bool bias) {
  return bias ? cuda_text::section(kCudaFile, "bias_param") : std::string();
}

/// The direct gather: one thread per output element in y's own order; every (ci, tap) of the
/// group is tested for (o + pad - k * dil) divisible by the stride with the quotient in range.
std::string direct_source(bool bias) {
  return cuda_text::fill(kCudaFile, "direct", {{"BIAS_PARAM", bias_param(bias)}});
}

/// The stride-phase-decomposed register tile. A block owns one (sample, group, tile of TC output
/// channels, phase (rd, rh, rw)) and a chunk of that phase's output positions o = r + s * m;
/// each thread accumulates TO positions (blockDim apart) x TC channels in registers. Every
/// position of a phase has the same valid taps (k with (r + pad - k * dil) divisible by s), so
/// the tap loops are uniform over the block and the input index is q + m with q per tap.
/// smem: the weights of a chunk of input channels staged as [ci][tap][TC] (float4 broadcasts);
/// otherwise they are read with __ldg at block-uniform addresses.
std::string tiled_source(bool smem, int to, int tc, bool bias) {
  return cuda_text::fill(kCudaFile, "tiled_defines",
                         {{"TO", std::to_string(to)},
                          {"TC", std::to_string(tc)},
                          {"SMEM", smem ? "1" : "0"}}) +
         cuda_text::fill(kCudaFile, "tiled", {{"BIAS_PARAM", bias_param(bias)}});
}

// ---------------------------------------------------------------------------------------------

/// Floats of staged weights a block may hold (48 KiB: no opt-in needed).
constexpr int64_t kSmemFloats = 12288;

bool is_tiled(const std::string& variant) { return variant != "direct"; }

class ConvTransposedGenerator final : public Generator {
 public:
  std::string_view name() const override { return "conv_transposed"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const Geometry geo = geometry_of(task);
    // Channels are the same at every scale, so the bound depends on the task id only.
    const int64_t max_tile_n = std::max<int64_t>(4, geo.cout_g);
    KnobSpace space;
    space
        .add_knob({"variant", {"direct", "tiled_smem", "tiled_global"},
                   "direct: one thread per output element in y's order, every tap tested for "
                   "divisibility by the stride; tiled_smem: stride-phase decomposition with a "
                   "register tile of items_per_thread positions x tile_n output channels, weights "
                   "staged in shared memory; tiled_global: the same tile, weights read with __ldg "
                   "at block-uniform addresses"})
        .add_knob({"block", {"64", "128", "256"}, "threads per block"})
        .add_knob({"items_per_thread", {"1", "2", "4", "8"},
                   "output positions per thread (blockDim apart within a stride phase)"})
        .add_knob({"tile_n", {"1", "4", "8", "16"}, "output channels per thread"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: y stored with __stcs (evict first)"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): each product x * w formed in __half (sums stay fp32)"});
    space.add_constraint({"variant=direct computes one element per thread: items_per_thread=1, "
                          "tile_n=1",
                          {"variant", "items_per_thread", "tile_n"},
                          [](const Config& c) {
                            return is_tiled(c.at("variant")) ||
                                   (c.integer("items_per_thread") == 1 && c.integer("tile_n") == 1);
                          }});
    space.add_constraint(
        {fmt::format("tile_n <= max(4, C_out / groups) = {}", max_tile_n),
         {"tile_n"},
         [max_tile_n](const Config& c) { return c.integer("tile_n") <= max_tile_n; }});
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const Geometry geo = geometry_of(task);
    const Config config = checked_config(space(task), given);

    const std::string variant = config.at("variant");
    const int64_t block = config.integer("block");
    const int to = static_cast<int>(config.integer("items_per_thread"));
    const int tc = static_cast<int>(config.integer("tile_n"));
    const bool half = config.at("precision") == "fp16_compute";
    const int streaming = config.at("cache_hint") == "streaming" ? 1 : 0;

    Candidate candidate;
    candidate.task_id = task.id;
    // No task id in the source: shapes are kernel arguments, so tasks share compile units.
    candidate.source = cuda_text::fill(kCudaFile, "header",
                                       {{"VARIANT", variant},
                                        {"ITEMS", std::to_string(to)},
                                        {"TILE_N", std::to_string(tc)},
                                        {"PRECISION", config.at("precision")}});
    candidate.source += prelude(half, geo.bias);

    Launch launch;
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::parameter, 0}};
    if (geo.bias) launch.args.push_back(KernelArg{ArgKind::parameter, 1});
    launch.args.push_back(KernelArg{ArgKind::output, 0});

    if (!is_tiled(variant)) {
      candidate.source += direct_source(geo.bias);
      const int64_t total = task.outputs[0].numel();
      const int64_t grid = std::max<int64_t>(1, (total + block - 1) / block);
      launch.kernel = "kbrl_convt_direct";
      launch.grid = {grid_dim(grid, task.id), 1, 1};
      launch.args.push_back(i64_arg(total));
      launch.args.push_back(i64_arg(geo.groups));
      launch.args.push_back(i64_arg(geo.cin_g));
      launch.args.push_back(i64_arg(geo.cout_g));
    } else {
      const bool smem = variant == "tiled_smem";
      candidate.source += tiled_source(smem, to, tc, geo.bias);
      const int64_t co_tiles = (geo.cout_g + tc - 1) / tc;
      const int64_t chunks =
          std::max<int64_t>(1, (geo.max_phase_positions() + block * to - 1) / (block * to));
      const int64_t grid = chunks * geo.groups * co_tiles * geo.phases();
      KBRL_CHECK_INPUT(grid <= 2147483647 && geo.n <= 65535,
                       "task {}: {} x {} blocks exceed CUDA's grid limits", task.id, grid, geo.n);
      // Input channels whose weights (all taps, tile_n channels) fit in the staging buffer.
      const int64_t per_channel = geo.taps() * tc;
      const int64_t cchunk =
          smem ? std::clamp<int64_t>(kSmemFloats / per_channel, 1, geo.cin_g) : geo.cin_g;
      launch.kernel = "kbrl_convt_tiled";
      launch.grid = {static_cast<uint32_t>(grid), static_cast<uint32_t>(geo.n), 1};
      launch.shared_bytes = smem ? static_cast<uint32_t>(cchunk * per_channel * 4) : 0;
      launch.args.push_back(i64_arg(geo.groups));
      launch.args.push_back(i64_arg(geo.cin_g));
      launch.args.push_back(i64_arg(geo.cout_g));
      launch.args.push_back(i64_arg(co_tiles));
      // the trailing cchunk goes after the geometry (below)
      for (const Dim3i* v : {&geo.in, &geo.out, &geo.kernel, &geo.stride, &geo.padding,
                             &geo.dilation})
        for (int64_t e : *v) launch.args.push_back(i64_arg(e));
      launch.args.push_back(i64_arg(cchunk));
      launch.args.push_back(i32_arg(streaming));
      candidate.launches.push_back(std::move(launch));
      return candidate;
    }
    for (const Dim3i* v :
         {&geo.in, &geo.out, &geo.kernel, &geo.stride, &geo.padding, &geo.dilation})
      for (int64_t e : *v) launch.args.push_back(i64_arg(e));
    launch.args.push_back(i32_arg(streaming));
    candidate.launches.push_back(std::move(launch));
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    const Geometry geo = geometry_of(task);
    // Phase decomposition (only the taps a phase needs), weights broadcast from shared memory as
    // float4, a 4 x 16 register tile (64 accumulators: 16 FMAs per load), 128 threads, plain
    // stores (strided phases write interleaved parts of the same lines; L2 merges them).
    const std::string tile_n = geo.cout_g >= 16 ? "16" : "8";
    return Config{{"variant", "tiled_smem"}, {"block", "128"},     {"items_per_thread", "4"},
                  {"tile_n", tile_n},        {"cache_hint", "none"}, {"precision", "fp32"}};
  }
};

}  // namespace

const Generator& conv_transposed_generator() {
  static const ConvTransposedGenerator generator;
  return generator;
}

}  // namespace kbrl
