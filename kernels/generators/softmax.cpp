#include "softmax.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

/// The most floats the cached variant keeps per row (32 KiB of static shared memory).
constexpr int64_t kMaxCacheFloats = 8192;

bool is_log(int task_id) { return task_id == 24; }

void check_task(const TaskSpec& task) {
  check_covered(task.id == 23 || task.id == 24, "softmax", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.inputs[0].shape.size() == 2 &&
                       task.outputs.size() == 1 && task.outputs[0].shape == task.inputs[0].shape,
                   "task {}: the softmax generator expects y = f(x) over a 2-d x", task.id);
}

std::string prelude(bool half, bool fast) {
  std::string s;
  FloatMath math = FloatMath::exact;
  if (half) {
    s += "#include <cuda_fp16.h>\n\n"
         "// precision=fp16_compute (unsafe): exp(x - max) is evaluated in __half; sums stay fp32.\n";
    math = FloatMath::half_exp;
  } else if (fast) {
    s += kFastMathNote;
    math = FloatMath::fast;
  }
  s += k_exp_helper(math, "d") + k_log_helper(math) + k_div_helper(math);
  s += R"(
#define KBRL_NEG_INF (__int_as_float(0xff800000))

// A running softmax state: the maximum seen and the sum of exp(v - max) over the values seen.
)";
  s += max_sum_state();
  s += R"(
__device__ __forceinline__ MaxSum kbrl_merge(MaxSum a, MaxSum b) {
  const float m = kbrl_max(a.m, b.m);
  if (m == KBRL_NEG_INF) return MaxSum{m, a.s + b.s};  // both empty
  return MaxSum{m, a.s * k_exp(a.m - m) + b.s * k_exp(b.m - m)};
}

struct MergeOp {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const { return kbrl_merge(a, b); }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return kbrl_max(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

__device__ __forceinline__ float kbrl_shfl(float v, int o) {
  return __shfl_xor_sync(0xffffffffu, v, o);
}
__device__ __forceinline__ MaxSum kbrl_shfl(MaxSum v, int o) {
  return MaxSum{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
}

)";
  s += block_reduce_helper(WarpStep::shuffle_loop);
  return s;
}

/// A read-only pass over the row: `body` runs for each element, named `v`. With `fill`, the
/// cached prefix of the row is stored in shared memory.
std::string read_pass(bool vec4, bool fill, const std::string& body) {
  std::string s;
  if (vec4) {
    s += "    for (long long j = threadIdx.x; j < nv; j += blockDim.x) {\n"
         "      const float4 q = reinterpret_cast<const float4*>(in)[j];\n";
    if (fill) s += "      if (4 * j + 4 <= kCache) reinterpret_cast<float4*>(cache)[j] = q;\n";
    for (const char* c : {"x", "y", "z", "w"})
      s += fmt::format("      {{ const float v = q.{}; {} }}\n", c, body);
    s += "    }\n";
  }
  s += std::string("    for (long long i = ") + (vec4 ? "4 * nv" : "0") +
       " + threadIdx.x; i < cols; i += blockDim.x) {\n"
       "      const float v = in[i];\n";
  if (fill) s += "      if (i < kCache) cache[i] = v;\n";
  s += "      " + body + "\n    }\n";
  return s;
}

/// The normalizing pass: y = f(x) with f written over `v` in `fn`.
std::string write_pass(bool vec4, bool cached, const std::string& hint, const std::string& fn) {
  auto f = [&](const std::string& v) {
    std::string r = fn;
    replace_all(r, "$v", v);
    return r;
  };
  std::string s;
  if (vec4) {
    s += "    for (long long j = threadIdx.x; j < nv; j += blockDim.x) {\n";
    const std::string gl = load_expr(hint, "reinterpret_cast<const float4*>(in) + j");
    if (cached)
      s += "      float4 q = 4 * j + 4 <= kCache ? reinterpret_cast<const float4*>(cache)[j] : " +
           gl + ";\n";
    else
      s += "      float4 q = " + gl + ";\n";
    for (const char* c : {"x", "y", "z", "w"})
      s += fmt::format("      q.{} = {};\n", c, f(std::string("q.") + c));
    s += "      " + store_expr(hint, "reinterpret_cast<float4*>(out) + j", "q") + ";\n    }\n";
  }
  s += std::string("    for (long long i = ") + (vec4 ? "4 * nv" : "0") +
       " + threadIdx.x; i < cols; i += blockDim.x) {\n";
  if (cached)
    s += "      const float v = i < kCache ? cache[i] : " + load_expr(hint, "in + i") + ";\n";
  else
    s += "      const float v = " + load_expr(hint, "in + i") + ";\n";
  s += "      " + store_expr(hint, "out + i", f("v")) + ";\n    }\n";
  return s;
}

std::string source_of(const TaskSpec& task, const Config& config) {
  const std::string variant = config.at("variant");
  const bool vec4 = config.integer("vec") == 4;
  const std::string hint = config.at("cache_hint");
  const bool half = config.at("precision") == "fp16_compute";
  const bool fast = config.at("fast_math") == "on";
  const bool cached = variant == "block_per_row_cached";
  const bool log = is_log(task.id);
  const int64_t cols = task.inputs[0].shape[1];

  std::string s = fmt::format(
      "// kbrl softmax generator: task {} ({}), {} over dim 1.\n"
      "// variant={} vec={} cache_hint={} precision={} fast_math={}\n",
      task.id, task.name, log ? "y = x - max - log(sum(exp(x - max)))"
                              : "y = exp(x - max) / sum(exp(x - max))",
      variant, config.at("vec"), config.at("cache_hint"), config.at("precision"),
      config.at("fast_math"));
  s += prelude(half, fast);
  if (cached)
    s += fmt::format(
        "\n// The row's first kCache elements stay in shared memory between the passes.\n"
        "constexpr long long kCache = {};\n",
        std::min(cols, kMaxCacheFloats));
  s += "\nextern \"C\" __global__ void kbrl_softmax(const float* __restrict__ x, "
       "float* __restrict__ y, long long rows, long long cols) {\n";
  if (variant == "three_pass")
    s += "  __shared__ float warp_f[32];\n";
  else
    s += "  __shared__ MaxSum warp_ms[32];\n";
  if (cached) s += "  __shared__ __align__(16) float cache[kCache];\n";
  s += "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n"
       "    const float* in = x + row * cols;\n"
       "    float* out = y + row * cols;\n";
  if (vec4)
    s += "    // float4 over the row when both row pointers are 16-byte aligned; a scalar tail.\n"
         "    const bool aligned = (((unsigned long long)in | (unsigned long long)out) & 15) == 0;\n"
         "    const long long nv = aligned ? cols / 4 : 0;\n";
  if (variant == "three_pass") {
    s += "    // pass 1: the row's maximum\n"
         "    float m = KBRL_NEG_INF;\n";
    s += read_pass(vec4, false, "m = kbrl_max(m, v);");
    s += "    m = kbrl_block_reduce(m, KBRL_NEG_INF, warp_f, MaxOp{});\n"
         "    // pass 2: the sum of exp(x - max)\n"
         "    float sum = 0.0f;\n";
    s += read_pass(vec4, false, "sum += k_exp(v - m);");
    s += "    sum = kbrl_block_reduce(sum, 0.0f, warp_f, SumOp{});\n";
  } else {
    s += "    // pass 1: an online (max, sum of exp(x - max)) per thread, merged over the block\n"
         "    MaxSum st = {KBRL_NEG_INF, 0.0f};\n";
    s += read_pass(vec4, cached, "kbrl_add(st, v);");
    s += "    st = kbrl_block_reduce(st, MaxSum{KBRL_NEG_INF, 0.0f}, warp_ms, MergeOp{});\n"
         "    const float m = st.m, sum = st.s;\n";
  }
  s += std::string("    // last pass: normalize\n");
  if (log) {
    s += "    const float logsum = k_log(sum);\n";
    s += write_pass(vec4, cached, hint, "$v - m - logsum");
  } else {
    s += write_pass(vec4, cached, hint, "k_div(k_exp($v - m), sum)");
  }
  if (cached) s += "    __syncthreads();  // the cache is refilled for the next row\n";
  s += "  }\n}\n";
  return s;
}

class SoftmaxGenerator final : public Generator {
 public:
  std::string_view name() const override { return "softmax"; }
  bool covers(int task_id) const override { return task_id == 23 || task_id == 24; }

  KnobSpace space(const TaskSpec& task) const override {
    check_task(task);
    KnobSpace space;
    space
        .add_knob({"variant", {"two_pass", "three_pass", "block_per_row_cached"},
                   "two_pass: an online (max, sum) pass then the normalizing pass; three_pass: "
                   "max, sum, normalize; block_per_row_cached: two_pass keeping the row's first "
                   "min(row length, 8192) elements in shared memory for the second pass"})
        .add_knob({"block", {"128", "256", "512", "1024"}, "threads per block (one block per row)"})
        .add_knob({"vec", {"1", "4"},
                   "floats per access (float4 with a scalar tail when the row pointers are "
                   "16-byte aligned, else element by element)"})
        .add_knob({"grid", {"exact", "waves"},
                   "exact: one block per row; waves: at most two waves of resident blocks of an "
                   "H100 (132 SMs), grid-stride over the rows"})
        .add_knob({"cache_hint", {"none", "streaming"},
                   "streaming: the last read of x with __ldcs and y stored with __stcs"})
        .add_knob({"precision", {"fp32", "fp16_compute"},
                   "fp16_compute (unsafe): exp(x - max) evaluated in __half (sums stay fp32)"})
        .add_knob({"fast_math", {"off", "on"},
                   "on (unsafe): --use_fast_math and the __expf/__logf/__fdividef intrinsics"});
    space.add_constraint(fast_math_needs_fp32());
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    check_task(task);
    const Config config = checked_config(space(task), given);

    const int64_t block = config.integer("block");
    const int64_t rows = task.inputs[0].shape[0];
    const int64_t cols = task.inputs[0].shape[1];
    int64_t grid = std::max<int64_t>(1, rows);
    if (config.at("grid") == "waves") grid = std::min(grid, kTwoWaveThreads / block);

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(task, config);
    Launch launch;
    launch.kernel = "kbrl_softmax";
    launch.grid = {grid_dim(grid, task.id), 1, 1};
    launch.block = {static_cast<uint32_t>(block), 1, 1};
    launch.args = {KernelArg{ArgKind::input, 0}, KernelArg{ArgKind::output, 0}, i64_arg(rows),
                   i64_arg(cols)};
    candidate.launches.push_back(std::move(launch));
    add_fast_math_option(candidate, config);
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    check_task(task);
    // One online pass then the normalizing pass (two reads of x, the fewest for a row that does
    // not fit on chip), 512 threads with float4 accesses, one block per row, evict-first hints on
    // the last read of x and on y, nothing unsafe.
    return Config{{"variant", "two_pass"}, {"block", "512"},          {"vec", "4"},
                  {"grid", "exact"},       {"cache_hint", "streaming"}, {"precision", "fp32"},
                  {"fast_math", "off"}};
  }
};

}  // namespace

const Generator& softmax_generator() {
  static const SoftmaxGenerator generator;
  return generator;
}

}  // namespace kbrl
