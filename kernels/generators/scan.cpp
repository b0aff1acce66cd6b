#include "scan.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "family_common.h"

namespace kbrl {
namespace {

struct ScanOp {
  int task_id;
  const char* math;  // for the source's comment
  bool product;      // cumprod; a sum otherwise
  bool reverse;      // suffix scan (from the end of the row)
  bool exclusive;    // y[i] excludes x[i]
  bool masked;       // x * mask, with a second (bool) input
};

constexpr ScanOp kOps[] = {
    {89, "y = cumsum(x, 1)", false, false, false, false},
    {90, "y = cumprod(x, 1)", true, false, false, false},
    {91, "y = cumsum(x.flip(1), 1).flip(1)", false, true, false, false},
    {92, "y = cat(0, cumsum(x[:, :-1], 1)): the exclusive cumsum", false, false, true, false},
    {93, "y = cumsum(x * mask, 1)", false, false, false, true},
};

const ScanOp* find_op(int task_id) { return find_entry(kOps, &ScanOp::task_id, task_id); }

const ScanOp& op_of(const TaskSpec& task) {
  const ScanOp* op = find_op(task.id);
  check_covered(op != nullptr, "scan", task);
  KBRL_CHECK_INPUT(task.inputs.size() == (op->masked ? 2u : 1u) &&
                       task.inputs[0].shape.size() == 2 && task.outputs.size() == 1 &&
                       task.outputs[0].shape == task.inputs[0].shape &&
                       (!op->masked || (task.inputs[1].shape == task.inputs[0].shape &&
                                        task.inputs[1].dtype == DType::b8)),
                   "task {}: the scan generator expects y = scan(x) along dim 1 of a 2-d x",
                   task.id);
  return *op;
}

std::string prelude(const ScanOp& op, const Config& config) {
  const bool half = config.at("precision") == "fp16_compute";
  const bool streaming = config.at("cache_hint") == "streaming";
  std::string s;
  if (half) {
    s += "#include <cuda_fp16.h>\n\n"
         "// precision=fp16_compute (unsafe): the scan runs on __half values.\n"
         "typedef __half T;\n"
         "__device__ __forceinline__ T to_t(float v) { return __float2half(v); }\n"
         "__device__ __forceinline__ float from_t(T v) { return __half2float(v); }\n";
    s += op.product
             ? "__device__ __forceinline__ T combine(T a, T b) { return __hmul(a, b); }\n"
               "__device__ __forceinline__ T identity() { return __float2half(1.0f); }\n"
             : "__device__ __forceinline__ T combine(T a, T b) { return __hadd(a, b); }\n"
               "__device__ __forceinline__ T identity() { return __float2half(0.0f); }\n";
  } else {
    s += "typedef float T;\n"
         "__device__ __forceinline__ T to_t(float v) { return v; }\n"
         "__device__ __forceinline__ float from_t(T v) { return v; }\n";
    s += op.product ? "__device__ __forceinline__ T combine(T a, T b) { return a * b; }\n"
                      "__device__ __forceinline__ T identity() { return 1.0f; }\n"
                    : "__device__ __forceinline__ T combine(T a, T b) { return a + b; }\n"
                      "__device__ __forceinline__ T identity() { return 0.0f; }\n";
  }
  s += fmt::format(
      "\nconstexpr int kItems = {};\n"
      "constexpr bool kVec4 = {};\n"
      "constexpr bool kReverse = {};\n"
      "constexpr bool kExclusive = {};\n"
      "constexpr bool kSafeTail = {};\n"
      "#define FULL_MASK 0xffffffffu\n",
      config.integer("items_per_thread"), config.integer("vec") == 4 ? "true" : "false",
      op.reverse ? "true" : "false", op.exclusive ? "true" : "false",
      config.at("tail") == "safe" ? "true" : "false");
  if (streaming)
    s += "__device__ __forceinline__ float ld_x(const float* p) { return __ldcs(p); }\n"
         "__device__ __forceinline__ float4 ld_x4(const float* p) { return __ldcs(reinterpret_cast<const float4*>(p)); }\n"
         "__device__ __forceinline__ void st_y(float* p, float v) { __stcs(p, v); }\n"
         "__device__ __forceinline__ void st_y4(float* p, float4 v) { __stcs(reinterpret_cast<float4*>(p), v); }\n";
  else
    s += "__device__ __forceinline__ float ld_x(const float* p) { return *p; }\n"
         "__device__ __forceinline__ float4 ld_x4(const float* p) { return *reinterpret_cast<const float4*>(p); }\n"
         "__device__ __forceinline__ void st_y(float* p, float v) { *p = v; }\n"
         "__device__ __forceinline__ void st_y4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }\n";
  if (op.masked)
    s += R"(
// x * mask as torch computes it (the bool promoted to 0.0f or 1.0f).
__device__ __forceinline__ float value_at(const float* __restrict__ xr, const unsigned char* __restrict__ mr,
                                          long long i) {
  return ld_x(xr + i) * (float)mr[i];
}
__device__ __forceinline__ void values4(const float* __restrict__ xr, const unsigned char* __restrict__ mr,
                                        long long i, float v[4]) {
  const float4 q = ld_x4(xr + i);
  const uchar4 m = *reinterpret_cast<const uchar4*>(mr + i);
  v[0] = q.x * (float)m.x; v[1] = q.y * (float)m.y; v[2] = q.z * (float)m.z; v[3] = q.w * (float)m.w;
}
)";
  else
    s += R"(
__device__ __forceinline__ float value_at(const float* __restrict__ xr, const unsigned char* __restrict__,
                                          long long i) {
  return ld_x(xr + i);
}
__device__ __forceinline__ void values4(const float* __restrict__ xr, const unsigned char* __restrict__,
                                        long long i, float v[4]) {
  const float4 q = ld_x4(xr + i);
  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
)";
  s += R"(
// The thread's kItems elements from `base` (identity past the row's end).
__device__ __forceinline__ void load_items(const float* __restrict__ xr, const unsigned char* __restrict__ mr,
                                           long long base, long long L, bool vec_ok, T v[kItems]) {
  if (kVec4 && vec_ok && base + kItems <= L) {
#pragma unroll
    for (int j = 0; j < kItems; j += 4) {
      float q[4];
      values4(xr, mr, base + j, q);
#pragma unroll
      for (int c = 0; c < 4; ++c) v[j + c] = to_t(q[c]);
    }
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k) v[k] = base + k < L ? to_t(value_at(xr, mr, base + k)) : identity();
  }
}

// Scans the thread's items in place in the scan's direction; returns the thread's total.
__device__ __forceinline__ T thread_scan(T v[kItems]) {
  if (kReverse) {
#pragma unroll
    for (int k = kItems - 2; k >= 0; --k) v[k] = combine(v[k + 1], v[k]);
    return v[0];
  }
#pragma unroll
  for (int k = 1; k < kItems; ++k) v[k] = combine(v[k - 1], v[k]);
  return v[kItems - 1];
}

// Writes pre (+) the thread's scanned items (the item before, for the exclusive scan).
__device__ __forceinline__ void store_items(float* __restrict__ yr, long long base, long long L, bool vec_ok,
                                            T pre, const T v[kItems]) {
  float o[kItems];
#pragma unroll
  for (int k = 0; k < kItems; ++k) {
    T local = v[k];
    if (kExclusive) {
      if (kReverse) local = k + 1 < kItems ? v[k + 1] : identity();
      else local = k > 0 ? v[k - 1] : identity();
    }
    o[k] = from_t(combine(pre, local));
  }
  if (kVec4 && vec_ok && base + kItems <= L) {
#pragma unroll
    for (int j = 0; j < kItems; j += 4) st_y4(yr + base + j, make_float4(o[j], o[j + 1], o[j + 2], o[j + 3]));
  } else {
#pragma unroll
    for (int k = 0; k < kItems; ++k)
      if (base + k < L) st_y(yr + base + k, o[k]);
  }
}

// Lane shuffles toward the scan's direction: from the lane d before (d after, reversed).
__device__ __forceinline__ T shfl_prev(T v, int d) {
  return kReverse ? __shfl_down_sync(FULL_MASK, v, d) : __shfl_up_sync(FULL_MASK, v, d);
}

// Inclusive scan over the warp in the scan's direction; rank is the lane's place in that order.
__device__ __forceinline__ T warp_inclusive(T s, int rank) {
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T n = shfl_prev(s, d);
    if (rank >= d) s = combine(n, s);
  }
  return s;
}

// Whether the row pointers allow float4 (and 4-byte mask) accesses.
__device__ __forceinline__ bool rows_aligned(const float* xr, const unsigned char* mr, const float* yr) {
  return kVec4 && ((((unsigned long long)xr | (unsigned long long)yr) & 15) == 0) &&
         (((unsigned long long)mr & 3) == 0);
}

// The chunks of a row: all of them, or (tail=dropped) only the full ones.
__device__ __forceinline__ long long chunk_count(long long L, long long C) {
  return kSafeTail ? (L + C - 1) / C : L / C;
}
)";
  return s;
}

/// The kernel's signature: `kbrl_scan(x, [mask,] y, rows, L)`.
std::string kernel_head(bool masked) {
  return std::string("extern \"C\" __global__ void kbrl_scan(const float* __restrict__ x, ") +
         (masked ? "const unsigned char* __restrict__ mask, " : "") +
         "float* __restrict__ y,\n"
         "                                     long long rows, long long L) {\n";
}

/// The start of a row's body: the row pointers, the carry, and the loop over the chunks (in the
/// scan's direction) up to the chunk index `c`.
std::string row_loop_head(bool masked) {
  return std::string("    const float* __restrict__ xr = x + row * L;\n"
                     "    float* __restrict__ yr = y + row * L;\n") +
         (masked ? "    const unsigned char* __restrict__ mr = mask + row * L;\n"
                 : "    const unsigned char* __restrict__ mr = nullptr;\n") +
         "    const bool vec_ok = rows_aligned(xr, mr, yr);\n"
         "    T carry = identity();\n"
         "    for (long long cc = 0; cc < chunks; ++cc) {\n"
         "      const long long c = kReverse ? chunks - 1 - cc : cc;\n";
}

std::string block_kernel(bool masked) {
  std::string s = R"(
// One block per row: chunks of blockDim.x * kItems elements, the threads' totals scanned over the
// warps (shuffles) and across the warps (shared memory), a carry across the chunks.
)";
  s += kernel_head(masked);
  s += R"(  __shared__ T totals[2][32];  // double-buffered by chunk: two barriers per chunk suffice
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int rank = kReverse ? 31 - lane : lane;
  const int wrank = kReverse ? nw - 1 - warp : warp;
  const long long C = (long long)blockDim.x * kItems;
  const long long chunks = chunk_count(L, C);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
)";
  s += row_loop_head(masked);
  s += R"(      const long long base = c * C + (long long)threadIdx.x * kItems;
      T v[kItems];
      load_items(xr, mr, base, L, vec_ok, v);
      const T total = thread_scan(v);
      const T incl = warp_inclusive(total, rank);
      T (&tot)[32] = totals[cc & 1];
      if (rank == 31) tot[wrank] = incl;
      __syncthreads();
      if (warp == 0) {  // scan the warps' totals in the scan's order (held by wrank)
        T w = lane < nw ? tot[lane] : identity();
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
          const T n = __shfl_up_sync(FULL_MASK, w, d);
          if (lane >= d) w = combine(n, w);
        }
        if (lane < nw) tot[lane] = w;
      }
      __syncthreads();
      T lane_ex = shfl_prev(incl, 1);
      if (rank == 0) lane_ex = identity();
      const T warp_ex = wrank > 0 ? tot[wrank - 1] : identity();
      const T pre = combine(carry, combine(warp_ex, lane_ex));
      store_items(yr, base, L, vec_ok, pre, v);
      carry = combine(carry, tot[nw - 1]);
    }
  }
}
)";
  return s;
}

std::string warp_kernel(bool masked) {
  std::string s = R"(
// One warp per row: chunks of 32 * kItems elements, the lanes' totals scanned with shuffles, a carry
// across the chunks; no block barriers (blockDim.x / 32 rows per block).
)";
  s += kernel_head(masked);
  s += R"(  const int lane = threadIdx.x & 31;
  const int rank = kReverse ? 31 - lane : lane;
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
  const long long C = 32LL * kItems;
  const long long chunks = chunk_count(L, C);
  for (long long row = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); row < rows;
       row += warps) {
)";
  s += row_loop_head(masked);
  s += R"(      const long long base = c * C + (long long)lane * kItems;
      T v[kItems];
      load_items(xr, mr, base, L, vec_ok, v);
      const T incl = warp_inclusive(thread_scan(v), rank);
      T lane_ex = shfl_prev(incl, 1);
      if (rank == 0) lane_ex = identity();
      store_items(yr, base, L, vec_ok, combine(carry, lane_ex), v);
      carry = combine(carry, __shfl_sync(FULL_MASK, incl, kReverse ? 0 : 31));
    }
  }
}
)";
  return s;
}

std::string source_of(const TaskSpec& task, const ScanOp& op, const Config& config) {
  std::string s = fmt::format(
      "// kbrl scan generator: task {} ({}), {} along dim 1.\n"
      "// variant={} items_per_thread={} vec={} cache_hint={} precision={} tail={}\n",
      task.id, task.name, op.math, config.at("variant"), config.at("items_per_thread"),
      config.at("vec"), config.at("cache_hint"), config.at("precision"), config.at("tail"));
  s += prelude(op, config);
  s += config.at("variant") == "block_per_row" ? block_kernel(op.masked) : warp_kernel(op.masked);
  return s;
}

class ScanGenerator final : public Generator {
 public:
  std::string_view name() const override { return "scan"; }
  bool covers(int task_id) const override { return find_op(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    op_of(task);
    KnobSpace space;
    space
        .add_knob({"variant", {"block_per_row", "warp_per_row"},
                   "block_per_row: a block scans a row in chunks of block * items_per_thread (two "
                   "barriers per chunk); warp_per_row: a warp scans a row in chunks of "
                   "32 * items_per_thread (no barriers)"})
        .add_knob({"block", {"128", "256", "512", "1024"}, "threads per block"})
        .add_knob({"items_per_thread", {"4", "8", "16"},
                   "contiguous elements each thread scans in registers per chunk"})
        .add_knob({"vec", {"1", "4"},
                   "float4 (and 4-byte mask) accesses when the row pointers are aligned and the "
                   "thread's items lie inside the row; element by element otherwise"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: __ldcs loads and __stcs stores (each element is touched once)"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): the scan runs on __half values"})
        .add_knob({"tail", {"safe", "dropped"},
                   "dropped (unsafe): a row's last, partial chunk is never processed"});
    space.add_constraint({"precision=fp16_compute requires tail=safe (one unsafe knob at a time)",
                          {"precision", "tail"},
                          [](const Config& c) {
                            return c.at("precision") == "fp32" || c.at("tail") == "safe";
                          }});
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const ScanOp& op = op_of(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t rows = task.inputs[0].shape[0];
    const int64_t length = task.inputs[0].shape[1];
    const int64_t rows_per_block = config.at("variant") == "block_per_row" ? 1 : block / 32;
    int64_t grid = std::max<int64_t>(1, (rows + rows_per_block - 1) / rows_per_block);
    grid = std::min<int64_t>(grid, 2147483647);  // the kernels grid-stride over the rows

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, op, config);
    Launch launch;
    launch.kernel = "kbrl_scan";
    launch.grid = {static_cast<uint32_t>(grid), 1, 1};
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}};
    if (op.masked) launch.args.push_back(KernelArg{ArgKind::input, 1});
    launch.args.push_back(KernelArg{ArgKind::output, 0});
    launch.args.push_back(i64_arg(rows));
    launch.args.push_back(i64_arg(length));
    candidate.launches.push_back(std::move(launch));
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    op_of(task);
    // One block of 256 threads per row, 8 contiguous elements per thread as two float4 (chunks of
    // 2048, 16 per row at KernelBench's scale, each with two barriers), evict-first loads and
    // stores (every element is read and written once), nothing unsafe.
    return Config{{"variant", "block_per_row"}, {"block", "256"},         {"items_per_thread", "8"},
                  {"vec", "4"},                 {"cache_hint", "streaming"}, {"precision", "fp32"},
                  {"tail", "safe"}};
  }
};

}  // namespace

const Generator& scan_generator() {
  static const ScanGenerator generator;
  return generator;
}

}  // namespace kbrl
