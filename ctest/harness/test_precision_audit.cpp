// The precision audit (harness/compile/precision_audit.h): real NVRTC output for precise, fast-math, fp16,
// bf16 and tf32 kernels, and the rules on hand-written PTX and SASS lines.
#include <algorithm>
#include <cstdlib>
#include <string_view>

#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <harness/compile/precision_audit.h>
#include <kbrl/error.h>

#include "harness_testing.h"

namespace kbrl {
namespace {

using C = PrecisionCategory;

using testing::candidate_of;

PrecisionAudit audit_of(const std::string& source, std::vector<std::string> options = {}) {
  const CompileResult r = compile(candidate_of(source, std::move(options)));
  EXPECT_TRUE(r.ok()) << r.error() << "\n" << r.log;
  return r.module().audit;
}

const PrecisionFinding* finding(const PrecisionAudit& audit, C category, const std::string& where) {
  for (const auto& f : audit.findings)
    if (f.category == category && f.where == where) return &f;
  return nullptr;
}

const char* kMath = R"(extern "C" __global__ void k(const float* x, float* y) {
  const float a = x[threadIdx.x], b = x[threadIdx.x + 32];
  y[threadIdx.x] = expf(a) + logf(a) + a / b + sqrtf(b) + sinf(a) + tanhf(a) + 1.0f / b;
}
)";

TEST(PrecisionAudit, PreciseMathIsClean) {
  const PrecisionAudit audit = audit_of(kMath);
  EXPECT_FALSE(audit.reduced_precision()) << audit.summary();
  // The math library's own approximations (ex2, lg2, rcp.ftz, rsqrt, div.approx inside these
  // functions) are not findings.
  const PrecisionAudit library = audit_of(R"(extern "C" __global__ void k(const float* x, float* y) {
  const float a = x[threadIdx.x], b = x[threadIdx.x + 32];
  y[threadIdx.x] = cbrtf(a) + fmodf(a, b) + sinhf(a) + asinf(a) + erfinvf(a) + powf(a, b) +
                   exp2f(a) + rsqrtf(b) + erff(a) + log1pf(a) + atan2f(a, b) + (float)exp((double)a);
}
)");
  EXPECT_FALSE(library.reduced_precision()) << library.summary();
}

TEST(PrecisionAudit, FastMathIsFound) {
  const PrecisionAudit audit = audit_of(kMath, {"--use_fast_math"});
  ASSERT_TRUE(audit.reduced_precision());
  const PrecisionFinding* option = finding(audit, C::fast_math, "options");
  ASSERT_NE(option, nullptr);
  EXPECT_EQ(option->evidence, "--use_fast_math");
  for (C category : {C::ftz, C::approx_sqrt, C::approx_transcendental}) {
    const PrecisionFinding* f = finding(audit, category, "ptx");
    ASSERT_NE(f, nullptr) << to_string(category) << " in " << audit.summary();
    EXPECT_GT(f->line, 0);
    EXPECT_GE(f->count, 1);
  }
  EXPECT_NE(finding(audit, C::approx_transcendental, "ptx")->evidence.find(".approx"), std::string::npos);

  const PrecisionAudit div = audit_of(kMath, {"-prec-div=false"});
  EXPECT_NE(finding(div, C::approx_div, "options"), nullptr) << div.summary();
  EXPECT_NE(finding(div, C::approx_rcp, "ptx"), nullptr) << div.summary();
  const PrecisionAudit sqrt = audit_of(kMath, {"-prec-sqrt=false"});
  EXPECT_NE(finding(sqrt, C::approx_sqrt, "ptx"), nullptr) << sqrt.summary();
  const PrecisionAudit ftz = audit_of(kMath, {"-ftz=true"});
  EXPECT_NE(finding(ftz, C::ftz, "options"), nullptr);
  EXPECT_NE(finding(ftz, C::ftz, "ptx"), nullptr);
}

TEST(PrecisionAudit, FastIntrinsicsInTheSource) {
  const PrecisionAudit audit = audit_of(R"(extern "C" __global__ void k(const float* x, float* y) {
  // __expf in a comment is not a call
  y[0] = x[0];
  y[1] = __expf(x[1]) + __fdividef(x[2], x[3]);
}
)");
  const PrecisionFinding* f = finding(audit, C::approx_intrinsic, "source");
  ASSERT_NE(f, nullptr) << audit.summary();
  EXPECT_EQ(f->line, 4);
  EXPECT_EQ(f->evidence, "y[1] = __expf(x[1]) + __fdividef(x[2], x[3]);");
}

TEST(PrecisionAudit, HalfBfloatAndTf32) {
  const PrecisionAudit half = audit_of(R"(#include <cuda_fp16.h>
extern "C" __global__ void k(const float* x, float* y) {
  const __half h = __hmul(__float2half(x[0]), __float2half(x[1]));
  y[0] = __half2float(h);
}
)");
  const PrecisionFinding* f16 = finding(half, C::fp16, "ptx");
  ASSERT_NE(f16, nullptr) << half.summary();
  EXPECT_NE(f16->evidence.find("f16"), std::string::npos) << f16->evidence;
  EXPECT_FALSE(half.has(C::bf16));

  const PrecisionAudit bf = audit_of(R"(#include <cuda_bf16.h>
extern "C" __global__ void k(const float* x, float* y) {
  y[0] = __bfloat162float(__hadd(__float2bfloat16(x[0]), __float2bfloat16(x[1])));
}
)");
  EXPECT_TRUE(bf.has(C::bf16)) << bf.summary();

  const PrecisionAudit tf32 = audit_of(R"(#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void k(const float* a, const float* b, float* c) {
  wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(c, fc, 16, wmma::mem_row_major);
}
)");
  EXPECT_TRUE(tf32.has(C::tf32)) << tf32.summary();
  EXPECT_FALSE(tf32.has(C::fp16));
}

TEST(PrecisionAudit, PtxRules) {
  const std::vector<std::pair<std::string, std::vector<C>>> cases = {
      {"\tmma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1}, {%r1}, {%r2}, {%f2};", {C::tf32}},
      {"   cvt.rna.tf32.f32 __$1, %f2;", {C::tf32}},
      {"\twgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, 1;", {C::bf16}},
      {"\tcvt.rn.satfinite.e4m3x2.f32 %rs1, %f1, %f2;", {C::fp8}},
      {"\t{ fma.rn.f16x2 %r2,%r1,%r1,%r1;\n}", {C::fp16}},
      {"\t@%p1 sin.approx.f32 %f2, %f1;", {C::approx_transcendental}},
      {"\ttanh.approx.f32 %f2, %f1;", {C::approx_transcendental}},
      {"\tsqrt.approx.ftz.f32 %f2, %f1;", {C::ftz, C::approx_sqrt}},
      {"\tdiv.full.f32 %f3, %f1, %f2;", {C::approx_div}},
      {"\trcp.approx.f32 %f2, %f1;", {C::approx_rcp}},
      {"\tadd.ftz.f32 %f3, %f1, %f2;", {C::ftz}},
      // The math library's own: nothing.
      {"\tex2.approx.ftz.f32 %f2, %f1;", {}},
      {"\tex2.approx.f32 %f2, %f1;", {}},
      {"\trcp.approx.ftz.f64 %fd2, %fd1;", {}},
      {"\tlg2.approx.f32 %f2, %f1;", {}},
      {"\trsqrt.approx.ftz.f32 %f2, %f1;", {}},
      {"\tdiv.approx.f32 %f3, %f1, %f2;", {}},
      {"\tdiv.rn.f32 %f3, %f1, %f2;", {}},
      {"\t// sin.approx.f32 in a comment", {}},
      {"\t.reg .f16 %h<3>;", {}},
      {"$L__BB0_2:", {}},
  };
  for (const auto& [ptx, expected] : cases) {
    PrecisionAudit audit;
    audit_ptx(ptx, audit);
    std::vector<C> found;
    for (const auto& f : audit.findings) found.push_back(f.category);
    std::sort(found.begin(), found.end());
    auto want = expected;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(found, want) << ptx << " -> " << audit.summary();
  }
}

TEST(PrecisionAudit, SassRules) {
  PrecisionAudit audit;
  audit_sass(R"(        /*0090*/                   HMMA.16816.F32.BF16 R4, R4, R8, RZ ;    /* 0x... */
        /*00a0*/                   HMMA.1688.F32.TF32 R4, R4, R8, RZ ;
        /*00b0*/              @P0  HFMA2 R1, R2, R3, R4 ;
        /*00c0*/                   MUFU.EX2 R1, R2 ;
        /*00d0*/                   MUFU.SIN R1, R2 ;
        /*00e0*/                   FFMA R1, R2, R3, R4 ;
)", audit);
  EXPECT_EQ(audit.summary(), "bf16, tf32, fp16, approx_transcendental");
  EXPECT_EQ(audit.findings.at(0).line, 1);
  EXPECT_EQ(audit.findings.at(2).evidence.find("/*00b0*/"), 0u);
}

TEST(PrecisionAudit, SassPassIsOptInAndItsToolOptional) {
  // This machine may or may not have nvdisasm / cuobjdump on PATH: either way the audit works, and
  // without KBRL_SASS_AUDIT=1 it never disassembles.
  const char* env = std::getenv("KBRL_SASS_AUDIT");
  const bool opted_in = env && std::string_view(env) == "1";
  const CompileResult r = compile(candidate_of(kMath));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.module().audit.sass_inspected, opted_in && find_sass_tool().has_value());
}

TEST(PrecisionAudit, PolicyAndNames) {
  EXPECT_EQ(parse_precision_policy("reject"), PrecisionPolicy::reject);
  EXPECT_EQ(to_string(PrecisionPolicy::flag), "flag");
  EXPECT_THROW(parse_precision_policy("maybe"), InputError);
  EXPECT_EQ(parse_precision_category("approx_transcendental"), C::approx_transcendental);
  EXPECT_THROW(parse_precision_category("fp64"), InputError);
  PrecisionAudit clean, reduced;
  reduced.findings.push_back({C::fp16, "ptx", "cvt.rn.f16.f32", 1, 1});
  EXPECT_FALSE(precision_rejected(clean, PrecisionPolicy::reject));
  EXPECT_TRUE(precision_rejected(reduced, PrecisionPolicy::reject));
  EXPECT_FALSE(precision_rejected(reduced, PrecisionPolicy::flag));
  EXPECT_FALSE(precision_rejected(reduced, PrecisionPolicy::allow));
}

}  // namespace
}  // namespace kbrl
