#pragma once
// The precision audit: does a compiled candidate use reduced-precision math (TF32, FP16, BF16,
// FP8, fast-math approximations)? The evaluator records the findings with every compile and a
// task's PrecisionPolicy decides what they mean (allow, flag, reject).
//
// What counts as evidence was settled empirically with NVRTC 13.0 for sm_90a: precise builds of
// 40+ float and double math functions (expf, logf, cbrtf, tanhf, powf, asinf, fmodf, sinhf, erfinvf,
// ...) emit ex2.approx, lg2.approx, rcp.approx.ftz, rsqrt.approx and div.approx internally, so those
// alone prove nothing. Never emitted by a precise build, and so evidence here: sqrt.approx,
// div.full, sin/cos/tanh.approx, rcp.approx.f32 without .ftz, and .ftz on any other instruction.
// The source is searched for the fast intrinsics (__expf, __fdividef, ...) and for inline asm with
// .approx, and the options for --use_fast_math, -ftz=true, -prec-div=false and -prec-sqrt=false.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kbrl/enum_names.h>

namespace kbrl {

/// What a task does with a reduced-precision finding.
enum class PrecisionPolicy {
  allow,   // record it, nothing more
  flag,    // record it and flag the rollout
  reject,  // the candidate fails (its reward is withheld)
};
template <>
struct EnumNames<PrecisionPolicy> {
  static constexpr std::string_view what = "precision policy";
  static constexpr EnumEntry<PrecisionPolicy> entries[] = {{PrecisionPolicy::allow, "allow"},
                                                           {PrecisionPolicy::flag, "flag"},
                                                           {PrecisionPolicy::reject, "reject"}};
};

enum class PrecisionCategory {
  fast_math,              // --use_fast_math
  ftz,                    // flush-to-zero on ordinary arithmetic (-ftz=true)
  approx_div,             // div.full, -prec-div=false
  approx_sqrt,            // sqrt.approx, -prec-sqrt=false
  approx_rcp,             // rcp.approx.f32 (no .ftz)
  approx_transcendental,  // sin/cos/tanh.approx
  approx_intrinsic,       // __expf, __logf, __sinf, __fdividef, ... or inline asm with .approx
  tf32,                   // .tf32 (mma, wmma, wgmma, cvt.rna.tf32)
  fp16,                   // .f16 / .f16x2 arithmetic, conversions, loads or mma
  bf16,                   // .bf16 / .bf16x2
  fp8,                    // .e4m3 / .e5m2 (and the fp6/fp4 formats .e2m3 / .e3m2 / .e2m1)
};
template <>
struct EnumNames<PrecisionCategory> {
  static constexpr std::string_view what = "precision category";
  static constexpr EnumEntry<PrecisionCategory> entries[] = {
      {PrecisionCategory::fast_math, "fast_math"},
      {PrecisionCategory::ftz, "ftz"},
      {PrecisionCategory::approx_div, "approx_div"},
      {PrecisionCategory::approx_sqrt, "approx_sqrt"},
      {PrecisionCategory::approx_rcp, "approx_rcp"},
      {PrecisionCategory::approx_transcendental, "approx_transcendental"},
      {PrecisionCategory::approx_intrinsic, "approx_intrinsic"},
      {PrecisionCategory::tf32, "tf32"},
      {PrecisionCategory::fp16, "fp16"},
      {PrecisionCategory::bf16, "bf16"},
      {PrecisionCategory::fp8, "fp8"},
  };
};

struct PrecisionFinding {
  PrecisionCategory category = PrecisionCategory::fast_math;
  std::string where;     // "options", "source", "ptx" or "sass"
  std::string evidence;  // the first line (or option) that shows it, trimmed
  int line = 0;          // that line's 1-based number in `where` (0 for options)
  int count = 0;         // how many lines (or options) show it
  bool operator==(const PrecisionFinding&) const = default;
};

struct PrecisionAudit {
  std::vector<PrecisionFinding> findings;  // one per (category, where), in order of discovery
  bool sass_inspected = false;             // a SASS tool was found and ran on the CUBIN

  bool reduced_precision() const { return !findings.empty(); }
  bool has(PrecisionCategory category) const;
  /// The distinct categories, comma-separated ("fp16, fast_math"); "" when none.
  std::string summary() const;
  bool operator==(const PrecisionAudit&) const = default;
};

std::string_view to_string(PrecisionPolicy policy);
PrecisionPolicy parse_precision_policy(std::string_view text);  // throws InputError
std::string_view to_string(PrecisionCategory category);
PrecisionCategory parse_precision_category(std::string_view text);  // throws InputError

/// Does `policy` fail a candidate with this audit? (reject and any finding.)
bool precision_rejected(const PrecisionAudit& audit, PrecisionPolicy policy);

/// The whole audit: options, source, PTX, and SASS when `cubin` is given, KBRL_SASS_AUDIT=1 and a
/// SASS tool is found (off by default: slow, and ptxas uses HFMA2.MMA as a move in fp32 code).
PrecisionAudit audit_precision(std::string_view source, const std::vector<std::string>& options,
                               std::string_view ptx, std::string_view cubin = {});

// The parts, each adding its findings to `audit`.
void audit_options(const std::vector<std::string>& options, PrecisionAudit& audit);
void audit_source(std::string_view source, PrecisionAudit& audit);
void audit_ptx(std::string_view ptx, PrecisionAudit& audit);
/// SASS as printed by nvdisasm or cuobjdump -sass: HMMA/HGMMA types, HADD2/HMUL2/HFMA2, F2FP,
/// MUFU.SIN/COS/TANH/SQRT.
void audit_sass(std::string_view sass, PrecisionAudit& audit);

/// The path of nvdisasm (preferred) or cuobjdump on PATH, or nullopt.
std::optional<std::string> find_sass_tool();
/// SASS of a CUBIN by `tool`, or nullopt when the tool fails.
std::optional<std::string> disassemble(const std::string& tool, std::string_view cubin);

}  // namespace kbrl
