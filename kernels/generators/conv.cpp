#include "conv.h"

#include <algorithm>
#include <string>
#include <vector>

#include <kbrl/error.h>

#include "conv_depthwise.h"
#include "conv_internal.h"
#include "family_common.h"

namespace kbrl {
namespace {

// ---------------------------------------------------------------------------------------------
// Tasks
// ---------------------------------------------------------------------------------------------

enum class Kind { standard, depthwise, separable };

/// The module options a task's spec cannot show (reference/tasks_conv.cpp): stride, padding and
/// dilation, one value per spatial dim or one value for all (empty: PyTorch's default).
struct TaskConv {
  int id;
  Kind kind;
  std::vector<int64_t> stride, padding, dilation;
};

const std::vector<TaskConv>& task_table() {
  static const std::vector<TaskConv> t = {
      {50, Kind::standard, {4}, {2}, {}},
      {54, Kind::standard, {}, {}, {}},
      {55, Kind::standard, {}, {}, {}},
      {56, Kind::standard, {}, {}, {}},
      {59, Kind::standard, {}, {}, {}},
      {60, Kind::standard, {}, {}, {}},
      {62, Kind::standard, {}, {}, {}},
      {63, Kind::standard, {}, {}, {}},
      {66, Kind::standard, {}, {}, {}},
      {67, Kind::standard, {}, {}, {}},
      {76, Kind::standard, {3}, {}, {4}},
      {80, Kind::standard, {}, {2, 4}, {2, 3}},
      {82, Kind::depthwise, {}, {}, {}},
      {83, Kind::depthwise, {}, {}, {}},
      {84, Kind::depthwise, {}, {}, {}},
      {85, Kind::depthwise, {}, {}, {}},
      {86, Kind::separable, {}, {1}, {}},  // the depthwise stage's options; pointwise is 1x1
      {87, Kind::standard, {}, {}, {}},
  };
  return t;
}

const TaskConv* find_task(int id) { return find_entry(task_table(), &TaskConv::id, id); }

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

/// The geometry of x:[N, C, s...] * w:[Cout, Cg, k...] -> y:[N, Cout, o...] under `t`'s options;
/// checks the output shape against the convolution size formula.
ConvGeo geometry(int id, const std::vector<int64_t>& x, const std::vector<int64_t>& w,
             const std::vector<int64_t>& y, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, const std::vector<int64_t>& dilation) {
  const size_t r = x.size() - 2;
  KBRL_CHECK_INPUT(r >= 1 && r <= 3 && w.size() == x.size() && y.size() == x.size(),
                   "task {}: the conv generator expects a 1-d, 2-d or 3-d convolution", id);
  auto expand = [&](const std::vector<int64_t>& v, int64_t fallback) {
    std::vector<int64_t> out(3, fallback);
    for (size_t i = 0; i < r; ++i) out[3 - r + i] = v.empty() ? fallback : v.size() == 1 ? v[0] : v.at(i);
    return out;
  };
  std::vector<int64_t> xs(3, 1), ks(3, 1), ys(3, 1);
  for (size_t i = 0; i < r; ++i) {
    xs[3 - r + i] = x[2 + i];
    ks[3 - r + i] = w[2 + i];
    ys[3 - r + i] = y[2 + i];
  }
  const auto s = expand(stride, 1), p = expand(padding, 0), d = expand(dilation, 1);
  ConvGeo g;
  g.N = x[0];
  g.C = x[1];
  g.D = xs[0], g.H = xs[1], g.W = xs[2];
  g.Cout = w[0];
  g.KD = ks[0], g.KH = ks[1], g.KW = ks[2];
  g.OD = ys[0], g.OH = ys[1], g.OW = ys[2];
  g.sd = s[0], g.sh = s[1], g.sw = s[2];
  g.pd = p[0], g.ph = p[1], g.pw = p[2];
  g.dd = d[0], g.dh = d[1], g.dw = d[2];
  KBRL_CHECK_INPUT(y[0] == g.N && y[1] == g.Cout, "task {}: unexpected output shape", id);
  for (int i = 0; i < 3; ++i)
    KBRL_CHECK_INPUT((xs[i] + 2 * p[i] - d[i] * (ks[i] - 1) - 1) / s[i] + 1 == ys[i],
                     "task {}: the output shape does not match the conv options", id);
  // 32-bit offsets inside one image, the positions and the gather table.
  KBRL_CHECK_INPUT(g.C * g.D * g.H * g.W < (int64_t{1} << 31) && g.M() < (int64_t{1} << 31) &&
                       g.Cout * g.OD * g.OH * g.OW < (int64_t{1} << 40),
                   "task {}: sizes past the conv generator's index ranges", id);
  return g;
}

struct TaskGeo {
  Kind kind;
  ConvGeo conv;       // standard: the conv; depthwise / separable: the depthwise stage
  ConvGeo pointwise;  // separable only: the 1x1 conv over the depthwise result
  bool bias = false;
};

TaskGeo task_geo(const TaskSpec& task) {
  const TaskConv* t = find_task(task.id);
  check_covered(t != nullptr, "conv", task);
  KBRL_CHECK_INPUT(task.inputs.size() == 1 && task.outputs.size() == 1 && !task.parameters.empty(),
                   "task {}: the conv generator expects y = conv(x) with weight parameters", task.id);
  const auto& x = task.inputs[0].shape;
  const auto& y = task.outputs[0].shape;
  TaskGeo tg;
  tg.kind = t->kind;
  if (t->kind == Kind::separable) {
    KBRL_CHECK_INPUT(task.parameters.size() == 2, "task {}: expected two weights", task.id);
    const auto& wd = task.parameters[0].shape;
    const auto& wp = task.parameters[1].shape;
    std::vector<int64_t> mid = {x[0], wd[0], 0, 0};
    for (int i = 0; i < 2; ++i) mid[2 + i] = x[2 + i] + 2 * t->padding[0] - (wd[2 + i] - 1);
    tg.conv = geometry(task.id, x, wd, mid, t->stride, t->padding, t->dilation);
    tg.pointwise = geometry(task.id, mid, wp, y, {}, {}, {});
    KBRL_CHECK_INPUT(wd[1] == 1 && wd[0] == x[1] && wp[1] == wd[0] && wp[2] == 1 && wp[3] == 1,
                     "task {}: expected a depthwise then a pointwise conv", task.id);
    return tg;
  }
  tg.conv = geometry(task.id, x, task.parameters[0].shape, y, t->stride, t->padding, t->dilation);
  tg.bias = task.parameters.size() > 1;
  if (t->kind == Kind::depthwise) {
    KBRL_CHECK_INPUT(task.parameters[0].shape[1] == 1 && tg.conv.Cout == tg.conv.C && !tg.bias &&
                         x.size() == 4,
                     "task {}: expected a 2-d depthwise conv without bias", task.id);
  } else {
    KBRL_CHECK_INPUT(task.parameters[0].shape[1] == x[1], "task {}: expected groups = 1", task.id);
  }
  return tg;
}

// ---------------------------------------------------------------------------------------------
// Knob spaces
// ---------------------------------------------------------------------------------------------

bool is_gemm_variant(const std::string& v) {
  return v == "implicit_gemm" || v == "fused" || v == "two_pass";
}

/// A GEMM tiling is legal with 128..512 threads (tile_m*tile_n/items_per_thread), at most 256 of
/// them with the 4x4 register tile.
bool gemm_tiling_ok(const Config& c) {
  const int64_t items = c.integer("items_per_thread");
  const int64_t t = c.integer("tile_m") * c.integer("tile_n") / items;
  return t >= 128 && t <= (items == 16 ? 256 : 512);
}

KnobSpace gemm_like_space(Kind kind) {
  KnobSpace space;
  const bool sep = kind == Kind::separable;
  if (sep)
    space.add_knob({"variant", {"fused", "two_pass"},
                    "fused: one implicit GEMM whose A operand is the depthwise conv computed while "
                    "staging (the intermediate never leaves the chip); two_pass: the depthwise conv "
                    "into a scratch tensor, then the pointwise conv as an implicit GEMM"});
  else
    space.add_knob({"variant", {"direct", "implicit_gemm"},
                    "direct: a thread per output position with items_per_thread output channels; "
                    "implicit_gemm: a block computes a tile_m x tile_n tile of (positions x output "
                    "channels), staging gathered input patches and weights in shared memory"});
  space
      .add_knob({"precision", {"fp32", "tf32", "tf32x3"},
                 "fp32 FMA; tf32 (unsafe): wmma tensor cores with TF32 operands; tf32x3 (unsafe): "
                 "wmma with each operand split in TF32 high and low parts, three products"})
      .add_knob({"tile_m", {"64", "128"},
                 "output positions per block (the GEMM's M tile; direct: threads per block)"})
      .add_knob({"tile_n", {"32", "64", "128"}, "output channels per block (the GEMM's N tile)"})
      .add_knob({"tile_k", {"8", "16"}, "reduction indices (C_in x kernel taps) per staged slice"})
      .add_knob({"items_per_thread", {"8", "16", "32", "64"},
                 "outputs per thread: GEMM 16 = 4x4, 32 = 8x4, 64 = 8x8 (positions x channels) "
                 "register tile; direct: output channels per thread (8, 16, 32)"})
      .add_knob({"stages", {"1", "2"},
                 "1: load, compute, repeat; 2: double-buffered shared memory with the next "
                 "slice's global loads in flight during the compute"})
      .add_knob({"grid", {"m_major", "n_major"},
                 "order of the tiles over the 1-d grid: m_major walks the positions first; "
                 "n_major puts the output-channel tiles of a position tile next to each other "
                 "(the input patches are read from DRAM once)"})
      .add_knob({"tail", {"safe", "dropped"},
                 "dropped (unsafe): the last partial tile of output positions is not launched"});
  space.add_constraint({"tf32/tf32x3 only with a GEMM variant, items_per_thread=32 (a warp per "
                        "32x32 tile), tile_k=16, stages=2 and tail=safe (one unsafe knob at a time)",
                        {"variant", "precision", "tile_k", "items_per_thread", "stages", "tail"},
                        [](const Config& c) {
                          if (c.at("precision") == "fp32") return true;
                          return is_gemm_variant(c.at("variant")) &&
                                 c.integer("items_per_thread") == 32 &&
                                 c.integer("tile_k") == 16 && c.integer("stages") == 2 &&
                                 c.at("tail") == "safe";
                        }});
  space.add_constraint(
      {"direct: tile_n=32, tile_k=8, stages=1 and items_per_thread in {8, 16, 32}; GEMM: "
       "items_per_thread in {16, 32, 64}, 128..512 threads (tile_m*tile_n/items_per_thread; at "
       "most 256 with items_per_thread=16) and stages=1 only with tile_k=16",
       {"variant", "tile_m", "tile_n", "tile_k", "items_per_thread", "stages"},
       [](const Config& c) {
         const int64_t items = c.integer("items_per_thread");
         if (c.at("variant") == "direct")
           return c.integer("tile_n") == 32 && c.integer("tile_k") == 8 &&
                  c.integer("stages") == 1 && items <= 32;
         return items >= 16 && gemm_tiling_ok(c) &&
                (c.integer("stages") == 2 || c.integer("tile_k") == 16);
       }});
  if (sep)
    space.add_constraint({"task 86: tile_n >= 64, and tile_k=8 with precision=fp32",
                          {"precision", "tile_n", "tile_k"}, [](const Config& c) {
                            return c.integer("tile_n") >= 64 &&
                                   (c.at("precision") != "fp32" || c.integer("tile_k") == 8);
                          }});
  return space;
}

// ---------------------------------------------------------------------------------------------
// Launch plans
// ---------------------------------------------------------------------------------------------

constexpr int kNAlign = 128;  // output channels padded to a multiple of the largest tile_n
constexpr int kPrepBlock = 256;

KernelArg arg(ArgKind kind, int index) { return KernelArg{kind, index}; }

/// Scratch 0: the transposed weights and the bias row; scratch 1: the gather table.
void add_prep(Candidate& cand, const ConvGeo& g, KernelArg weight, bool bias, int task_id) {
  const int64_t kpad = round_up(g.Kred(), kConvKAlign), npad = round_up(g.Cout, kNAlign);
  cand.scratch.push_back({"wt", (kpad + 1) * npad * 4});
  cand.scratch.push_back({"gather_table", kpad * 16});
  Launch l;
  l.kernel = bias ? "kbrl_conv_prep_bias" : "kbrl_conv_prep";
  l.grid = {grid_dim(((kpad + 1) * npad + kPrepBlock - 1) / kPrepBlock, task_id), 1, 1};
  l.block = {kPrepBlock, 1, 1};
  l.args = {weight};
  if (bias) l.args.push_back(arg(ArgKind::parameter, 1));
  l.args.insert(l.args.end(),
                {arg(ArgKind::scratch, 0), arg(ArgKind::scratch, 1), i64_arg(g.C), i64_arg(g.KD),
                 i64_arg(g.KH), i64_arg(g.KW), i64_arg(g.dd), i64_arg(g.dh), i64_arg(g.dw),
                 i64_arg(g.D), i64_arg(g.H), i64_arg(g.W), i64_arg(g.Kred()), i64_arg(kpad),
                 i64_arg(g.Cout), i64_arg(npad)});
  cand.launches.push_back(std::move(l));
}

/// The main kernel's launch: one block per (position tile, channel tile).
Launch main_launch(const std::string& kernel, const ConvGeo& g, int64_t tile_m, int64_t tile_n,
                   int64_t threads, bool dropped, bool n_major, KernelArg x, KernelArg aux,
                   int task_id) {
  const int64_t M = g.M();
  int64_t mtiles = (M + tile_m - 1) / tile_m;
  if (dropped) mtiles = std::max<int64_t>(1, M / tile_m);
  const int64_t ntiles = (g.Cout + tile_n - 1) / tile_n;
  Launch l;
  l.kernel = kernel;
  l.grid = {grid_dim(mtiles * ntiles, task_id), 1, 1};
  l.block = {static_cast<uint32_t>(threads), 1, 1};
  l.args = {x,               arg(ArgKind::scratch, 0), aux,             arg(ArgKind::output, 0),
            i64_arg(g.N),    i64_arg(g.C),             i64_arg(g.D),    i64_arg(g.H),
            i64_arg(g.W),    i64_arg(g.Cout),          i64_arg(g.OD),   i64_arg(g.OH),
            i64_arg(g.OW),   i64_arg(g.sd),            i64_arg(g.sh),   i64_arg(g.sw),
            i64_arg(g.pd),   i64_arg(g.ph),            i64_arg(g.pw),   i64_arg(g.Kred()),
            i64_arg(round_up(g.Cout, kNAlign)), i64_arg(mtiles), i32_arg(n_major ? 1 : 0)};
  return l;
}

class ConvGenerator final : public Generator {
 public:
  std::string_view name() const override { return "conv"; }
  bool covers(int task_id) const override { return find_task(task_id) != nullptr; }

  KnobSpace space(const TaskSpec& task) const override {
    const TaskConv* t = find_task(task.id);
    check_covered(t != nullptr, "conv", task);
    return t->kind == Kind::depthwise ? depthwise_space() : gemm_like_space(t->kind);
  }

  Candidate generate(const TaskSpec& task, const Config& given) const override {
    const TaskGeo tg = task_geo(task);
    const Config c = checked_config(space(task), given);
    if (tg.kind == Kind::depthwise) return depthwise_generate(task.id, tg.conv, c);
    Candidate cand;
    cand.task_id = task.id;
    const bool dropped = c.at("tail") == "dropped";
    const std::string variant = c.at("variant");
    const int64_t tile_m = c.integer("tile_m"), tile_n = c.integer("tile_n");
    const int items = static_cast<int>(c.integer("items_per_thread"));
    const bool n_major = c.at("grid") == "n_major";
    const auto gemm_header = [&] {
      return conv_source_header(c, {"variant", "precision", "tile_m", "tile_n", "tile_k",
                                    "items_per_thread", "stages"});
    };
    if (variant == "direct") {
      cand.source = conv_source_header(c, {"variant", "items_per_thread"}) + conv_prep_source() +
                    conv_direct_source(items);
      add_prep(cand, tg.conv, arg(ArgKind::parameter, 0), tg.bias, task.id);
      ConvGeo g = tg.conv;
      cand.launches.push_back(main_launch("kbrl_conv_direct", g, tile_m, items, tile_m, dropped,
                                          n_major, arg(ArgKind::input, 0),
                                          arg(ArgKind::scratch, 1), task.id));
      return cand;
    }
    ConvGemmCfg gc{static_cast<int>(tile_m), static_cast<int>(tile_n),
                   static_cast<int>(c.integer("tile_k")), items,
                   static_cast<int>(c.integer("stages")), c.at("precision")};
    const int64_t threads = gc.threads();
    if (variant == "implicit_gemm") {
      cand.source = gemm_header() + conv_prep_source() + conv_gemm_source(gc);
      add_prep(cand, tg.conv, arg(ArgKind::parameter, 0), tg.bias, task.id);
      cand.launches.push_back(main_launch("kbrl_conv_igemm", tg.conv, tile_m, tile_n, threads,
                                          dropped, n_major, arg(ArgKind::input, 0),
                                          arg(ArgKind::scratch, 1), task.id));
      return cand;
    }
    // Task 86: depthwise (tg.conv) then pointwise (tg.pointwise).
    const ConvGeo& dw = tg.conv;
    const ConvGeo& pw = tg.pointwise;
    if (variant == "fused") {
      KBRL_CHECK_INPUT(dw.sh == 1 && dw.sw == 1 && dw.dh == 1 && dw.dw == 1 && dw.D == 1,
                       "task {}: the fused variant expects a stride-1, undilated 2-d depthwise conv",
                       task.id);
      gc.fused = true;
      gc.dkh = static_cast<int>(dw.KH);
      gc.dkw = static_cast<int>(dw.KW);
      cand.source = gemm_header() + conv_prep_source() + conv_gemm_source(gc);
      add_prep(cand, pw, arg(ArgKind::parameter, 1), false, task.id);
      // The GEMM over the depthwise output's positions, gathering from x with its padding.
      ConvGeo g = pw;
      g.H = dw.H;
      g.W = dw.W;
      g.ph = dw.ph;
      g.pw = dw.pw;
      cand.launches.push_back(main_launch("kbrl_conv_igemm", g, tile_m, tile_n, threads, dropped,
                                          n_major, arg(ArgKind::input, 0),
                                          arg(ArgKind::parameter, 0), task.id));
      return cand;
    }
    // two_pass: the depthwise conv into scratch 2, then the pointwise GEMM over it.
    constexpr int kDwRows = 4, kDwItems = 4, kDwBlock = 256;
    cand.source = gemm_header() + depthwise_source(dw, kDwRows, kDwItems, false) +
                  conv_prep_source() + conv_gemm_source(gc);
    add_prep(cand, pw, arg(ArgKind::parameter, 1), false, task.id);
    cand.scratch.push_back({"depthwise_out", dw.N * dw.Cout * dw.OH * dw.OW * 4});
    cand.launches.insert(cand.launches.begin(),
                         depthwise_launch(dw, kDwRows, kDwItems, kDwBlock, false,
                                          arg(ArgKind::input, 0), arg(ArgKind::scratch, 2),
                                          task.id));
    cand.launches.push_back(main_launch("kbrl_conv_igemm", pw, tile_m, tile_n, threads, dropped,
                                        n_major, arg(ArgKind::scratch, 2),
                                        arg(ArgKind::scratch, 1), task.id));
    return cand;
  }

  Config expert(const TaskSpec& task) const override {
    const TaskGeo tg = task_geo(task);
    if (tg.kind == Kind::depthwise) return depthwise_expert();
    // An implicit GEMM with 128 positions per block and a 8x8 register tile per thread; the
    // channel tile covers all output channels when there are at most 128 of them.
    const int64_t cout = tg.kind == Kind::separable ? tg.pointwise.Cout : tg.conv.Cout;
    const std::string tile_n = cout <= 64 ? "64" : "128";
    return Config{{"variant", tg.kind == Kind::separable ? "fused" : "implicit_gemm"},
                  {"precision", "fp32"},
                  {"tile_m", "128"},
                  {"tile_n", tile_n},
                  {"tile_k", "8"},
                  {"items_per_thread", "64"},
                  {"stages", "2"},
                  {"grid", "n_major"},
                  {"tail", "safe"}};
  }
};

}  // namespace

const Generator& conv_generator() {
  static const ConvGenerator generator;
  return generator;
}

}  // namespace kbrl
