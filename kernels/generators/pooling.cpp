#include "pooling.h"

#include <algorithm>
#include <array>
#include <string>

#include <kbrl/error.h>

#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

/// One task's pooling: the window is the same along every spatial dimension.
struct PoolOp {
  int task_id;
  int nd;        // spatial dimensions
  bool is_max;   // max pooling; average pooling otherwise
  int kernel;
  int stride;
  int padding;
  int dilation;
  int tile_w;    // smem_tile's tile width in outputs (2-d and 3-d; 1-d uses block * items)
  bool row_taps; // smem_tile stages one row tap at a time (windows that do not overlap along h)
};

constexpr PoolOp kOps[] = {
    {41, 1, true, 8, 1, 4, 3, 0, false},     {42, 2, true, 4, 1, 1, 1, 128, false},
    {43, 3, true, 3, 2, 1, 3, 64, false},    {44, 1, false, 8, 1, 4, 1, 0, false},
    {45, 2, false, 11, 11, 0, 1, 32, true},  {46, 3, false, 3, 2, 1, 1, 64, false},
};

/// The most shared memory smem_tile may stage (one depth tap's region).
constexpr int64_t kMaxRegionBytes = 128 * 1024;

const PoolOp* find_op(int task_id) { return find_entry(kOps, &PoolOp::task_id, task_id); }

const PoolOp& op_of(const TaskSpec& task) {
  const PoolOp* op = find_op(task.id);
  check_covered(op != nullptr, "pooling", task);
  const size_t rank = static_cast<size_t>(op->nd) + 2;
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.inputs[0].shape.size() == rank &&
                       task.outputs.size() == 1 && task.outputs[0].shape.size() == rank,
                   "task {}: the pooling generator expects y = pool(x) over a {}-d x", task.id,
                   rank);
  return *op;
}

/// The window along each of (d, h, w): dimensions the task does not have get a window of 1.
struct Axis {
  int k = 1, s = 1, p = 0, d = 1;
};

Axis axis(const PoolOp& op, int which) {  // which: 0 = d, 1 = h, 2 = w
  if (which < 3 - op.nd) return {};
  return {op.kernel, op.stride, op.padding, op.is_max ? op.dilation : 1};
}

/// smem_tile's tile: TW x TH outputs, and the staged region of one depth tap.
struct Tile {
  int64_t tw = 0, th = 0, tw_log2 = 0;
  int64_t region_h = 0, region_w = 0;
  int64_t bytes() const { return region_h * region_w * 4; }
};

Tile tile_of(const PoolOp& op, int64_t block, int64_t items) {
  Tile t;
  t.tw = op.nd == 1 ? block * items : std::min<int64_t>(op.tile_w, block * items);
  t.th = block * items / t.tw;
  while ((int64_t{1} << t.tw_log2) < t.tw) ++t.tw_log2;
  const Axis h = axis(op, 1), w = axis(op, 2);
  t.region_h = op.row_taps ? t.th : (t.th - 1) * h.s + (h.k - 1) * h.d + 1;
  t.region_w = (t.tw - 1) * w.s + (w.k - 1) * w.d + 1;
  return t;
}

/// The spatial extents as (d, h, w), 1 for dimensions the task does not have.
std::array<int64_t, 3> dhw(const std::vector<int64_t>& shape) {
  std::array<int64_t, 3> r = {1, 1, 1};
  const size_t nd = shape.size() - 2;
  for (size_t i = 0; i < nd; ++i) r[3 - nd + i] = shape[2 + i];
  return r;
}

std::string prelude(const PoolOp& op, bool half, bool fast) {
  std::string s;
  if (half) s += "#include <cuda_fp16.h>\n";
  s += "\n#define KBRL_NEG_INF (__int_as_float(0xff800000))\n";
  for (int a = 0; a < 3; ++a) {
    const Axis x = axis(op, a);
    const char* n = a == 0 ? "D" : a == 1 ? "H" : "W";
    s += fmt::format("constexpr int K{0} = {1}, S{0} = {2}, P{0} = {3}, L{0} = {4};  // kernel, stride, "
                     "padding, dilation\n",
                     n, x.k, x.s, x.p, x.d);
  }
  if (half) {
    s += "// precision=fp16_compute (unsafe): the reduction runs on __half values.\n"
         "typedef __half acc_t;\n";
    if (op.is_max)
      s += "__device__ __forceinline__ acc_t acc_init() { return __ushort_as_half((unsigned short)0xfc00u); }\n"
           "__device__ __forceinline__ void acc_add(acc_t& a, float v) {\n"
           "  const __half h = __float2half(v);\n"
           "  if (__hgt(h, a) || __hisnan(h)) a = h;\n"
           "}\n"
           "__device__ __forceinline__ float acc_finish(acc_t a, float) { return __half2float(a); }\n";
    else
      s += "__device__ __forceinline__ acc_t acc_init() { return __float2half(0.0f); }\n"
           "__device__ __forceinline__ void acc_add(acc_t& a, float v) { a = __hadd(a, __float2half(v)); }\n"
           "__device__ __forceinline__ float acc_finish(acc_t a, float div) { return __half2float(a) / div; }\n";
  } else {
    s += "typedef float acc_t;\n";
    if (op.is_max)
      s += "__device__ __forceinline__ acc_t acc_init() { return KBRL_NEG_INF; }\n"
           "// torch's rule: the first of equal values stays, a NaN replaces the maximum and stays.\n"
           "__device__ __forceinline__ void acc_add(acc_t& a, float v) { if (v > a || v != v) a = v; }\n"
           "__device__ __forceinline__ float acc_finish(acc_t a, float) { return a; }\n";
    else if (fast)
      s += "// fast_math=on (unsafe): __fdividef, and the whole unit under --use_fast_math.\n"
           "__device__ __forceinline__ acc_t acc_init() { return 0.0f; }\n"
           "__device__ __forceinline__ void acc_add(acc_t& a, float v) { a += v; }\n"
           "__device__ __forceinline__ float acc_finish(acc_t a, float div) { return __fdividef(a, div); }\n";
    else
      s += "__device__ __forceinline__ acc_t acc_init() { return 0.0f; }\n"
           "__device__ __forceinline__ void acc_add(acc_t& a, float v) { a += v; }\n"
           "__device__ __forceinline__ float acc_finish(acc_t a, float div) { return a / div; }\n";
  }
  // The value padding stands for in a staged region: the reduction's identity.
  s += fmt::format("#define KBRL_PAD_VALUE {}\n", op.is_max ? "KBRL_NEG_INF" : "0.0f");
  if (op.is_max) {
    s += "__device__ __forceinline__ float pool_divisor(long long, long long, long long, long long, "
         "long long, long long) { return 1.0f; }\n";
  } else {
    s += R"(
// torch's count_include_pad divisor: the window clipped to the padded input, per axis.
__device__ __forceinline__ long long axis_size(long long o, int k, int s, int p, long long n) {
  const long long start = o * s - p;
  const long long end = min(start + k, n + p);
  return end - start;
}
__device__ __forceinline__ float pool_divisor(long long od, long long oh, long long ow, long long ID,
                                              long long IH, long long IW) {
  return (float)(axis_size(od, KD, SD, PD, ID) * axis_size(oh, KH, SH, PH, IH) *
                 axis_size(ow, KW, SW, PW, IW));
}
)";
  }
  s += R"(
// a / b with a 32-bit division when a fits (b always does).
__device__ __forceinline__ unsigned long long kbrl_div(unsigned long long a, unsigned long long b) {
  return (a >> 32) == 0 ? (unsigned long long)((unsigned)a / (unsigned)b) : a / b;
}
)";
  return s;
}

std::string direct_kernel(const PoolOp& op, int64_t items, const std::string& hint,
                          bool safe_tail) {
  std::string s = fmt::format("\nconstexpr int kItems = {};\n", items);
  s += R"(
// One output: its (plane, od, oh, ow) from the flat index, then the window in (d, h, w) order.
__device__ __forceinline__ float pool_one(const float* __restrict__ x, unsigned long long e,
                                          long long ID, long long IH, long long IW, long long OD,
                                          long long OH, long long OW) {
  unsigned long long q = kbrl_div(e, (unsigned long long)OW);
  const long long ow = (long long)(e - q * (unsigned long long)OW);
  long long oh = 0, od = 0;
)";
  if (op.nd >= 2)
    s += "  { const unsigned long long r = kbrl_div(q, (unsigned long long)OH);\n"
         "    oh = (long long)(q - r * (unsigned long long)OH); q = r; }\n";
  if (op.nd >= 3)
    s += "  { const unsigned long long r = kbrl_div(q, (unsigned long long)OD);\n"
         "    od = (long long)(q - r * (unsigned long long)OD); q = r; }\n";
  s += R"(  const float* __restrict__ xp = x + (long long)q * (ID * IH * IW);
  const long long d0 = od * SD - PD, h0 = oh * SH - PH, w0 = ow * SW - PW;
  acc_t acc = acc_init();
#pragma unroll
  for (int kd = 0; kd < KD; ++kd) {
    const long long id = d0 + kd * LD;
    if (id < 0 || id >= ID) continue;
#pragma unroll
    for (int kh = 0; kh < KH; ++kh) {
      const long long ih = h0 + kh * LH;
      if (ih < 0 || ih >= IH) continue;
      const float* __restrict__ row = xp + (id * IH + ih) * IW;
#pragma unroll
      for (int kw = 0; kw < KW; ++kw) {
        const long long iw = w0 + kw * LW;
        if (iw >= 0 && iw < IW) acc_add(acc, row[iw]);
      }
    }
  }
  return acc_finish(acc, pool_divisor(od, oh, ow, ID, IH, IW));
}

extern "C" __global__ void kbrl_pool(const float* __restrict__ x, float* __restrict__ y,
                                     long long planes, long long ID, long long IH, long long IW,
                                     long long OD, long long OH, long long OW) {
  const unsigned long long total = (unsigned long long)(planes * OD * OH * OW);
  const unsigned long long tile = (unsigned long long)blockDim.x * kItems;
  const unsigned long long stride = (unsigned long long)gridDim.x * tile;
  for (unsigned long long base = (unsigned long long)blockIdx.x * tile; base < total; base += stride) {
    if (base + tile <= total) {
      float r[kItems];
#pragma unroll
      for (int k = 0; k < kItems; ++k)
        r[k] = pool_one(x, base + (unsigned long long)k * blockDim.x + threadIdx.x, ID, IH, IW, OD, OH, OW);
#pragma unroll
      for (int k = 0; k < kItems; ++k)
        )";
  s += store_expr(hint, "y + base + (unsigned long long)k * blockDim.x + threadIdx.x", "r[k]");
  s += ";\n    }";
  if (safe_tail) {
    s += " else {  // the last, partial tile\n"
         "      for (unsigned long long e = base + threadIdx.x; e < total; e += blockDim.x)\n"
         "        " + store_expr(hint, "y + e", "pool_one(x, e, ID, IH, IW, OD, OH, OW)") + ";\n"
         "    }\n";
  } else {
    s += "  // tail=dropped: a partial last tile is never written\n";
  }
  s += "  }\n}\n";
  return s;
}

std::string tile_kernel(const PoolOp& op, int64_t items, const std::string& hint,
                        bool safe_tail) {
  std::string s = fmt::format("\nconstexpr int kItems = {};\n", items);
  if (op.row_taps)
    s += R"(
// A block computes a TH x TW tile of outputs of one (plane, od) slice, TW = 2^tw_log2 and
// TH = blockDim.x * kItems / TW. The windows do not overlap along h, so the tile's input is staged
// one (depth, row) tap at a time: the TH input rows of that tap, RW wide (padding stored as the
// identity), in shared memory; each thread reduces kItems outputs from it.
)";
  else
    s += R"(
// A block computes a TH x TW tile of outputs of one (plane, od) slice, TW = 2^tw_log2 and
// TH = blockDim.x * kItems / TW. For each depth tap the input region of the tile (RH x RW, padding
// stored as the identity) is staged in shared memory; each thread reduces kItems outputs from it.
)";
  s += R"(extern "C" __global__ void kbrl_pool_tile(const float* __restrict__ x, float* __restrict__ y,
                                          long long planes, long long ID, long long IH, long long IW,
                                          long long OD, long long OH, long long OW,
                                          long long tw_log2) {
  extern __shared__ float region[];
  const int TW = 1 << tw_log2;
  const int TH = (int)((blockDim.x * kItems) >> tw_log2);
)";
  s += op.row_taps ? "  const int RH = TH;\n" : "  const int RH = (TH - 1) * SH + (KH - 1) * LH + 1;\n";
  s += R"(  const int RW = (TW - 1) * SW + (KW - 1) * LW + 1;
  const int RN = RH * RW;
  const long long tiles_w = (OW + TW - 1) >> tw_log2;
  const long long tiles_h = (OH + TH - 1) / TH;
  const long long tiles = planes * OD * tiles_h * tiles_w;
  for (long long t = blockIdx.x; t < tiles; t += gridDim.x) {
    long long r = t;
    const long long tw_i = r % tiles_w;
    r /= tiles_w;
    const long long th_i = r % tiles_h;
    r /= tiles_h;
    const long long od = r % OD;
    const long long plane = r / OD;
    const long long oh0 = th_i * TH, ow0 = tw_i << tw_log2;
)";
  if (!safe_tail)
    s += "    if (oh0 + TH > OH || ow0 + TW > OW) continue;  // tail=dropped: partial tiles are never written\n";
  s += R"(    const long long ih0 = oh0 * SH - PH, iw0 = ow0 * SW - PW;
    acc_t acc[kItems];
#pragma unroll
    for (int k = 0; k < kItems; ++k) acc[k] = acc_init();
#pragma unroll
    for (int kd = 0; kd < KD; ++kd) {
      const long long id = od * SD - PD + kd * LD;
      if (id < 0 || id >= ID) continue;  // the same for the whole block
      const float* __restrict__ xp = x + (plane * ID + id) * IH * IW;
)";
  if (op.row_taps) {
    s += R"(#pragma unroll 1
      for (int kh = 0; kh < KH; ++kh) {
        __syncthreads();  // the previous region is no longer read
#pragma unroll 4
        for (int i = threadIdx.x; i < RN; i += blockDim.x) {
          const int rh = (int)((unsigned)i / (unsigned)RW);
          const int rw = i - rh * RW;
          const long long ih = ih0 + kh * LH + (long long)rh * SH, iw = iw0 + rw;
          region[i] = (ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? xp[ih * IW + iw] : KBRL_PAD_VALUE;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < kItems; ++k) {
          const int q = threadIdx.x + k * blockDim.x;
          const int th = q >> tw_log2, tw = q & (TW - 1);
          const float* rp = region + th * RW + tw * SW;
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) acc_add(acc[k], rp[kw * LW]);
        }
      }
    }
)";
  } else {
    s += R"(      __syncthreads();  // the previous region is no longer read
#pragma unroll 4
      for (int i = threadIdx.x; i < RN; i += blockDim.x) {
        const int rh = (int)((unsigned)i / (unsigned)RW);
        const int rw = i - rh * RW;
        const long long ih = ih0 + rh, iw = iw0 + rw;
        region[i] = (ih >= 0 && ih < IH && iw >= 0 && iw < IW) ? xp[ih * IW + iw] : KBRL_PAD_VALUE;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kItems; ++k) {
        const int q = threadIdx.x + k * blockDim.x;
        const int th = q >> tw_log2, tw = q & (TW - 1);
        const float* rp = region + th * SH * RW + tw * SW;
#pragma unroll
        for (int kh = 0; kh < KH; ++kh)
#pragma unroll
          for (int kw = 0; kw < KW; ++kw) acc_add(acc[k], rp[kh * LH * RW + kw * LW]);
      }
    }
)";
  }
  s += R"(#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int q = threadIdx.x + k * blockDim.x;
      const long long oh = oh0 + (q >> tw_log2), ow = ow0 + (q & (TW - 1));
      if (oh < OH && ow < OW)
        )";
  s += store_expr(hint, "y + ((plane * OD + od) * OH + oh) * OW + ow",
             "acc_finish(acc[k], pool_divisor(od, oh, ow, ID, IH, IW))");
  s += ";\n    }\n  }\n}\n";
  return s;
}

std::string source_of(const TaskSpec& task, const PoolOp& op, const Config& config) {
  const bool tile = config.at("variant") == "smem_tile";
  const int64_t items = config.integer("items_per_thread");
  const std::string hint = config.at("cache_hint");
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.at("fast_math") == "on";
  const bool safe_tail = config.at("tail") == "safe";
  std::string s = fmt::format(
      "// kbrl pooling generator: task {} ({}), {} pooling in {}-d: kernel {}, stride {}, padding "
      "{}, dilation {}.\n"
      "// variant={} items_per_thread={} cache_hint={} precision={} fast_math={} tail={}\n",
      task.id, task.name, op.is_max ? "max" : "average", op.nd, op.kernel, op.stride, op.padding,
      op.is_max ? op.dilation : 1, config.at("variant"), items, config.at("cache_hint"),
      config.at("precision"), config.at("fast_math"), config.at("tail"));
  s += prelude(op, half, fast);
  s += tile ? tile_kernel(op, items, hint, safe_tail) : direct_kernel(op, items, hint, safe_tail);
  return s;
}

class PoolingGenerator final : public Generator {
 public:
  std::string_view name() const override { return "pooling"; }
  bool covers(int task_id) const override { return find_op(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const PoolOp& op = op_of(task);
    KnobSpace space;
    space
        .add_knob({"variant", {"direct", "smem_tile"},
                   "direct: a flat grid-stride over the outputs, the window read from global memory "
                   "(reuse through L1); smem_tile: a block stages its tile's input region in shared "
                   "memory for each depth tap and reduces from there"})
        .add_knob({"block", {"128", "256", "512"}, "threads per block"})
        .add_knob({"items_per_thread", {"1", "2", "4"},
                   "outputs per thread, block-strided along the innermost dimension"})
        .add_knob({"grid", {"exact", "waves"},
                   "exact: one tile per block; waves: at most two waves of resident threads of an "
                   "H100 (132 SMs), grid-stride over the tiles"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: outputs stored with __stcs (evict first)"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): the max / the sum is taken on __half values"})
        .add_knob({"fast_math", {"off", "on"},
                   "on (unsafe): __fdividef for the division by the window size and "
                   "--use_fast_math"})
        .add_knob({"tail", {"safe", "dropped"},
                   "dropped (unsafe): a tile partly outside the output is never written"});
    const PoolOp* opp = &op;
    space.add_constraint({"smem_tile's staged region (one depth tap of the tile's input) is at most "
                          "128 KiB",
                          {"variant", "block", "items_per_thread"},
                          [opp](const Config& c) {
                            if (c.at("variant") != "smem_tile") return true;
                            return tile_of(*opp, c.integer("block"), c.integer("items_per_thread"))
                                       .bytes() <= kMaxRegionBytes;
                          }});
    if (op.is_max) {
      space.add_constraint({"fast_math=off: max pooling has no arithmetic for fast-math to "
                            "approximate",
                            {"fast_math"},
                            [](const Config& c) { return c.at("fast_math") == "off"; }});
    } else {
      space.add_constraint(fast_math_needs_fp32());
    }
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const PoolOp& op = op_of(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t items = config.integer("items_per_thread");
    const bool tile = config.at("variant") == "smem_tile";
    const auto in = dhw(task.inputs[0].shape);
    const auto out = dhw(task.outputs[0].shape);
    const int64_t planes = task.inputs[0].shape[0] * task.inputs[0].shape[1];

    Launch launch;
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::output, 0}, i64_arg(planes),
                   i64_arg(in[0]),  i64_arg(in[1]),  i64_arg(in[2]),
                   i64_arg(out[0]), i64_arg(out[1]), i64_arg(out[2])};
    int64_t grid = 0;
    if (tile) {
      const Tile t = tile_of(op, block, items);
      const int64_t tiles_w = (out[2] + t.tw - 1) / t.tw;
      const int64_t tiles_h = (out[1] + t.th - 1) / t.th;
      grid = planes * out[0] * tiles_h * tiles_w;
      launch.kernel = "kbrl_pool_tile";
      launch.shared_bytes = static_cast<uint32_t>(t.bytes());
      launch.args.push_back(i64_arg(t.tw_log2));
    } else {
      const int64_t total = task.outputs[0].numel();
      const int64_t per_block = block * items;
      grid = (total + per_block - 1) / per_block;
      launch.kernel = "kbrl_pool";
    }
    grid = std::max<int64_t>(1, grid);
    if (config.at("grid") == "waves") grid = std::min(grid, kTwoWaveThreads / block);
    grid = std::min<int64_t>(grid, 2147483647);  // the kernels grid-stride over what is left

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, op, config);
    launch.grid = {static_cast<uint32_t>(grid), 1, 1};
    candidate.launches.push_back(std::move(launch));
    add_fast_math_option(candidate, config);
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    // Stage each tile's input region in shared memory (coalesced loads, every input read from
    // DRAM about once; the overlapping windows of 41, 42, 44 and 46 and the strided ones of 43
    // and 45 are read from shared memory, without the strided or misaligned global loads of the
    // direct variant), 256 threads with two outputs each (a 512-output tile), one tile per block,
    // evict-first stores, nothing unsafe.
    op_of(task);
    return Config{{"variant", "smem_tile"},
                  {"block", "256"},
                  {"items_per_thread", "2"},
                  {"grid", "exact"},
                  {"cache_hint", "streaming"},
                  {"precision", "fp32"},
                  {"fast_math", "off"},
                  {"tail", "safe"}};
  }
};

}  // namespace

const Generator& pooling_generator() {
  static const PoolingGenerator generator;
  return generator;
}

}  // namespace kbrl
