// The compiled kernels' parameter lists (harness/compile/kernel_params.h), read from cubins NVRTC makes
// for several architectures (no GPU needed), and launch plans checked against them by the preflight
// (harness/compile/compile.h): matching plans
// pass, a wrong argument count or size is named, a malformed cubin is an InputError (never a
// crash), and every plan kbrl itself makes (the catalogue, each generator's expert configuration)
// matches its compiled kernels.
#include <fstream>
#include <future>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <harness/compile/kernel_params.h>
#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/generator.h>
#include <kernels/kernel_catalog.h>
#include <reference/task_registry.h>

#include "harness_testing.h"

namespace kbrl {
namespace {

const char* kKernels = R"(struct Triple { int a; double b; char c; };
extern "C" __global__ void relu(const float* x, float* y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];
}
extern "C" __global__ void no_params() {}
extern "C" __global__ void every_size(char c, short s, int i, float f, double d, Triple t, float* p, bool b) {
  if (p) p[0] = c + s + i + f + d + t.a + t.b + t.c + b;
}
__device__ __noinline__ void helper(float* a) { a[threadIdx.x] = 1.f; }
extern "C" __global__ void calls_helper(float* a) { helper(a); }
__global__ void mangled(float* a, int n, unsigned u) { a[n] = u; }
template <typename T> __global__ void templated(T* a, int n) { a[n] = T(); }
template __global__ void templated<double>(double*, int);
extern "C" __global__ void __launch_bounds__(64) unused_params(float* a, int n, long long m) {}
)";

// What `cuobjdump -elf` prints for these kernels' EIATTR_KPARAM_INFO (ordinal, offset, size).
const std::map<std::string, std::vector<KernelParam>> kExpected = {
    {"relu", {{0, 0, 8}, {1, 8, 8}, {2, 16, 8}}},
    {"no_params", {}},
    {"every_size", {{0, 0, 1}, {1, 2, 2}, {2, 4, 4}, {3, 8, 4}, {4, 16, 8}, {5, 24, 24}, {6, 48, 8}, {7, 56, 1}}},
    {"calls_helper", {{0, 0, 8}}},
    {"_Z7mangledPfij", {{0, 0, 8}, {1, 8, 4}, {2, 12, 4}}},
    {"_Z9templatedIdEvPT_i", {{0, 0, 8}, {1, 8, 4}}},
    {"unused_params", {{0, 0, 8}, {1, 8, 4}, {2, 16, 8}}},
};

std::string cubin_of(const std::string& source, const std::string& arch = "sm_90") {
  CompileOptions options;
  options.arch = arch;
  const CompileResult r = compile(testing::candidate_of(source), options);
  EXPECT_TRUE(r.ok()) << arch << ": " << r.error() << "\n" << r.log;
  return r.module().cubin;
}

const std::string& kernels_cubin() {
  static const std::string cubin = cubin_of(kKernels);
  return cubin;
}

KernelArg arg(ArgKind kind) { return KernelArg{kind, 0}; }

Launch launch(const std::string& kernel, std::vector<KernelArg> args) {
  Launch l;
  l.kernel = kernel;
  l.args = std::move(args);
  return l;
}

Candidate plan(std::vector<Launch> launches) {
  Candidate c = testing::candidate_of(kKernels);
  c.launches = std::move(launches);
  return c;
}

std::string mismatch(const Candidate& c) {
  return launch_argument_mismatch(c, kernel_params(kernels_cubin())).value_or("match");
}

TEST(KernelParams, ReadsEveryKernelsParametersOnEveryArchitecture) {
  for (const char* arch : {"sm_75", "sm_80", "sm_86", "sm_90", "sm_90a", "sm_100a", "sm_120"}) {
    SCOPED_TRACE(arch);
    const std::string cubin = cubin_of(kKernels, arch);
    ASSERT_FALSE(cubin.empty());
    // Only kernels: the non-inlined __device__ helper is no entry point.
    EXPECT_EQ(kernel_params(cubin), kExpected);
  }
}

TEST(KernelParams, MatchingPlansPass) {
  EXPECT_EQ(mismatch(plan({launch("relu", {arg(ArgKind::input), arg(ArgKind::output), arg(ArgKind::i64)})})),
            "match");
  EXPECT_EQ(mismatch(plan({launch("no_params", {}),
                           launch("_Z7mangledPfij", {arg(ArgKind::scratch), arg(ArgKind::i32), arg(ArgKind::task_scalar)}),
                           launch("_Z9templatedIdEvPT_i", {arg(ArgKind::output), arg(ArgKind::i32)}),
                           launch("calls_helper", {arg(ArgKind::parameter)})})),
            "match");
  // The cubin holds sizes, not types: an f32 where an int is expected has the right size.
  EXPECT_EQ(mismatch(plan({launch("unused_params", {arg(ArgKind::input), arg(ArgKind::f32), arg(ArgKind::i64)})})),
            "match");
}

TEST(KernelParams, WrongCountOrSizeIsNamed) {
  const Launch good = launch("relu", {arg(ArgKind::input), arg(ArgKind::output), arg(ArgKind::i64)});
  EXPECT_EQ(mismatch(plan({launch("relu", {arg(ArgKind::input), arg(ArgKind::output)})})),
            "launch 0 passes 2 arguments to kernel 'relu', which takes 3 parameters");
  EXPECT_EQ(mismatch(plan({good, launch("relu", {arg(ArgKind::input), arg(ArgKind::output), arg(ArgKind::i32)})})),
            "launch 1 of kernel 'relu': argument 2 is i32 (4 bytes) but parameter 2 takes 8 bytes");
  EXPECT_EQ(mismatch(plan({launch("relu", {arg(ArgKind::input), arg(ArgKind::f32), arg(ArgKind::i64)})})),
            "launch 0 of kernel 'relu': argument 1 is f32 (4 bytes) but parameter 1 takes 8 bytes");
  EXPECT_EQ(mismatch(plan({launch("relu", {arg(ArgKind::input), arg(ArgKind::output), arg(ArgKind::task_scalar)})})),
            "launch 0 of kernel 'relu': argument 2 is task_scalar (4 bytes) but parameter 2 takes 8 bytes");
  EXPECT_EQ(mismatch(plan({launch("no_params", {arg(ArgKind::i32)})})),
            "launch 0 passes 1 argument to kernel 'no_params', which takes 0 parameters");
  EXPECT_EQ(mismatch(plan({launch("calls_helper", {})})),
            "launch 0 passes 0 arguments to kernel 'calls_helper', which takes 1 parameter");
  EXPECT_EQ(mismatch(plan({launch("_Z7mangledPfij", {arg(ArgKind::output), arg(ArgKind::i64), arg(ArgKind::i32)})})),
            "launch 0 of kernel '_Z7mangledPfij': argument 1 is i64 (8 bytes) but parameter 1 takes 4 bytes");
  // No argument kind is 1, 2 or 24 bytes: char, short, bool and struct parameters cannot be passed.
  std::vector<KernelArg> eight(8, arg(ArgKind::i32));
  EXPECT_EQ(mismatch(plan({launch("every_size", eight)})),
            "launch 0 of kernel 'every_size': argument 0 is i32 (4 bytes) but parameter 0 takes 1 bytes");
}

TEST(KernelParams, KernelsTheCubinLacksAreLeftToTheLoadStage) {
  // The load stage reports a missing kernel as load_error; this check has nothing to compare.
  EXPECT_EQ(mismatch(plan({launch("helper", {arg(ArgKind::input)})})), "match");
  EXPECT_EQ(mismatch(plan({launch("no_such_kernel", {})})), "match");
  // A compute_XX compile has PTX only: nothing to check.
  EXPECT_EQ(launch_argument_mismatch(plan({launch("relu", {})}), KernelParams{}), std::nullopt);
}

/// kernel_params of `bytes`: the map's size, or the InputError's message; any other exception
/// fails the test.
std::string outcome_of(std::string_view bytes) {
  try {
    return fmt::format("{} kernels", kernel_params(bytes).size());
  } catch (const InputError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an InputError: " << e.what();
    return e.what();
  }
}

TEST(KernelParams, MalformedCubinsAreInputErrors) {
  EXPECT_EQ(outcome_of(""), "malformed cubin: not an ELF image (0 bytes)");
  EXPECT_EQ(outcome_of(std::string("\x7f" "ELF", 4) + std::string(100, '\0')),
            "malformed cubin: not a 64-bit little-endian ELF");
  // This test program: an ELF, but not CUDA's.
  std::ifstream self("/proc/self/exe", std::ios::binary);
  const std::string host((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  EXPECT_NE(outcome_of(host).find("is not CUDA (190)"), std::string::npos) << outcome_of(host);

  const std::string& cubin = kernels_cubin();
  ASSERT_EQ(outcome_of(cubin), "7 kernels");
  // Every truncation that cuts into the section table (the program headers may follow it).
  uint64_t table = 0;
  for (int i = 0; i < 8; ++i) table |= uint64_t{static_cast<uint8_t>(cubin[40 + i])} << (8 * i);
  const uint64_t table_end = table + 64 * (static_cast<uint8_t>(cubin[60]) | static_cast<uint8_t>(cubin[61]) << 8);
  ASSERT_LE(table_end, cubin.size());
  for (size_t size = 0; size < table_end; size += 7) {
    const std::string message = outcome_of(std::string_view(cubin).substr(0, size));
    EXPECT_EQ(message.rfind("malformed cubin: ", 0), 0u) << size << ": " << message;
  }
  for (size_t size = table_end; size < cubin.size(); ++size) outcome_of(std::string_view(cubin).substr(0, size));
  // Any one byte changed: a result or an InputError, never a crash or another exception.
  int errors = 0;
  for (size_t i = 0; i < cubin.size(); ++i) {
    std::string changed = cubin;
    changed[i] = static_cast<char>(changed[i] ^ 0xff);
    errors += outcome_of(changed).rfind("malformed cubin: ", 0) == 0;
  }
  EXPECT_GT(errors, 0);
  // A parameter attribute of an unknown format; two parameters with one ordinal.
  const std::string param_info("\x04\x17\x0c\x00", 4);  // EIFMT_SVAL, EIATTR_KPARAM_INFO, 12 bytes
  const size_t at = cubin.find(param_info);
  ASSERT_NE(at, std::string::npos);
  std::string bad_format = cubin;
  bad_format[at] = '\x09';
  EXPECT_NE(outcome_of(bad_format).find("has unknown format 9"), std::string::npos) << outcome_of(bad_format);
  std::string duplicate = cubin;
  const size_t next = cubin.find(param_info, at + 1);
  ASSERT_NE(next, std::string::npos);
  duplicate[next + 8] = cubin[at + 8];  // the second parameter's ordinal := the first's
  duplicate[next + 9] = cubin[at + 9];
  EXPECT_NE(outcome_of(duplicate).find("ordinal"), std::string::npos) << outcome_of(duplicate);
  EXPECT_THROW(kernel_params(bad_format), InputError);
}

/// Compiles every candidate for sm_90a (two at a time) and expects each plan to match.
void expect_plans_match(const std::vector<std::pair<std::string, Candidate>>& candidates) {
  CompilePool pool(2);
  std::vector<std::future<CompileResult>> compiles;
  for (const auto& [name, c] : candidates) compiles.push_back(pool.submit(c));
  for (size_t i = 0; i < candidates.size(); ++i) {
    const auto& [name, c] = candidates[i];
    const CompileResult r = compiles[i].get();
    if (!r.ok()) {
      ADD_FAILURE() << name << ": " << r.error();
      continue;
    }
    EXPECT_EQ(r.module().kernels, kernel_params(r.module().cubin)) << name;  // compile() read them
    EXPECT_EQ(launch_argument_mismatch(c, r.module().kernels), std::nullopt) << name;
    const KernelParams& kernels = r.module().kernels;
    for (const Launch& l : c.launches)
      EXPECT_TRUE(kernels.count(l.kernel) || name == "missing_kernel") << name << ": no kernel " << l.kernel;
  }
}

// Every catalogue kernel that compiles (known-good and adversarial, the scaffold's included): the
// plans were written by hand, and a mismatch would be a bug of the catalogue.
TEST(KernelParams, CataloguePlansMatchTheirKernels) {
  std::vector<CatalogKernel> catalogue = known_good_kernels();
  catalogue.insert(catalogue.end(), adversarial_kernels().begin(), adversarial_kernels().end());
  std::vector<std::pair<std::string, Candidate>> candidates;
  for (const CatalogKernel& k : catalogue) {
    if (k.expected == Outcome::compile_error) continue;
    try {
      candidates.emplace_back(k.name, parse_candidate_file(kernel_source(k), task_spec(k.task_id, Scale::kernelbench), k.file));
    } catch (const InputError& e) {
      ADD_FAILURE() << k.name << ": " << e.what();
    }
  }
  EXPECT_GE(candidates.size(), 30u);
  expect_plans_match(candidates);
}

// The generators' plans are made in code, next to their sources: each expert configuration.
TEST(KernelParams, GeneratorExpertPlansMatchTheirKernels) {
  std::vector<std::pair<std::string, Candidate>> candidates;
  for (const int id : covered_tasks()) {
    const TaskSpec task = task_spec(id, Scale::small);
    const Generator& g = generator_for(id);
    const Config expert = g.expert(task);
    candidates.emplace_back(fmt::format("task {} {}", id, expert.str()), g.generate(task, expert));
  }
  EXPECT_GE(candidates.size(), 50u);
  expect_plans_match(candidates);
}

}  // namespace
}  // namespace kbrl
