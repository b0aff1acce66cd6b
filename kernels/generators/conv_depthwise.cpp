#include "conv_depthwise.h"

#include <algorithm>

#include <fmt/format.h>

#include "cuda_text.h"
#include "family_common.h"

namespace kbrl {

std::string depthwise_source(const ConvGeo& g, int rows, int items, bool half) {
  constexpr const char* kFile = "conv_depthwise.cuh";
  std::string s;
  if (half) s += cuda_text::section(kFile, "fp16_include");
  s += cuda_text::section(kFile, "intro");
  s += fmt::format(
      "#define DW_KH {}\n#define DW_KW {}\n#define DW_SH {}\n#define DW_SW {}\n#define DW_DH {}\n"
      "#define DW_DW {}\n#define DW_ROWS {}\n#define DW_ITEMS {}\n",
      g.KH, g.KW, g.sh, g.sw, g.dh, g.dw, rows, items);
  s += cuda_text::section(kFile, half ? "mac_fp16" : "mac_fp32");
  s += cuda_text::section(kFile, "kernel");
  return s;
}

Launch depthwise_launch(const ConvGeo& g, int rows, int items, int64_t block, bool dropped,
                        KernelArg x, KernelArg out, int task_id) {
  const int64_t total = g.N * g.C * ((g.OH + rows - 1) / rows) * ((g.OW + items - 1) / items);
  int64_t blocks = (total + block - 1) / block;
  if (dropped) blocks = std::max<int64_t>(1, total / block);
  Launch l;
  l.kernel = "kbrl_conv_dw";
  l.grid = {grid_dim(blocks, task_id), 1, 1};
  l.block = {static_cast<uint32_t>(block), 1, 1};
  l.args = {x,             KernelArg{ArgKind::parameter, 0}, out,           i64_arg(g.C),
            i64_arg(g.H),  i64_arg(g.W),                     i64_arg(g.OH), i64_arg(g.OW),
            i64_arg(g.ph), i64_arg(g.pw),                    i64_arg(total)};
  return l;
}

KnobSpace depthwise_space() {
  KnobSpace space;
  space
      .add_knob({"rows_per_thread", {"1", "2", "4"},
                 "consecutive output rows per thread (input rows loaded once for all of them)"})
      .add_knob({"items_per_thread", {"2", "4", "8"},
                 "consecutive output columns per thread (input columns loaded once for all)"})
      .add_knob({"block", {"64", "128", "256", "512"}, "threads per block"})
      .add_knob({"precision", {"fp32", "fp16_compute"},
                 "fp16_compute (unsafe): each product x*w formed in __half (sums stay fp32)"})
      .add_knob({"tail", {"safe", "dropped"},
                 "dropped (unsafe): the last partial block of threads is not launched"});
  space.add_constraint({"one unsafe knob at a time", {"precision", "tail"}, [](const Config& c) {
                          return c.at("precision") == "fp32" || c.at("tail") == "safe";
                        }});
  return space;
}

Candidate depthwise_generate(int task_id, const ConvGeo& g, const Config& c) {
  const int rows = static_cast<int>(c.integer("rows_per_thread"));
  const int items = static_cast<int>(c.integer("items_per_thread"));
  const bool half = c.at("precision") == "fp16_compute";
  Candidate cand;
  cand.task_id = task_id;
  cand.source = conv_source_header(c, {"rows_per_thread", "items_per_thread", "precision"}) +
                depthwise_source(g, rows, items, half);
  cand.launches.push_back(depthwise_launch(g, rows, items, c.integer("block"),
                                           c.at("tail") == "dropped",
                                           KernelArg{ArgKind::input, 0},
                                           KernelArg{ArgKind::output, 0}, task_id));
  return cand;
}

Config depthwise_expert() {
  return Config{{"rows_per_thread", "4"}, {"items_per_thread", "4"}, {"block", "256"},
                {"precision", "fp32"},    {"tail", "safe"}};
}

}  // namespace kbrl
