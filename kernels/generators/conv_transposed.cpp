#include "conv_transposed.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <kbrl/error.h>

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
// Sources

std::string prelude(bool half, bool bias) {
  std::string s;
  if (half) {
    s += "#include <cuda_fp16.h>\n\n"
         "// precision=fp16_compute (unsafe): each product x * w is formed in __half; sums stay "
         "fp32.\n"
         "__device__ __forceinline__ float k_fma(float a, float b, float c) {\n"
         "  return c + __half2float(__hmul(__float2half_rn(a), __float2half_rn(b)));\n"
         "}\n";
  } else {
    s += "__device__ __forceinline__ float k_fma(float a, float b, float c) { return fmaf(a, b, c); "
         "}\n";
  }
  s += fmt::format("#define KBRL_HAS_BIAS {}\n", bias ? 1 : 0);
  s += R"(
__device__ __forceinline__ void k_store(float* p, float v, int streaming) {
  if (streaming) __stcs(p, v); else *p = v;
}
)";
  return s;
}

std::string bias_param(bool bias) { return bias ? "const float* __restrict__ bias, " : ""; }

/// The direct gather: one thread per output element in y's own order; every (ci, tap) of the
/// group is tested for (o + pad - k * dil) divisible by the stride with the quotient in range.
std::string direct_source(bool bias) {
  std::string s = "\nextern \"C\" __global__ void kbrl_convt_direct(\n"
                  "    const float* __restrict__ x, const float* __restrict__ w, " +
                  bias_param(bias) + "float* __restrict__ y,\n";
  s += R"(    long long total, long long groups, long long cin_g, long long cout_g,
    long long ID, long long IH, long long IW, long long OD, long long OH, long long OW,
    long long KD, long long KH, long long KW, long long SD, long long SH, long long SW,
    long long PD, long long PH, long long PW, long long DD, long long DH, long long DW,
    int streaming) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= total) return;
  long long r = e;
  const int ow = (int)(r % OW); r /= OW;
  const int oh = (int)(r % OH); r /= OH;
  const int od = (int)(r % OD); r /= OD;
  const long long cout = groups * cout_g;
  const long long co = r % cout;
  const long long n = r / cout;
  const long long g = co / cout_g, col = co % cout_g;
  const long long taps = KD * KH * KW;
  const long long plane = ID * IH * IW;
#if KBRL_HAS_BIAS
  float acc = bias[co];
#else
  float acc = 0.0f;
#endif
  const float* xg = x + (n * groups * cin_g + g * cin_g) * plane;
  const float* wg = w + ((g * cin_g) * cout_g + col) * taps;
  for (int kd = 0; kd < (int)KD; ++kd) {
    const int vd = od + (int)PD - kd * (int)DD;
    if (vd < 0 || vd % (int)SD != 0 || vd / (int)SD >= (int)ID) continue;
    const int id = vd / (int)SD;
    for (int kh = 0; kh < (int)KH; ++kh) {
      const int vh = oh + (int)PH - kh * (int)DH;
      if (vh < 0 || vh % (int)SH != 0 || vh / (int)SH >= (int)IH) continue;
      const int ih = vh / (int)SH;
      for (int kw = 0; kw < (int)KW; ++kw) {
        const int vw = ow + (int)PW - kw * (int)DW;
        if (vw < 0 || vw % (int)SW != 0 || vw / (int)SW >= (int)IW) continue;
        const int iw = vw / (int)SW;
        const float* xp = xg + ((long long)id * IH + ih) * IW + iw;
        const float* wp = wg + (kd * KH + kh) * KW + kw;
        for (long long ci = 0; ci < cin_g; ++ci) {
          acc = k_fma(__ldg(xp), __ldg(wp), acc);
          xp += plane;
          wp += cout_g * taps;
        }
      }
    }
  }
  k_store(y + e, acc, streaming);
}
)";
  return s;
}

/// The stride-phase-decomposed register tile. A block owns one (sample, group, tile of TC output
/// channels, phase (rd, rh, rw)) and a chunk of that phase's output positions o = r + s * m;
/// each thread accumulates TO positions (blockDim apart) x TC channels in registers. Every
/// position of a phase has the same valid taps (k with (r + pad - k * dil) divisible by s), so
/// the tap loops are uniform over the block and the input index is q + m with q per tap.
/// smem: the weights of a chunk of input channels staged as [ci][tap][TC] (float4 broadcasts);
/// otherwise they are read with __ldg at block-uniform addresses.
std::string tiled_source(bool smem, int to, int tc, bool bias) {
  std::string s = fmt::format(
      "\n#define TO {}  // output positions per thread (blockDim apart)\n"
      "#define TC {}  // output channels per thread\n"
      "#define KBRL_SMEM_WEIGHTS {}\n",
      to, tc, smem ? 1 : 0);
  s += "\nextern \"C\" __global__ void kbrl_convt_tiled(\n"
       "    const float* __restrict__ x, const float* __restrict__ w, " +
       bias_param(bias) + "float* __restrict__ y,\n";
  s += R"(    long long groups, long long cin_g, long long cout_g, long long co_tiles,
    long long ID, long long IH, long long IW, long long OD, long long OH, long long OW,
    long long KD, long long KH, long long KW, long long SD, long long SH, long long SW,
    long long PD, long long PH, long long PW, long long DD, long long DH, long long DW,
    long long cchunk, int streaming) {
#if KBRL_SMEM_WEIGHTS
  extern __shared__ float4 kbrl_smem4[];
  float* ws = reinterpret_cast<float*>(kbrl_smem4);
#endif
  const int phases = (int)(SD * SH * SW);
  const long long inner_count = groups * co_tiles * phases;
  const long long inner = (long long)blockIdx.x % inner_count;
  const long long chunk = (long long)blockIdx.x / inner_count;
  const int phase = (int)(inner % phases);
  const long long gct = inner / phases;
  const long long g = gct / co_tiles;
  const int co0 = (int)(gct % co_tiles) * TC;  // first output channel of the tile, in the group
  const int rw = phase % (int)SW, rh = (phase / (int)SW) % (int)SH, rd = phase / (int)(SW * SH);
  const int Mw = (int)((OW - rw + SW - 1) / SW), Mh = (int)((OH - rh + SH - 1) / SH),
            Md = (int)((OD - rd + SD - 1) / SD);
  const long long P = (long long)Md * Mh * Mw;  // positions of this phase
  const long long p0 = chunk * (long long)blockDim.x * TO;
  if (Mw <= 0 || Mh <= 0 || Md <= 0 || p0 >= P) return;  // uniform over the block
  const long long n = blockIdx.y;
  const int tid = threadIdx.x;

  int md[TO], mh[TO], mw[TO];
  bool live[TO];
#pragma unroll
  for (int j = 0; j < TO; ++j) {
    const long long p = p0 + (long long)j * blockDim.x + tid;
    live[j] = p < P;
    const int q = live[j] ? (int)p : 0;
    mw[j] = q % Mw;
    mh[j] = (q / Mw) % Mh;
    md[j] = q / (Mw * Mh);
  }
  float acc[TO][TC];
#pragma unroll
  for (int j = 0; j < TO; ++j)
#pragma unroll
    for (int k = 0; k < TC; ++k) acc[j][k] = 0.0f;

  const int taps = (int)(KD * KH * KW);
  const long long plane = ID * IH * IW;
  const float* xg = x + (n * groups * cin_g + g * cin_g) * plane;
  for (long long ci0 = 0; ci0 < cin_g; ci0 += cchunk) {
    const int cc = (int)min(cchunk, cin_g - ci0);
#if KBRL_SMEM_WEIGHTS
    __syncthreads();  // the previous chunk's weights are no longer read
    for (int e = tid; e < cc * taps * TC; e += blockDim.x) {
      const int k = e % TC, t = (e / TC) % taps, c = e / (TC * taps);
      ws[e] = co0 + k < cout_g
                  ? __ldg(w + (((g * cin_g + ci0 + c) * cout_g + co0 + k) * taps + t))
                  : 0.0f;
    }
    __syncthreads();
#endif
    for (int kd = 0; kd < (int)KD; ++kd) {
      const int vd = rd + (int)PD - kd * (int)DD;
      if (vd % (int)SD != 0) continue;
      const int qd = vd / (int)SD;
      for (int kh = 0; kh < (int)KH; ++kh) {
        const int vh = rh + (int)PH - kh * (int)DH;
        if (vh % (int)SH != 0) continue;
        const int qh = vh / (int)SH;
        for (int kw = 0; kw < (int)KW; ++kw) {
          const int vw = rw + (int)PW - kw * (int)DW;
          if (vw % (int)SW != 0) continue;
          const int qw = vw / (int)SW;
          const int t = (kd * (int)KH + kh) * (int)KW + kw;
          int off[TO];
          bool ok[TO];
#pragma unroll
          for (int j = 0; j < TO; ++j) {
            const int id = qd + md[j], ih = qh + mh[j], iw = qw + mw[j];
            ok[j] = live[j] && id >= 0 && id < (int)ID && ih >= 0 && ih < (int)IH && iw >= 0 &&
                    iw < (int)IW;
            off[j] = ok[j] ? (id * (int)IH + ih) * (int)IW + iw : 0;
          }
          const float* xc = xg + ci0 * plane;
#if KBRL_SMEM_WEIGHTS
          const float* wc = ws + t * TC;
#else
          const float* wc = w + ((g * cin_g + ci0) * cout_g + co0) * taps + t;
#endif
          for (int c = 0; c < cc; ++c) {
            float xv[TO];
#pragma unroll
            for (int j = 0; j < TO; ++j) xv[j] = ok[j] ? __ldg(xc + off[j]) : 0.0f;
            float wv[TC];
#if KBRL_SMEM_WEIGHTS
#if TC % 4 == 0
#pragma unroll
            for (int k = 0; k < TC; k += 4) {
              const float4 q = *reinterpret_cast<const float4*>(wc + k);
              wv[k] = q.x; wv[k + 1] = q.y; wv[k + 2] = q.z; wv[k + 3] = q.w;
            }
#else
#pragma unroll
            for (int k = 0; k < TC; ++k) wv[k] = wc[k];
#endif
            wc += taps * TC;
#else
#pragma unroll
            for (int k = 0; k < TC; ++k) wv[k] = co0 + k < cout_g ? __ldg(wc + k * taps) : 0.0f;
            wc += cout_g * taps;
#endif
#pragma unroll
            for (int j = 0; j < TO; ++j)
#pragma unroll
              for (int k = 0; k < TC; ++k) acc[j][k] = k_fma(xv[j], wv[k], acc[j][k]);
            xc += plane;
          }
        }
      }
    }
  }

  const long long oplane = OD * OH * OW;
#pragma unroll
  for (int k = 0; k < TC; ++k) {
    const long long co = g * cout_g + co0 + k;
    if (co0 + k >= cout_g) break;
#if KBRL_HAS_BIAS
    const float b = bias[co];
#else
    const float b = 0.0f;
#endif
    float* yc = y + (n * groups * cout_g + co) * oplane;
#pragma unroll
    for (int j = 0; j < TO; ++j) {
      if (!live[j]) continue;
      const int od = rd + (int)SD * md[j], oh = rh + (int)SH * mh[j], ow = rw + (int)SW * mw[j];
      k_store(yc + ((long long)od * OH + oh) * OW + ow, acc[j][k] + b, streaming);
    }
  }
}
)";
  return s;
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
    candidate.source = fmt::format(
        "// kbrl conv_transposed generator: gather formulation, shapes as kernel arguments.\n"
        "// variant={} items_per_thread={} tile_n={} precision={}\n",
        variant, to, tc, config.at("precision"));
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
