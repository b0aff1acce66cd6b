// The compile stage (harness/compile/compile.h): success, structured failures with their log, the option
// and include allowlists, the size limit, the time and memory limits, and NVRTC API faults.
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <harness/compile/compile_flags.h>
#include <harness/compile/source_scan.h>
#include <kbrl/error.h>

#include "harness_testing.h"

namespace kbrl {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

using testing::candidate_of;
using testing::macro_bomb;

const char* kRelu = R"(extern "C" __global__ void relu(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];
}
)";

TEST(Compile, SmallKernel) {
  const CompileResult r = compile(candidate_of(kRelu));
  ASSERT_TRUE(r.ok()) << r.error() << "\n" << r.log;
  EXPECT_EQ(r.outcome(), Outcome::ok);
  EXPECT_TRUE(r.error().empty());
  EXPECT_FALSE(r.cache_hit);
  EXPECT_GT(r.seconds, 0.0);
  EXPECT_EQ(r.key.size(), 64u);
  const CompiledModule& m = r.module();
  EXPECT_EQ(m.key, r.key);
  EXPECT_EQ(m.arch, "sm_90a");
  EXPECT_TRUE(contains(m.ptx, ".entry relu(")) << m.ptx;
  EXPECT_TRUE(contains(m.ptx, ".target sm_90a"));
  ASSERT_GE(m.cubin.size(), 4u);
  EXPECT_EQ(m.cubin.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(m.options, r.options);
  EXPECT_EQ(r.options.at(0), "-arch=sm_90a");
  EXPECT_TRUE(contains(r.options.at(1), "-std=c++17"));
  EXPECT_FALSE(m.audit.reduced_precision()) << m.audit.summary();
}

TEST(Compile, FailureKeepsLogAndOptions) {
  const CompileResult r = compile(candidate_of("extern \"C\" __global__ void k(float* y) {\n  y[0] = undefined_name;\n}\n",
                                               {"-lineinfo"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.outcome(), Outcome::compile_error);
  EXPECT_TRUE(contains(r.log, "undefined_name")) << r.log;
  EXPECT_TRUE(contains(r.error(), "candidate.cu(2): error")) << r.error();
  EXPECT_TRUE(contains(r.error(), "undefined_name"));
  EXPECT_FALSE(r.options.empty());
  EXPECT_EQ(r.options.back(), "-lineinfo");
  EXPECT_EQ(r.key.size(), 64u);
  EXPECT_THROW(r.module(), std::logic_error);  // no module beside a compile error
}

TEST(Compile, OptionAllowlist) {
  const CanonicalOptions all = canonical_options(
      {"-use_fast_math", "--ftz=true", "-prec-div=false", "--prec-sqrt=false", "-fmad=true",
       "-extra-device-vectorization", "--maxrregcount=64", "--generate-line-info", "-ftz=true"});
  ASSERT_TRUE(all.ok()) << all.error;
  EXPECT_EQ(all.options, (std::vector<std::string>{"--extra-device-vectorization", "--use_fast_math",
                                                   "-fmad=true", "-ftz=true", "-lineinfo",
                                                   "-maxrregcount=64", "-prec-div=false",
                                                   "-prec-sqrt=false"}));
  const CompileResult ok = compile(candidate_of(kRelu, all.options));
  EXPECT_TRUE(ok.ok()) << ok.error() << ok.log;

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"-G", "compile option '-G' is not allowed"},
      {"--device-debug", "'--device-debug' is not allowed"},
      {"-I/etc", "'-I/etc' is not allowed"},
      {"--include-path=/etc", "is not allowed"},
      {"-include", "'-include' is not allowed"},
      {"--pre-include=/etc/passwd", "is not allowed"},
      {"-arch=sm_80", "'-arch=sm_80' is not allowed"},
      {"-Xptxas=-O0", "is not allowed"},
      {"-DX=1", "is not allowed"},
      {"use_fast_math", "'use_fast_math' is not allowed"},
      {"-ftz=maybe", "'-ftz=maybe' needs =true or =false"},
      {"-ftz", "needs =true or =false"},
      {"-maxrregcount=8", "register count in 16..255"},
      {"-maxrregcount=lots", "register count in 16..255"},
      {"-lineinfo=1", "is not allowed"},
  };
  for (const auto& [option, message] : refused) {
    const CompileResult r = compile(candidate_of(kRelu, {option}));
    EXPECT_FALSE(r.ok()) << option;
    EXPECT_TRUE(contains(r.error(), message)) << option << ": " << r.error();
    EXPECT_TRUE(r.options.empty()) << option << ": NVRTC ran";
  }
  const CompileResult conflict = compile(candidate_of(kRelu, {"-ftz=true", "--ftz=false"}));
  EXPECT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.error(), "conflicting compile options '-ftz=true' and '--ftz=false'");
}

TEST(Compile, IncludeAllowlist) {
  // Allowed headers resolve in the toolkit (NVRTC 13 has none built in).
  ASSERT_FALSE(CompileOptions::default_cuda_include_dir().empty());
  const CompileResult half = compile(candidate_of(R"(#include <cuda_fp16.h>
#include "cuda_bf16.h"
extern "C" __global__ void k(const float* x, float* y) {
  y[0] = __half2float(__float2half(x[0])) + __bfloat162float(__float2bfloat16(x[1]));
}
)"));
  EXPECT_TRUE(half.ok()) << half.error() << half.log;

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"#include <stdio.h>\n", "line 1: #include <stdio.h> is not allowed (allowed: cuda_fp16.h"},
      {"\n\n#include \"/etc/passwd\"\n", "line 3: #include \"/etc/passwd\" is not allowed"},
      {"  #  include <../../etc/passwd>\n", "#include <../../etc/passwd> is not allowed"},
      {"#define H <stdio.h>\n#include H\n", "line 2: #include H is not allowed: only a literal"},
      {"#include_next <cuda_fp16.h>\n", "#include_next is not allowed"},
      {"#import <stdio.h>\n", "#import is not allowed"},
      {"#inc\\\nlude <stdio.h>\n", "line 1: #include <stdio.h> is not allowed"},
      {"#/* a comment */include <stdio.h>\n", "#include <stdio.h> is not allowed"},
      {"%:include <stdio.h>\n", "#include <stdio.h> is not allowed"},
      {"#include <cuda_fp16.h\n", "only a literal"},
      // A scanner without raw strings or digit separators saw a comment start here; NVRTC does not.
      {"const char* s = R\"(\" /* )\";\n#include \"/etc/passwd\"\nconst char* t = \"*/\";\n",
       "line 2: #include \"/etc/passwd\" is not allowed"},
      {"const char* s = u8R\"x(\")x\" /* */;\n#include <stdio.h>\n", "line 2: #include <stdio.h> is not allowed"},
      {"int a = 1'2; const char* s = \"'/*\";\n#include <stdio.h>\nconst char* t = \"*/\";\n",
       "line 2: #include <stdio.h> is not allowed"},
  };
  for (const auto& [source, message] : refused) {
    const auto problem = check_source(source);
    ASSERT_TRUE(problem.has_value()) << source;
    EXPECT_TRUE(contains(*problem, message)) << source << ": " << *problem;
  }
  // What is not a directive is not refused.
  for (const char* fine : {"// #include <stdio.h>\n", "/*\n#include <stdio.h>\n*/\n",
                           "const char* s = \"#include <stdio.h>\";\n", "#pragma unroll\n",
                           "#include <cuda_fp16.h> // #include <stdio.h>\n",
                           "const char* s = R\"(\n#include <stdio.h>\n)\";\n",
                           "long b = 0x1'F'2; /* '\n#include <stdio.h>\n*/\n"}) {
    EXPECT_FALSE(check_source(fine).has_value()) << fine << ": " << *check_source(fine);
  }
  const CompileResult r = compile(candidate_of(std::string("#include <stdio.h>\n") + kRelu));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.options.empty());  // refused before NVRTC
}

TEST(Compile, SizeLimitAndNul) {
  std::string big = kRelu;
  big.resize(kMaxSourceBytes, ' ');
  EXPECT_FALSE(check_source(big).has_value());
  big += ' ';
  const CompileResult r = compile(candidate_of(big));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "over the limit of 1048576 bytes")) << r.error();
  EXPECT_LT(r.seconds, 0.5);
  const CompileResult nul = compile(candidate_of(std::string(kRelu) + std::string(1, '\0') + "junk"));
  EXPECT_EQ(nul.error(), "source contains a NUL byte");
}

TEST(Compile, BombTimesOut) {
  CompileOptions options;
  options.time_limit_seconds = 1.0;
  const auto start = std::chrono::steady_clock::now();
  const CompileResult r = compile(candidate_of(macro_bomb()), options);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "compile timed out after 1 s");
  EXPECT_GE(wall, 1.0);
  EXPECT_LT(wall, 3.0);
  // The parent is fine and compiles the next candidate.
  EXPECT_TRUE(compile(candidate_of(kRelu)).ok());
}

TEST(Compile, MemoryLimit) {
  CompileOptions options;
  options.memory_limit_bytes = 16 << 20;  // NVRTC needs more than this just to start
  const CompileResult r = compile(candidate_of(kRelu), options);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "memory limit 16 MiB")) << r.error();
}

TEST(Compile, DevicePrintfIsRefused) {
  const CompileResult r = compile(candidate_of(
      "extern \"C\" __global__ void k(const float* x) { printf(\"%f\\n\", x[threadIdx.x]); }\n"));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "device printf is not allowed")) << r.error();
}

TEST(Compile, Arch) {
  EXPECT_EQ(arch_for(9, 0), "sm_90a");
  EXPECT_EQ(arch_for(8, 6), "sm_86");
  EXPECT_EQ(arch_for(10, 0), "sm_100a");
  CompileOptions options;
  options.arch = "compute_90";
  const CompileResult ptx_only = compile(candidate_of(kRelu), options);
  ASSERT_TRUE(ptx_only.ok()) << ptx_only.error();
  EXPECT_TRUE(ptx_only.module().cubin.empty());
  EXPECT_TRUE(contains(ptx_only.module().ptx, ".target sm_90"));
  options.arch = "sm_86";
  const CompileResult ampere = compile(candidate_of(kRelu), options);
  EXPECT_TRUE(ampere.ok()) << ampere.error();
  EXPECT_NE(ampere.key, ptx_only.key);
  for (const char* bad : {"", "sm90", "sm_90 -G", "gfx90a"}) {
    options.arch = bad;
    EXPECT_THROW(compile(candidate_of(kRelu), options), InputError) << bad;
  }
  options.arch = "sm_90a";
  options.time_limit_seconds = 0;
  EXPECT_THROW(compile(candidate_of(kRelu), options), InputError);
}

// An arch NVRTC does not know is not the candidate's fault: ApiError through KBRL_NVRTC_CHECK,
// raised in the compile child and rethrown here.
TEST(Compile, NvrtcFaultIsApiError) {
  CompileOptions options;
  options.arch = "sm_99";
  try {
    compile(candidate_of(kRelu), options);
    ADD_FAILURE() << "no ApiError";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.api(), "NVRTC");
    EXPECT_TRUE(contains(e.what(), "in the compile child")) << e.what();
  }
}

}  // namespace
}  // namespace kbrl
