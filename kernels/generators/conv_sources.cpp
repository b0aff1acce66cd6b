// The conv generator's direct and implicit GEMM sources (conv_internal.h): the #defines of the
// configuration and the choice of sections of cuda/conv.cuh and cuda/conv_igemm.cuh.
#include "conv_internal.h"

#include <fmt/format.h>

#include "cuda_text.h"

namespace kbrl {
namespace {

const std::string& conv_section(const char* name) { return cuda_text::section("conv.cuh", name); }

const std::string& igemm_section(const char* name) {
  return cuda_text::section("conv_igemm.cuh", name);
}

/// The register tile: TM positions x TN channels per thread (items_per_thread 16, 32, 64).
int tm_of(int items) { return items >= 32 ? 8 : 4; }
int tn_of(int items) { return items == 64 ? 8 : 4; }

}  // namespace

std::string conv_source_header(const Config& config, std::initializer_list<const char*> knobs) {
  std::string s = "// kbrl conv generator:";
  for (const char* k : knobs) s += fmt::format(" {}={}", k, config.at(k));
  return s + "\n" + conv_section("prelude");
}

const std::string& conv_prep_source() { return conv_section("prep"); }

std::string conv_gemm_source(const ConvGemmCfg& c) {
  const bool wmma = c.precision != "fp32";
  std::string s;
  if (wmma) s += igemm_section("mma_include");
  s += igemm_section("intro");
  s += fmt::format(
      "#define TILE_M {}\n#define TILE_N {}\n#define TILE_K {}\n#define NTHREADS {}\n"
      "#define STAGES {}\n#define TM {}\n#define TN {}\n#define KBRL_KALIGN {}\n",
      c.bm, c.bn, c.bk, c.threads(), c.stages, tm_of(c.items), tn_of(c.items), kConvKAlign);
  if (c.fused) s += fmt::format("#define DKH {}\n#define DKW {}\n", c.dkh, c.dkw);
  s += igemm_section("macros");
  s += igemm_section(wmma ? "smem_floats_wmma" : "smem_floats_fma");
  s += conv_section("decode_position");
  s += cuda_text::fill("conv_igemm.cuh", "signature",
                       {{"OPERAND", igemm_section(c.fused ? "operand_dwt" : "operand_table")},
                        {"SHAPE_PARAMS", conv_section("shape_params")}});
  s += conv_section("tile_decode");
  s += igemm_section("setup");
  s += igemm_section(c.fused ? "gather_fused" : "gather_table");
  s += igemm_section("stage");
  if (!wmma) {
    s += igemm_section("compute_fma");
  } else {
    const bool x3 = c.precision == "tf32x3";
    s += igemm_section("wmma_intro");
    s += igemm_section(x3 ? "tf32x3_note" : "tf32_note");
    s += igemm_section("wmma_setup");
    s += igemm_section(x3 ? "compute_tf32x3" : "compute_tf32");
  }
  s += igemm_section(c.stages == 2 ? "loop_2stage" : "loop_1stage");
  s += igemm_section(wmma ? "epilogue_wmma" : "epilogue_fma");
  return s;
}

std::string conv_direct_source(int items) {
  std::string s = cuda_text::fill("conv.cuh", "direct_intro", {{"ITEMS", std::to_string(items)}});
  s += fmt::format("#define TILE_N {}\n#define KBRL_KALIGN {}\n", items, kConvKAlign);
  s += conv_section("decode_position");
  s += cuda_text::fill("conv.cuh", "direct_signature",
                       {{"SHAPE_PARAMS", conv_section("shape_params")}});
  s += conv_section("tile_decode");
  s += conv_section("direct_body");
  return s;
}

}  // namespace kbrl
