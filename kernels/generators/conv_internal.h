#pragma once
// Internal to the conv generator (conv.h): conv.cpp (tasks, knob spaces, launch plans) builds its
// sources with conv_sources.cpp (the direct and implicit GEMM kernels, cuda/conv.cuh and
// cuda/conv_igemm.cuh) and conv_depthwise.cpp (tasks 82-85 and task 86's first pass).
#include <cstdint>
#include <initializer_list>
#include <string>

#include <kernels/generator.h>

namespace kbrl {

/// A convolution as a 3-d one (1-d and 2-d get unit leading dims), groups = 1 or depthwise.
struct ConvGeo {
  int64_t N = 1, C = 1, D = 1, H = 1, W = 1;     // input
  int64_t Cout = 1, KD = 1, KH = 1, KW = 1;      // weight [Cout, C/groups, KD, KH, KW]
  int64_t OD = 1, OH = 1, OW = 1;                // output spatial
  int64_t sd = 1, sh = 1, sw = 1, pd = 0, ph = 0, pw = 0, dd = 1, dh = 1, dw = 1;
  int64_t Kred() const { return C * KD * KH * KW; }  // the reduction length (groups = 1)
  int64_t M() const { return N * OD * OH * OW; }     // output positions
};

/// The reduction dim of the transposed weights is padded to a multiple of the largest tile_k.
constexpr int kConvKAlign = 16;

/// The implicit GEMM kernel's compile-time configuration.
struct ConvGemmCfg {
  int bm, bn, bk, items, stages;  // tile_m, tile_n, tile_k, items_per_thread, stages
  std::string precision;          // fp32, tf32, tf32x3
  bool fused = false;             // task 86: the A operand is the depthwise conv of x
  int dkh = 3, dkw = 3;           // fused: the depthwise kernel
  int threads() const { return bm * bn / items; }
};

/// The source's first lines: a comment naming the `knobs` of `config` the source depends on
/// (shapes are kernel arguments, so tasks and launch-only knobs share compile units), then the
/// prelude every conv source starts with.
std::string conv_source_header(const Config& config, std::initializer_list<const char*> knobs);

/// The prep kernels kbrl_conv_prep and kbrl_conv_prep_bias (transposed weights, gather table).
const std::string& conv_prep_source();

/// The implicit GEMM kernel kbrl_conv_igemm.
std::string conv_gemm_source(const ConvGemmCfg& c);

/// The direct kernel kbrl_conv_direct, `items` output channels per thread.
std::string conv_direct_source(int items);

}  // namespace kbrl
