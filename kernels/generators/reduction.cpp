#include "reduction.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "device_snippets.h"
#include "family_common.h"

namespace kbrl {
namespace {

enum class Op { sum, max, min, argmax, argmin };

struct ReductionTask {
  int task_id;
  Op op;
  bool mean;  // sum then * (1 / R)
};

constexpr ReductionTask kTasks[] = {
    {47, Op::sum, false}, {48, Op::sum, true},     {49, Op::max, false},
    {51, Op::argmax, false}, {52, Op::argmin, false}, {53, Op::min, false},
};

const ReductionTask* find_task(int task_id) {
  return find_entry(kTasks, &ReductionTask::task_id, task_id);
}

const ReductionTask& task_of(const TaskSpec& task) {
  const ReductionTask* t = find_task(task.id);
  check_covered(t != nullptr, "reduction", task);
  return *t;
}

bool is_arg(Op op) { return op == Op::argmax || op == Op::argmin; }
bool is_sum(Op op) { return op == Op::sum; }

// Helpers of the operation: for value ops Acc, k_init, k_add (Acc, float), k_out (Acc -> float),
// k_merge (float, float); for arg ops k_better.
std::string helpers(Op op, bool half) {
  switch (op) {
    case Op::sum:
      if (half)
        return "#include <cuda_fp16.h>\n\n"
               "// precision=fp16_compute (unsafe): the running sums are __half.\n"
               "typedef __half Acc;\n"
               "__device__ __forceinline__ Acc k_init() { return __float2half(0.0f); }\n"
               "__device__ __forceinline__ Acc k_add(Acc a, float v) { return __hadd(a, "
               "__float2half(v)); }\n"
               "__device__ __forceinline__ float k_out(Acc a) { return __half2float(a); }\n"
               "__device__ __forceinline__ float k_merge(float a, float b) { return a + b; }\n";
      return "typedef float Acc;  // fp32 accumulation\n"
             "__device__ __forceinline__ Acc k_init() { return 0.0f; }\n"
             "__device__ __forceinline__ Acc k_add(Acc a, float v) { return a + v; }\n"
             "__device__ __forceinline__ float k_out(Acc a) { return a; }\n"
             "__device__ __forceinline__ float k_merge(float a, float b) { return a + b; }\n";
    case Op::max:
    case Op::min: {
      const char* cmp = op == Op::max ? ">" : "<";
      return fmt::format(
          "typedef float Acc;\n"
          "// NaN propagates (as torch): once the running value is NaN it stays NaN.\n"
          "__device__ __forceinline__ Acc k_init() {{ return {}; }}\n"
          "__device__ __forceinline__ Acc k_add(Acc a, float v) {{ return (v {} a || v != v) ? v "
          ": a; }}\n"
          "__device__ __forceinline__ float k_out(Acc a) {{ return a; }}\n"
          "__device__ __forceinline__ float k_merge(float a, float b) {{ return k_add(a, b); }}\n",
          op == Op::max ? "__int_as_float(0xff800000)  /* -inf */" : "__int_as_float(0x7f800000)  /* +inf */", cmp);
    }
    case Op::argmax:
    case Op::argmin:
      return fmt::format(
          "// Does (v, i) win over (bv, bi) in torch.{}'s order? bi < 0: nothing seen yet. NaN wins\n"
          "// over any number (its first occurrence); ties go to the first index.\n"
          "__device__ __forceinline__ bool k_better(float v, int i, float bv, int bi) {{\n"
          "  if (i < 0) return false;\n"
          "  if (bi < 0) return true;\n"
          "  const bool nv = v != v, nb = bv != bv;\n"
          "  if (nv || nb) return nv && (!nb || i < bi);\n"
          "  if (v != bv) return v {} bv;\n"
          "  return i < bi;\n"
          "}}\n",
          op == Op::argmax ? "argmax" : "argmin", op == Op::argmax ? ">" : "<");
  }
  throw InternalError("unknown reduction op");
}

// The scan of one thread over rows r0, r0 + step, ... < r1 of column pointer p (x + b*R*K + k):
// leaves `float part` (value ops) or `float best; int at` (arg ops).
std::string scan(Op op, int64_t unroll, int64_t acc, const std::string& hint) {
  const std::string ld = load_expr(hint, "p + r * K");
  const std::string ldu = load_expr(hint, "p + (r + u * step) * K");
  std::string s;
  if (is_arg(op)) {
    s += "    long long r = r0;\n"
         "    for (; r + (kUnroll - 1) * step < r1; r += kUnroll * step) {\n"
         "      float v[kUnroll];\n"
         "#pragma unroll\n"
         "      for (int u = 0; u < kUnroll; ++u) v[u] = " + ldu + ";\n"
         "#pragma unroll\n"
         "      for (int u = 0; u < kUnroll; ++u) {\n"
         "        const int i = (int)(r + u * step);\n"
         "        if (k_better(v[u], i, best, at)) { best = v[u]; at = i; }\n"
         "      }\n"
         "    }\n"
         "    for (; r < r1; r += step) {\n"
         "      const float v = " + ld + ";\n"
         "      if (k_better(v, (int)r, best, at)) { best = v; at = (int)r; }\n"
         "    }\n";
    return s;
  }
  s += "    Acc acc[kAcc];\n"
       "#pragma unroll\n"
       "    for (int a = 0; a < kAcc; ++a) acc[a] = k_init();\n"
       "    long long r = r0;\n"
       "    for (; r + (kUnroll - 1) * step < r1; r += kUnroll * step) {\n"
       "      float v[kUnroll];\n"
       "#pragma unroll\n"
       "      for (int u = 0; u < kUnroll; ++u) v[u] = " + ldu + ";\n"
       "#pragma unroll\n"
       "      for (int u = 0; u < kUnroll; ++u) acc[u % kAcc] = k_add(acc[u % kAcc], v[u]);\n"
       "    }\n"
       "    for (; r < r1; r += step) acc[0] = k_add(acc[0], " + ld + ");\n";
  if (acc == 1) s += "    part = k_out(acc[0]);\n";
  if (acc == 2) s += "    part = k_merge(k_out(acc[0]), k_out(acc[1]));\n";
  if (acc == 4)
    s += "    part = k_merge(k_merge(k_out(acc[0]), k_out(acc[1])), "
         "k_merge(k_out(acc[2]), k_out(acc[3])));\n";
  (void)unroll;
  return s;
}

std::string source_of(const ReductionTask& t, const Config& config) {
  const Op op = t.op;
  const bool arg = is_arg(op);
  const std::string variant = config.at("variant");
  const int64_t unroll = config.integer("unroll");
  const int64_t acc = config.has("accumulators") ? config.integer("accumulators") : 1;
  const std::string hint = config.at("cache_hint");
  const bool half = config.has("precision") && config.at("precision") == "fp16_compute";
  const bool dropped = config.has("tail") && config.at("tail") == "dropped";
  const char* op_name = op == Op::sum      ? "sum (times scale: 1 for sum, 1/R for mean)"
                        : op == Op::max    ? "max"
                        : op == Op::min    ? "min"
                        : op == Op::argmax ? "argmax (int64)"
                                           : "argmin (int64)";

  std::string s = fmt::format(
      "// kbrl reduction generator: {} over dim 1 of x:[B,R,K] (K contiguous).\n"
      "// variant={} unroll={} accumulators={} cache_hint={} precision={} tail={}\n"
      "// blockDim = (columns, row slices); gridDim.x covers K by blockDim.x columns.\n",
      op_name, variant, unroll, acc, hint, half ? "fp16_compute" : "fp32",
      dropped ? "dropped" : "safe");
  s += helpers(op, half);
  s += fmt::format("constexpr int kUnroll = {};\nconstexpr int kAcc = {};\n\n", unroll, acc);

  const bool two = variant == "two_kernel";
  const bool slices = variant != "column_per_thread";
  const std::string out_t = arg ? "long long" : "float";
  // The main kernel.
  s += "extern \"C\" __global__ void kbrl_reduce(const float* __restrict__ x, ";
  if (two)
    s += arg ? "float* __restrict__ part_value, int* __restrict__ part_index, "
             : "float* __restrict__ part_value, ";
  else
    s += out_t + "* __restrict__ y, ";
  s += "long long R, long long K";
  if (!two && !arg) s += ", float scale";
  s += ") {\n";
  if (dropped)
    s += "  // tail=dropped (unsafe): the last partial group of columns is never written.\n"
         "  if ((long long)(blockIdx.x + 1) * blockDim.x > K) return;\n";
  s += "  const long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n";
  s += two ? "  const long long b = blockIdx.z;\n"
             "  const long long chunk = (R + gridDim.y - 1) / gridDim.y;\n"
             "  const long long r0 = (long long)blockIdx.y * chunk + threadIdx.y;\n"
             "  const long long r1 = R < (long long)(blockIdx.y + 1) * chunk ? R : "
             "(long long)(blockIdx.y + 1) * chunk;\n"
           : "  const long long b = blockIdx.y;\n"
             "  const long long r0 = threadIdx.y;\n"
             "  const long long r1 = R;\n";
  s += "  const long long step = blockDim.y;\n";
  s += arg ? "  float best = 0.0f;\n  int at = -1;\n" : "  float part = 0.0f;\n";
  s += "  if (k < K) {\n"
       "    const float* p = x + b * R * K + k;\n";
  s += scan(op, unroll, acc, hint);
  s += "  }\n";
  if (slices) {
    s += "  // Combine the row slices in shared memory, in slice order.\n"
         "  extern __shared__ float sh_value[];\n";
    if (arg) s += "  int* sh_index = reinterpret_cast<int*>(sh_value + blockDim.x * blockDim.y);\n";
    s += "  sh_value[threadIdx.y * blockDim.x + threadIdx.x] = " + std::string(arg ? "best" : "part") +
         ";\n";
    if (arg) s += "  sh_index[threadIdx.y * blockDim.x + threadIdx.x] = at;\n";
    s += "  __syncthreads();\n"
         "  if (threadIdx.y != 0) return;\n"
         "  for (unsigned int t = 1; t < blockDim.y; ++t) {\n";
    if (arg)
      s += "    const float v = sh_value[t * blockDim.x + threadIdx.x];\n"
           "    const int i = sh_index[t * blockDim.x + threadIdx.x];\n"
           "    if (k_better(v, i, best, at)) { best = v; at = i; }\n";
    else
      s += "    part = k_merge(part, sh_value[t * blockDim.x + threadIdx.x]);\n";
    s += "  }\n";
  }
  s += "  if (k >= K) return;\n";
  if (two) {
    s += "  const long long slot = (b * gridDim.y + blockIdx.y) * K + k;\n";
    s += arg ? "  part_value[slot] = best;\n  part_index[slot] = at;\n"
             : "  part_value[slot] = part;\n";
  } else {
    s += arg ? "  y[b * K + k] = (long long)at;\n" : "  y[b * K + k] = part * scale;\n";
  }
  s += "}\n";

  if (two) {
    s += "\n// The combine launch: one thread per output element, row chunks in ascending order.\n"
         "extern \"C\" __global__ void kbrl_reduce_combine(const float* __restrict__ part_value, ";
    if (arg) s += "const int* __restrict__ part_index, ";
    s += out_t + "* __restrict__ y, long long K, long long n, long long splits";
    if (!arg) s += ", float scale";
    s += ") {\n"
         "  const long long o = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (o >= n) return;\n"
         "  const long long b = o / K, k = o - b * K;\n";
    if (dropped)
      s += fmt::format("  if (k >= K / {0} * {0}) return;  // tail=dropped, as the partials\n",
                       config.at("cols_per_block"));
    if (arg)
      s += "  float best = 0.0f;\n  int at = -1;\n"
           "  for (long long c = 0; c < splits; ++c) {\n"
           "    const long long slot = (b * splits + c) * K + k;\n"
           "    if (k_better(part_value[slot], part_index[slot], best, at)) {\n"
           "      best = part_value[slot];\n      at = part_index[slot];\n    }\n"
           "  }\n"
           "  y[o] = (long long)at;\n";
    else
      s += "  float total = part_value[b * splits * K + k];\n"
           "  for (long long c = 1; c < splits; ++c) total = k_merge(total, part_value[(b * splits "
           "+ c) * K + k]);\n"
           "  y[o] = total * scale;\n";
    s += "}\n";
  }
  return s;
}

class ReductionGenerator final : public Generator {
 public:
  std::string_view name() const override { return "reduction"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const ReductionTask& t = task_of(task);
    const bool sum = is_sum(t.op);
    KnobSpace space;
    space.add_knob({"variant", {"column_per_thread", "split_rows", "two_kernel"},
                    "column_per_thread: one thread per column over all R rows; split_rows: a "
                    "block covers cols_per_block columns and splits R over its row slices "
                    "(combined in shared memory); two_kernel: split_rows over row_splits chunks "
                    "of R with partials in scratch, then a combine launch"})
        .add_knob({"block", {"128", "256", "512"}, "threads per block"})
        .add_knob({"cols_per_block", {"32", "64", "block"},
                   "consecutive columns a block covers (blockDim.x); 'block': all its threads "
                   "(column_per_thread)"})
        .add_knob({"row_splits", {"1", "4", "16"},
                   "chunks of R reduced by separate blocks (two_kernel), else 1"})
        .add_knob({"unroll", {"1", "2", "4"}, "rows each thread loads before combining any"});
    if (sum)
      space.add_knob({"accumulators", {"1", "2", "4"},
                      "independent fp32 running sums per thread (rows go round-robin)"});
    space.add_knob({"cache_hint", {"none", "ldg", "streaming"}, "plain loads; __ldg; __ldcs"});
    if (sum)
      space.add_knob({"precision", {"fp32", "fp16_compute"},
                      "fp16_compute (unsafe): the running sums are __half"});
    else
      space.add_knob({"tail", {"safe", "dropped"},
                      "dropped (unsafe): the last partial group of columns is never written "
                      "(K = 4095 is odd, so always wrong)"});

    space.add_constraint({"cols_per_block=block exactly when variant=column_per_thread",
                          {"variant", "cols_per_block"},
                          [](const Config& c) {
                            return (c.at("variant") == "column_per_thread") ==
                                   (c.at("cols_per_block") == "block");
                          }});
    space.add_constraint({"row_splits > 1 exactly when variant=two_kernel",
                          {"variant", "row_splits"},
                          [](const Config& c) {
                            return (c.at("variant") == "two_kernel") == (c.at("row_splits") != "1");
                          }});
    if (sum)
      space.add_constraint({"accumulators <= unroll (each accumulator takes whole rows of a pass)",
                            {"unroll", "accumulators"},
                            [](const Config& c) {
                              return c.integer("accumulators") <= c.integer("unroll");
                            }});
    return space;
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const ReductionTask& t = task_of(task);
    const Config config = checked_config(space(task), given);
    const bool arg = is_arg(t.op);

    const auto& shape = task.inputs.at(0).shape;
    KBRL_CHECK_INPUT(shape.size() == 3, "task {}: expected x:[B,R,K]", task.id);
    const int64_t B = shape[0], R = shape[1], K = shape[2];
    const int64_t block = config.integer("block");
    const std::string variant = config.at("variant");
    const int64_t cols = variant == "column_per_thread" ? block : config.integer("cols_per_block");
    const int64_t slices = block / cols;
    const int64_t splits = config.integer("row_splits");
    const int64_t col_blocks = (K + cols - 1) / cols;
    KBRL_CHECK_INPUT(col_blocks <= 2147483647 && B <= 65535, "task {}: grid too large", task.id);
    const float scale = t.mean ? static_cast<float>(1.0 / static_cast<double>(R)) : 1.0f;

    Candidate candidate;
    candidate.task_id = task.id;
    candidate.source = source_of(t, config);

    Launch main;
    main.kernel = "kbrl_reduce";
    main.block = {static_cast<uint32_t>(cols), static_cast<uint32_t>(slices), 1};
    if (variant != "column_per_thread")
      main.shared_bytes = static_cast<uint32_t>(block * (arg ? 8 : 4));
    main.args = {KernelArg{ArgKind::input, 0}};
    if (variant == "two_kernel") {
      main.grid = {static_cast<uint32_t>(col_blocks), static_cast<uint32_t>(splits),
                   static_cast<uint32_t>(B)};
      candidate.scratch.push_back({"part_value", B * splits * K * 4});
      main.args.push_back(KernelArg{ArgKind::scratch, 0});
      if (arg) {
        candidate.scratch.push_back({"part_index", B * splits * K * 4});
        main.args.push_back(KernelArg{ArgKind::scratch, 1});
      }
      main.args.push_back(i64_arg(R));
      main.args.push_back(i64_arg(K));
      candidate.launches.push_back(std::move(main));

      Launch combine;
      combine.kernel = "kbrl_reduce_combine";
      const int64_t n = B * K;
      combine.block = {256, 1, 1};
      combine.grid = {static_cast<uint32_t>((n + 255) / 256), 1, 1};
      combine.args = {KernelArg{ArgKind::scratch, 0}};
      if (arg) combine.args.push_back(KernelArg{ArgKind::scratch, 1});
      combine.args.push_back(KernelArg{ArgKind::output, 0});
      combine.args.push_back(i64_arg(K));
      combine.args.push_back(i64_arg(n));
      combine.args.push_back(i64_arg(splits));
      if (!arg) combine.args.push_back(f32_arg(scale));
      candidate.launches.push_back(std::move(combine));
    } else {
      main.grid = {static_cast<uint32_t>(col_blocks), static_cast<uint32_t>(B), 1};
      main.args.push_back(KernelArg{ArgKind::output, 0});
      main.args.push_back(i64_arg(R));
      main.args.push_back(i64_arg(K));
      if (!arg) main.args.push_back(f32_arg(scale));
      candidate.launches.push_back(std::move(main));
    }
    return candidate;
  }

  Config expert(const TaskSpec& task) const override {
    const ReductionTask& t = task_of(task);
    // A warp-wide group of 32 columns (128-byte rows) per block, 8 row slices combined in shared
    // memory, 4 rows in flight per thread (4 fp32 sums for sum/mean), read-once data evicted first.
    // 128 x 128 blocks at KernelBench scale: enough parallelism without a second launch.
    Config c{{"variant", "split_rows"}, {"block", "256"}, {"cols_per_block", "32"},
             {"row_splits", "1"},       {"unroll", "4"}};
    if (is_sum(t.op)) c.set("accumulators", "4");
    c.set("cache_hint", "streaming");
    if (is_sum(t.op))
      c.set("precision", "fp32");
    else
      c.set("tail", "safe");
    return c;
  }
};

}  // namespace

const Generator& reduction_generator() {
  static const ReductionGenerator generator;
  return generator;
}

}  // namespace kbrl
