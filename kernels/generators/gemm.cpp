#include "gemm.h"

#include <algorithm>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "family_common.h"
#include "matvec.h"

namespace kbrl {
namespace {

constexpr int kSplitTask = 6;
constexpr int kTasks[] = {1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18};

bool covered(int id) { return std::find(std::begin(kTasks), std::end(kTasks), id) != std::end(kTasks); }

void check_covered(const TaskSpec& task) {
  check_covered(covered(task.id), "gemm", task);
}

/// The block tiles (tile_m, tile_n, items_per_thread) the space offers: threads = tile_m * tile_n /
/// items_per_thread^2, from 64 to 512.
struct Shape {
  int bm, bn, ipt;
};
constexpr Shape kShapes[] = {{128, 128, 8}, {128, 64, 8}, {64, 128, 8}, {64, 64, 8},
                             {128, 64, 4},  {64, 128, 4}, {64, 64, 4},  {32, 32, 4}};

bool is_shape(int bm, int bn, int ipt) {
  for (const Shape& s : kShapes)
    if (s.bm == bm && s.bn == bn && s.ipt == ipt) return true;
  return false;
}

/// C[z](M,N) = op(A[z]) op(B[z]) over K, as the task stores it.
struct Problem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int tri = 0;  // 0: none, 1: triu of the product of upper-triangular inputs, 2: tril (lower)
  int64_t lda = 0, ldb = 0, ldc = 0;
};

int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= shape[i];
  return p;
}

Problem problem_of(const TaskSpec& task) {
  check_covered(task);
  KBRL_CHECK_INPUT(task.inputs.size() == 2 && task.outputs.size() == 1 && task.parameters.empty(),
                   "task {}: the gemm generator expects C = f(A, B)", task.id);
  const auto& a = task.inputs[0].shape;
  const auto& b = task.inputs[1].shape;
  const auto& c = task.outputs[0].shape;
  Problem p;
  p.trans_a = task.id == 16 || task.id == 18;
  p.trans_b = task.id == 17 || task.id == 18;
  p.tri = task.id == 14 ? 1 : task.id == 15 ? 2 : 0;
  if (task.id == 3) {
    KBRL_CHECK_INPUT(a.size() == 3 && b.size() == 3 && a[0] == b[0] && a[2] == b[1],
                     "task 3: bmm shapes");
    p.batch = a[0];
    p.m = a[1];
    p.k = a[2];
    p.n = b[2];
  } else {
    KBRL_CHECK_INPUT(a.size() >= 2 && b.size() == 2, "task {}: matmul shapes", task.id);
    if (p.trans_a) {
      p.k = a[0];
      p.m = a[1];
    } else {
      p.m = product(a, 0, a.size() - 1);
      p.k = a.back();
    }
    p.n = p.trans_b ? b[0] : b[1];
    KBRL_CHECK_INPUT((p.trans_b ? b[1] : b[0]) == p.k, "task {}: inner dimensions differ", task.id);
  }
  KBRL_CHECK_INPUT(product(c, 0, c.size()) == p.batch * p.m * p.n && c.back() == p.n,
                   "task {}: output shape", task.id);
  p.lda = p.trans_a ? p.m : p.k;
  p.ldb = p.trans_b ? p.k : p.n;
  p.ldc = p.n;
  return p;
}

// ---------------------------------------------------------------------------------------------
// The tiled GEMM (every task but 4, which matvec.cpp serves). Its device code: cuda/gemm.cuh (the
// skeleton) and one math path, cuda/gemm_simt.cuh or cuda/gemm_tensor_core.cuh.

bool tensor_core(const Config& c) { return c.at("precision") != "fp32"; }

std::string gemm_source(const Config& config) {
  const int bm = static_cast<int>(config.integer("tile_m"));
  const int bn = static_cast<int>(config.integer("tile_n"));
  const int bk = static_cast<int>(config.integer("tile_k"));
  const int ipt = static_cast<int>(config.integer("items_per_thread"));
  const bool tc = tensor_core(config);
  const char* path = tc ? "gemm_tensor_core.cuh" : "gemm_simt.cuh";
  std::string s = cuda_text::fill(path, "header",
                                  {{"TILE_M", std::to_string(bm)}, {"TILE_N", std::to_string(bn)},
                                   {"TILE_K", std::to_string(bk)}, {"IPT", std::to_string(ipt)}});
  s += fmt::format("constexpr int BM = {}, BN = {}, BK = {}, TM = {}, TN = {};\n", bm, bn, bk, ipt,
                   ipt);
  s += cuda_text::section("gemm.cuh", "common");
  if (tc) s += cuda_text::section(path, "helpers");
  s += cuda_text::fill("gemm.cuh", "kernel",
                       {{"DECL", cuda_text::section(path, "decl")},
                        {"COMPUTE", cuda_text::section(path, "compute")},
                        {"EPILOGUE", cuda_text::section(path, "epilogue")}});
  return s;
}

/// The split-K factors of task 6 (K = 524288 at KernelBench's scale, 256 x 256 output).
const std::vector<std::string> kSplits = {"16", "64", "256"};

KnobSpace gemm_space(int task_id) {
  KnobSpace space;
  space
      .add_knob({"tile_m", {"32", "64", "128"}, "rows of C per block"})
      .add_knob({"tile_n", {"32", "64", "128"}, "columns of C per block"})
      .add_knob({"tile_k", {"8", "16", "32"}, "k-depth of the shared-memory tiles"})
      .add_knob({"items_per_thread", {"4", "8"},
                 "per-thread micro-tile: items_per_thread x items_per_thread outputs (fp32); the "
                 "warp tile's area for tensor cores"})
      .add_knob({"vec", {"1", "4"},
                 "floats per global access: 4 = float4 loads and stores where the address is "
                 "16-byte aligned and the chunk is in bounds (scalar otherwise)"})
      .add_knob({"stages", {"1", "2"},
                 "shared-memory buffers: 2 = double-buffered (the next tile's global loads overlap "
                 "the math), 1 = single-buffered"})
      .add_knob({"precision", {"fp32", "tf32x3", "tf32"},
                 "fp32: FFMA; tf32x3 (unsafe): tensor cores, TF32 with 3-way split operands (near "
                 "fp32); tf32 (unsafe): tensor cores, plain TF32"});
  if (task_id == kSplitTask)
    space.add_knob({"split_k", kSplits,
                    "K is cut into this many chunks; each writes its partial C to scratch, then a "
                    "second launch sums the chunks in order (deterministic)"});
  space.add_constraint(
      {"(tile_m, tile_n, items_per_thread) is one of 128x128/8, 128x64/8, 64x128/8, 64x64/8, "
       "128x64/4, 64x128/4, 64x64/4, 32x32/4 (64 to 512 threads)",
       {"tile_m", "tile_n", "items_per_thread"}, [](const Config& c) {
         return is_shape(static_cast<int>(c.integer("tile_m")),
                         static_cast<int>(c.integer("tile_n")),
                         static_cast<int>(c.integer("items_per_thread")));
       }});
  return space;
}

Candidate gemm_generate(const TaskSpec& task, const Config& config) {
  const Problem p = problem_of(task);
  const int64_t bm = config.integer("tile_m"), bn = config.integer("tile_n"),
                bk = config.integer("tile_k"), ipt = config.integer("items_per_thread");
  const int64_t stages = config.integer("stages");
  const bool tc = tensor_core(config);
  const int64_t threads = (bm / ipt) * (bn / ipt);
  const int64_t tiles = ((p.m + bm - 1) / bm) * ((p.n + bn - 1) / bn);
  KBRL_CHECK_INPUT(tiles >= 1 && tiles <= 2147483647, "task {}: {} tiles exceed CUDA's grid limit",
                   task.id, tiles);

  int64_t zs = p.batch, a_z = p.m * p.k, b_z = p.k * p.n, c_z = p.m * p.n;
  int64_t k_chunk = p.k, k_step = 0;
  const bool split = config.has("split_k");
  if (split) {
    const int64_t want = config.integer("split_k");
    k_chunk = (p.k + want - 1) / want;
    k_chunk = std::max<int64_t>(bk, (k_chunk + bk - 1) / bk * bk);  // whole k-tiles, aligned
    zs = (p.k + k_chunk - 1) / k_chunk;
    k_step = k_chunk;
    a_z = p.trans_a ? k_chunk * p.lda : k_chunk;
    b_z = p.trans_b ? k_chunk : k_chunk * p.ldb;
    c_z = p.m * p.n;
  }
  KBRL_CHECK_INPUT(zs >= 1 && zs <= 65535, "task {}: {} batches exceed CUDA's grid limit", task.id,
                   zs);

  int64_t smem = stages * bk * ((bm + 4) + (bn + 4)) * 4;
  if (tc) smem = std::max<int64_t>(smem, threads / 32 * 256 * 4);

  Candidate candidate;
  candidate.task_id = task.id;
  candidate.source = gemm_source(config);
  Launch main;
  main.kernel = "kbrl_gemm";
  main.grid = {static_cast<uint32_t>(tiles), static_cast<uint32_t>(zs), 1};
  main.block = {static_cast<uint32_t>(threads), 1, 1};
  main.shared_bytes = static_cast<uint32_t>(smem);
  main.args = {KernelArg{ArgKind::input, 0},
               KernelArg{ArgKind::input, 1},
               split ? KernelArg{ArgKind::scratch, 0} : KernelArg{ArgKind::output, 0},
               i64_arg(p.m),
               i64_arg(p.n),
               i64_arg(p.k),
               i64_arg(p.lda),
               i64_arg(p.ldb),
               i64_arg(p.ldc),
               i64_arg(p.batch > 1 || split ? a_z : 0),
               i64_arg(p.batch > 1 || split ? b_z : 0),
               i64_arg(p.batch > 1 || split ? c_z : 0),
               i64_arg(k_chunk),
               i64_arg(k_step),
               i32_arg(p.trans_a ? 1 : 0),
               i32_arg(p.trans_b ? 1 : 0),
               i32_arg(config.integer("vec") == 4 ? 1 : 0),
               i32_arg(stages),
               i32_arg(p.tri),
               i32_arg(config.at("precision") == "tf32x3" ? 1 : 0)};
  candidate.launches.push_back(std::move(main));
  if (split) {
    const int64_t n = p.m * p.n;
    candidate.scratch.push_back({"split_k_partials", zs * n * 4});
    Launch reduce;
    reduce.kernel = "kbrl_splitk_reduce";
    reduce.grid = {static_cast<uint32_t>((n + 255) / 256), 1, 1};
    reduce.block = {256, 1, 1};
    reduce.args = {KernelArg{ArgKind::scratch, 0}, KernelArg{ArgKind::output, 0}, i64_arg(n),
                   i64_arg(n), i32_arg(zs)};
    candidate.launches.push_back(std::move(reduce));
  }
  return candidate;
}

Config gemm_expert(const TaskSpec& task) {
  // The classic fp32 SIMT SGEMM: 128 x 128 block tiles, 8 x 8 outputs per thread (256 threads),
  // k-tiles of 16, double-buffered shared memory, float4 global accesses. Task 6 (256 x 256 output,
  // K = 524288) splits K 64 ways: 4 tiles x 64 chunks = 256 blocks, about one wave of an H100.
  Config c{{"tile_m", "128"}, {"tile_n", "128"}, {"tile_k", "16"}, {"items_per_thread", "8"},
           {"vec", "4"},      {"stages", "2"},    {"precision", "fp32"}};
  if (task.id == kSplitTask) c.set("split_k", "64");
  return c;
}

class GemmGenerator final : public Generator {
 public:
  std::string_view name() const override { return "gemm"; }
  bool covers(int task_id) const override { return covered(task_id); }

  KnobSpace space(const TaskSpec& task) const override {
    check_covered(task);
    return task.id == kMatvecTask ? matvec_space() : gemm_space(task.id);
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const Config config = checked_config(space(task), given);
    return task.id == kMatvecTask ? matvec_generate(task, config) : gemm_generate(task, config);
  }

  Config expert(const TaskSpec& task) const override {
    check_covered(task);
    return task.id == kMatvecTask ? matvec_expert() : gemm_expert(task);
  }
};

}  // namespace

const Generator& gemm_generator() {
  static const GemmGenerator generator;
  return generator;
}

}  // namespace kbrl
