#include "norm.h"

#include <algorithm>
#include <string>

#include <kbrl/error.h>

#include "cuda_text.h"
#include "family_common.h"
#include "norm_internal.h"
#include "rms_norm.h"

namespace kbrl {

namespace norm_detail {

void add_precision_knobs(KnobSpace& space) {
  space
      .add_knob({"cache_hint", {"none", "streaming"},
                 "streaming: the last read of x with __ldcs and y stored with __stcs"})
      .add_knob({"precision", {"fp32", "fp16_compute"},
                 "fp16_compute (unsafe): the normalizing arithmetic runs on __half (statistics "
                 "stay fp32/fp64)"})
      .add_knob({"fast_math", {"off", "on"},
                 "on (unsafe): --use_fast_math, rsqrtf and approximate division"});
}

std::string common_defines(const Config& c) {
  const bool half = c.at("precision") == "fp16_compute";
  const bool fast = c.at("fast_math") == "on";
  std::string s = fmt::format(
      "#define KBRL_STREAM {}  // cache_hint={}\n"
      "#define KBRL_HALF {}    // precision={}{}\n"
      "#define KBRL_FAST {}    // fast_math={}{}\n",
      c.at("cache_hint") == "streaming" ? 1 : 0, c.at("cache_hint"), half ? 1 : 0,
      c.at("precision"), half ? " (unsafe: the normalizing arithmetic runs on __half)" : "",
      fast ? 1 : 0, c.at("fast_math"),
      fast ? " (unsafe: rsqrtf and approximate division under --use_fast_math)" : "");
  if (half) s += "#include <cuda_fp16.h>\n";
  return s;
}

}  // namespace norm_detail

namespace {

using namespace norm_detail;

/// What a task reduces and how it normalizes.
enum class Kind {
  moments,  // mean and biased variance: y = (x - mean) / sqrt(var + eps) [* w + b]
  sumsq,    // y = x / sqrt(sum of squares) (37 over the whole tensor, 39 over each row)
  sumabs,   // y = x / mean(|x|) over each row (38)
  rms,      // y = x / sqrt(mean over dim 1 of x^2 + eps) (36)
};

/// The affine of a moment norm: none; one weight/bias per piece of a segment (a channel); or an
/// element-wise weight/bias over the segment (LayerNorm).
enum class Affine { none, per_piece, element };

struct NormTask {
  int id;
  Kind kind;
  Affine affine;
  const char* math;
  bool block_per_segment;  // enough segments (>= 896 at KernelBench scale) for a block each
  bool split_inline;       // few enough chunk statistics per segment to merge in every block
};

constexpr NormTask kTasks[] = {
    {33, Kind::moments, Affine::per_piece,
     "BatchNorm2d (training): per-channel batch mean and biased variance over N, H, W", false, true},
    {34, Kind::moments, Affine::none, "InstanceNorm2d: per-(n, c) mean and biased variance", true,
     true},
    {35, Kind::moments, Affine::per_piece,
     "GroupNorm (8 groups): per-(n, group) mean and biased variance, per-channel affine", true,
     true},
    {36, Kind::rms, Affine::none, "RMSNorm: x / sqrt(mean over dim 1 of x^2 + eps)", false, false},
    {37, Kind::sumsq, Affine::none, "Frobenius norm: x / ||x||_F over the whole tensor", false,
     false},
    {38, Kind::sumabs, Affine::none, "L1 norm: x / mean(|x|) over dim 1", true, true},
    {39, Kind::sumsq, Affine::none, "L2 norm: x / ||x||_2 over dim 1", true, true},
    {40, Kind::moments, Affine::element,
     "LayerNorm over the last three dims: mean and biased variance, element-wise affine", false,
     true},
};

constexpr int64_t kGroups = 8;      // task 35

const NormTask* find_task(int id) { return find_entry(kTasks, &NormTask::id, id); }

const NormTask& task_of(const TaskSpec& task) {
  const NormTask* t = find_task(task.id);
  check_covered(t != nullptr, "norm", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.outputs.size() == 1 &&
                       task.outputs[0].shape == task.inputs[0].shape,
                   "task {}: the norm generator expects y = f(x) in x's shape", task.id);
  return *t;
}

/// The statistic domains of a planar task: S segments, each P contiguous pieces of Lp elements;
/// piece p of segment s starts at s * seg_stride + p * piece_stride. A per-piece affine reads
/// channel (s % cs_mod) * cs_mul + p * cp_mul.
struct Geometry {
  int64_t S = 1, P = 1, Lp = 1, seg_stride = 0, piece_stride = 0;
  int64_t cs_mod = 1, cs_mul = 0, cp_mul = 0;
};

Geometry geometry_of(const NormTask& t, const TaskSpec& task) {
  const auto& shape = task.inputs[0].shape;
  Geometry g;
  const int64_t numel = task.inputs[0].numel();
  switch (t.id) {
    case 33: {  // segment = channel c: N pieces of H*W at stride C*H*W
      KBRL_CHECK_INPUT(shape.size() == 4, "task 33: expected x:[N,C,H,W]");
      const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
      g = {c, n, hw, hw, c * hw, c, 1, 0};
      break;
    }
    case 34: {  // segment = plane (n, c)
      KBRL_CHECK_INPUT(shape.size() == 4, "task 34: expected x:[N,C,H,W]");
      const int64_t hw = shape[2] * shape[3];
      g = {shape[0] * shape[1], 1, hw, hw, hw, 1, 0, 0};
      break;
    }
    case 35: {  // segment = (n, group): C/G pieces (channels) of H*W
      KBRL_CHECK_INPUT(shape.size() == 4 && shape[1] % kGroups == 0,
                       "task 35: expected x:[N,C,H,W] with C divisible by {}", kGroups);
      const int64_t cg = shape[1] / kGroups, hw = shape[2] * shape[3];
      g = {shape[0] * kGroups, cg, hw, cg * hw, hw, kGroups, cg, 1};
      break;
    }
    case 37:  // one segment: the whole tensor
      g = {1, 1, numel, numel, numel, 1, 0, 0};
      break;
    case 38:
    case 39:  // segment = row
      KBRL_CHECK_INPUT(shape.size() == 2, "task {}: expected x:[rows, cols]", t.id);
      g = {shape[0], 1, shape[1], shape[1], shape[1], 1, 0, 0};
      break;
    case 40: {  // segment = sample n: C*H*W elements, weight/bias [C,H,W]
      KBRL_CHECK_INPUT(shape.size() == 4 && task.parameters.size() == 2 &&
                           task.parameters[0].numel() == numel / shape[0],
                       "task 40: expected x:[N,C,H,W] and weight, bias:[C,H,W]");
      g = {shape[0], 1, numel / shape[0], numel / shape[0], numel / shape[0], 1, 0, 0};
      break;
    }
    default:
      throw InternalError(fmt::format("norm: no geometry for task {}", t.id));
  }
  if (t.affine == Affine::per_piece)
    KBRL_CHECK_INPUT(task.parameters.size() == 2 && task.parameters[0].numel() == shape[1],
                     "task {}: expected per-channel weight and bias", t.id);
  return g;
}

std::string planar_source(const NormTask& t, const Config& c) {
  int kind = 0;
  const char* what = "";
  switch (t.kind) {
    case Kind::moments:
      kind = c.at("stats") == "welford" ? 0 : 1;
      what = kind == 0 ? "mean and biased variance by Welford's updates and Chan's merges"
                       : "mean and biased variance from fp32 sums and sums of squares";
      break;
    case Kind::sumsq:
      kind = 2;
      what = "y = x / sqrt(sum of x^2)";
      break;
    case Kind::sumabs:
      kind = 3;
      what = "y = x / mean(|x|)";
      break;
    case Kind::rms:
      throw InternalError("norm: task 36 has its own kernel");
  }
  const int affine = t.affine == Affine::none ? 0 : t.affine == Affine::per_piece ? 1 : 2;
  const char* affine_words = affine == 0   ? "none"
                             : affine == 1 ? "one weight/bias per piece (channel)"
                                           : "element-wise weight/bias over the segment";
  std::string s = cuda_text::fill("norm_planar_math.cuh", "unit_header",
                                  {{"WHAT", what}, {"AFFINE", affine_words}});
  s += fmt::format("#define KBRL_KIND {}\n#define KBRL_AFFINE {}\n", kind, affine);
  s += common_defines(c);
  s += cuda_text::section("norm_planar_math.cuh", "statistics");
  s += cuda_text::section("norm_planar_kernels.cuh", "kernels");
  return s;
}

std::vector<KernelArg> with_affine(const NormTask& t, std::vector<KernelArg> args) {
  // x, y [, weight, bias]
  if (t.affine != Affine::none) {
    args.push_back(KernelArg{ArgKind::parameter, 0});
    args.push_back(KernelArg{ArgKind::parameter, 1});
  }
  return args;
}

Candidate planar_candidate(const NormTask& t, const TaskSpec& task, const Config& c) {
  const Geometry g = geometry_of(t, task);
  const int64_t block = c.integer("block");
  const int64_t vec = c.integer("vec");
  const std::string variant = c.at("variant");
  const double eps = t.kind == Kind::moments ? kEps : 0.0;
  Candidate cand;
  cand.task_id = task.id;
  cand.source = planar_source(t, c);
  const KernelArg x{ArgKind::input, 0}, y{ArgKind::output, 0};
  const uint32_t b32 = static_cast<uint32_t>(block);
  const KernelArg vec4 = i32_arg(vec == 4 ? 1 : 0);
  if (variant == "block_per_segment") {
    Launch l;
    l.kernel = "kbrl_norm_segment";
    l.grid = {static_cast<uint32_t>(std::min(g.S, kMaxGrid)), 1, 1};
    l.block = {b32, 1, 1};
    l.args = with_affine(t, {x, y});
    for (int64_t v : {g.S, g.P, g.Lp, g.seg_stride, g.piece_stride, g.cs_mod, g.cs_mul, g.cp_mul})
      l.args.push_back(i64_arg(v));
    l.args.push_back(f32_arg(eps));
    l.args.push_back(vec4);
    cand.launches.push_back(std::move(l));
  } else {
    const int64_t cl = std::min(g.Lp, block * vec * c.integer("items_per_thread"));
    const int64_t Q = (g.Lp + cl - 1) / cl;
    const int64_t total = g.S * g.P * Q;
    KBRL_CHECK_INPUT(total <= kMaxGrid, "task {}: {} chunks exceed CUDA's grid limit", task.id,
                     total);
    const uint32_t grid = static_cast<uint32_t>(total);
    cand.scratch.push_back({"chunk_stats", total * 8});
    Launch stats;
    stats.kernel = "kbrl_norm_stats";
    stats.grid = {grid, 1, 1};
    stats.block = {b32, 1, 1};
    stats.args = {x, KernelArg{ArgKind::scratch, 0}};
    for (int64_t v : {g.S, g.P, Q, g.Lp, cl, g.seg_stride, g.piece_stride})
      stats.args.push_back(i64_arg(v));
    stats.args.push_back(vec4);
    cand.launches.push_back(std::move(stats));
    Launch apply;
    apply.grid = {grid, 1, 1};
    apply.block = {b32, 1, 1};
    apply.args = with_affine(t, {x, y});
    if (variant == "split") {
      cand.scratch.push_back({"segment_coefficients", g.S * 8});
      Launch fin;
      fin.kernel = "kbrl_norm_finalize";
      fin.grid = {static_cast<uint32_t>(std::min(g.S, kMaxGrid)), 1, 1};
      fin.block = {b32, 1, 1};
      fin.args = {KernelArg{ArgKind::scratch, 0}, KernelArg{ArgKind::scratch, 1}};
      for (int64_t v : {g.S, g.P, Q, g.Lp, cl}) fin.args.push_back(i64_arg(v));
      fin.args.push_back(f32_arg(eps));
      cand.launches.push_back(std::move(fin));
      apply.kernel = "kbrl_norm_apply";
      apply.args.push_back(KernelArg{ArgKind::scratch, 1});
    } else {
      apply.kernel = "kbrl_norm_apply_inline";
      apply.args.push_back(KernelArg{ArgKind::scratch, 0});
    }
    for (int64_t v : {g.S, g.P, Q, g.Lp, cl, g.seg_stride, g.piece_stride, g.cs_mod, g.cs_mul,
                      g.cp_mul})
      apply.args.push_back(i64_arg(v));
    if (variant == "split_inline") apply.args.push_back(f32_arg(eps));
    apply.args.push_back(vec4);
    cand.launches.push_back(std::move(apply));
  }
  add_fast_math_option(cand, c);
  return cand;
}

KnobSpace planar_space(const NormTask& t) {
  KnobSpace space;
  space.add_knob({"variant", {"block_per_segment", "split", "split_inline"},
                  "block_per_segment: one block per segment, statistics then normalization in one "
                  "launch; split: chunk statistics to scratch, a finalize launch (one block per "
                  "segment) and a normalizing launch; split_inline: chunk statistics, then every "
                  "normalizing block merges its segment's chunk statistics itself"});
  if (t.kind == Kind::moments)
    space.add_knob({"stats", {"welford", "sum_sumsq"},
                    "welford: per-thread Welford updates (4 values at a time with vec=4) and "
                    "Chan merges; sum_sumsq: fp32 sums and sums of squares, var = E[x^2] - mean^2 "
                    "(safe for data of moderate mean/std ratio)"});
  space.add_knob({"block", {"256", "512", "1024"}, "threads per block"})
      .add_knob({"vec", {"1", "4"},
                 "floats per access: float4 over the 16-byte-aligned body of every run (scalar "
                 "head and tail), or element by element (a kernel argument)"})
      .add_knob({"items_per_thread", {"segment", "8", "32", "128"},
                 "split plans: a block covers block * vec * items_per_thread elements of a piece "
                 "(a chunk); segment: the whole segment (block_per_segment)"});
  add_precision_knobs(space);
  const bool bps = t.block_per_segment, inl = t.split_inline;
  space.add_constraint({fmt::format("variant in {{{}split{}}} for task {}",
                                    bps ? "block_per_segment, " : "", inl ? ", split_inline" : "",
                                    t.id),
                        {"variant"},
                        [bps, inl](const Config& c) {
                          const std::string& v = c.at("variant");
                          return v == "split" || (v == "block_per_segment" && bps) ||
                                 (v == "split_inline" && inl);
                        }});
  space.add_constraint({"items_per_thread=segment exactly when variant=block_per_segment",
                        {"variant", "items_per_thread"},
                        [](const Config& c) {
                          return (c.at("variant") == "block_per_segment") ==
                                 (c.at("items_per_thread") == "segment");
                        }});
  space.add_constraint(fast_math_needs_fp32());
  return space;
}

class NormGenerator final : public Generator {
 public:
  std::string_view name() const override { return "norm"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const NormTask& t = task_of(task);
    return t.kind == Kind::rms ? rms_norm_space() : planar_space(t);
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const NormTask& t = task_of(task);
    const Config config = checked_config(space(task), given);
    return t.kind == Kind::rms ? rms_norm_candidate(task, config)
                               : planar_candidate(t, task, config);
  }

  Config expert(const TaskSpec& task) const override {
    const NormTask& t = task_of(task);
    if (t.kind == Kind::rms) return rms_norm_expert();
    // Rows (38, 39) and planes (34): one block per segment, one launch, and for 256 KiB rows the
    // second read mostly from L2 (1024 threads: few rows in flight). Few or large segments (33,
    // 35, 37, 40): 64K-element chunks (512 threads x float4 x 32) for parallelism, statistics
    // merged by a finalize launch.
    const bool bps = t.id == 34 || t.id == 38 || t.id == 39;
    Config c;
    c.set("variant", bps ? "block_per_segment" : "split");
    if (t.kind == Kind::moments) c.set("stats", "welford");
    c.set("block", t.id == 38 || t.id == 39 ? "1024" : "512");
    c.set("vec", "4");
    c.set("items_per_thread", bps ? "segment" : "32");
    c.set("cache_hint", "streaming");
    c.set("precision", "fp32");
    c.set("fast_math", "off");
    return c;
  }
};

}  // namespace

const Generator& norm_generator() {
  static const NormGenerator generator;
  return generator;
}

}  // namespace kbrl
