// The kernel catalog (kernels/kernel_catalog.h): every known-good and adversarial kernel parses
// against its task and compiles with NVRTC for sm_90a, or fails to compile for the reason its
// entry expects. No GPU needed: what happens at run time is the gpu tests' business.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <harness/compile/compile.h>
#include <harness/evaluator.h>  // EvalSettings: how many check trials the evaluator runs
#include <kbrl/error.h>
#include <kernels/candidate_file.h>
#include <kernels/kernel_catalog.h>
#include <reference/reference_model.h>  // input_domains
#include <reference/task_registry.h>

namespace kbrl {
namespace {

std::vector<CatalogKernel> all_kernels() {
  std::vector<CatalogKernel> all = known_good_kernels();
  all.insert(all.end(), adversarial_kernels().begin(), adversarial_kernels().end());
  return all;
}

/// Parses a catalog kernel against its task at a scale; a parse failure fails the test.
Candidate parse(const CatalogKernel& k, Scale scale) {
  return parse_candidate_file(kernel_source(k), task_spec(k.task_id, scale), k.file);
}

/// parse(), with a parse failure reported as a test failure (so a loop over the catalog goes on).
std::optional<Candidate> parse_or_fail(const CatalogKernel& k, Scale scale) {
  try {
    return parse(k, scale);
  } catch (const InputError& e) {
    ADD_FAILURE() << k.name << " does not parse at " << to_string(scale) << ": " << e.what();
    return std::nullopt;
  }
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(KernelCatalog, ListsAreCompleteAndConsistent) {
  EXPECT_GE(known_good_kernels().size(), 12u);
  EXPECT_GE(adversarial_kernels().size(), 51u);
  std::set<std::string> names;
  for (const auto& k : all_kernels()) {
    SCOPED_TRACE(k.name);
    EXPECT_TRUE(names.insert(k.name).second) << "duplicate name";
    EXPECT_TRUE(has_task(k.task_id));
    EXPECT_FALSE(k.what.empty());
    EXPECT_TRUE(std::filesystem::is_regular_file(kernels_dir() / k.file));
    ASSERT_NE(find_catalog_kernel(k.name), nullptr);
    EXPECT_EQ(find_catalog_kernel(k.name)->file, k.file);
  }
  for (const auto& k : known_good_kernels()) EXPECT_EQ(k.expected, Outcome::ok) << k.name;
  for (const auto& k : adversarial_kernels()) EXPECT_NE(k.expected, Outcome::ok) << k.name;
  EXPECT_EQ(find_catalog_kernel("no_such_kernel"), nullptr);
}

TEST(KernelCatalog, KnownGoodCoverEveryFamilyAsked) {
  std::set<Family> families;
  for (const auto& k : known_good_kernels())
    families.insert(task_spec(k.task_id, Scale::small).family);
  for (Family f : {Family::elementwise, Family::softmax, Family::norm, Family::reduction,
                   Family::arg_reduction, Family::pooling, Family::scan, Family::loss, Family::gemm,
                   Family::conv})
    EXPECT_TRUE(families.count(f)) << to_string(f);
}

TEST(KernelCatalog, AdversarialCoverEveryFailureOutcome) {
  std::set<Outcome> outcomes;
  for (const auto& k : adversarial_kernels()) outcomes.insert(k.expected);
  // Not `impossible`: since every timed run draws inputs of its own, no kernel here gets under the
  // speed-of-light floor (the memo that did is caught as a wrong answer now); the floor stays as a
  // check behind the others and its rule is tested with the reward (test_reward.cpp).
  for (Outcome o : {Outcome::compile_error, Outcome::load_error, Outcome::launch_error,
                    Outcome::runtime_error, Outcome::timeout, Outcome::wrong_answer,
                    Outcome::nondeterministic, Outcome::input_mutated, Outcome::guard_violation})
    EXPECT_TRUE(outcomes.count(o)) << to_string(o);
}

// Each file says in its first line what it is, and that line agrees with the catalog.
TEST(KernelCatalog, FilesStartWithTheirPurpose) {
  for (const auto& k : known_good_kernels()) {
    const std::string line = first_line(kernel_source(k));
    EXPECT_EQ(line.rfind(fmt::format("// Known-good: task {} ", k.task_id), 0), 0u) << k.name << ": " << line;
  }
  for (const auto& k : adversarial_kernels()) {
    const std::string line = first_line(kernel_source(k));
    const std::string head =
        fmt::format("// Adversarial (task {}, expected {}", k.task_id, to_string(k.expected));
    EXPECT_EQ(line.rfind(head, 0), 0u) << k.name << ": " << line;
  }
}

TEST(KernelCatalog, KnownGoodParseAtBothScales) {
  for (const auto& k : known_good_kernels()) {
    for (Scale scale : {Scale::kernelbench, Scale::small}) {
      SCOPED_TRACE(fmt::format("{} at {}", k.name, to_string(scale)));
      try {
        const Candidate c = parse(k, scale);
        EXPECT_EQ(c.task_id, k.task_id);
        EXPECT_FALSE(c.launches.empty());
        EXPECT_TRUE(c.options.empty());  // known-good kernels need no compile options
      } catch (const InputError& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
}

TEST(KernelCatalog, AdversarialParseAtBothScales) {
  for (const auto& k : adversarial_kernels()) {
    for (Scale scale : {Scale::kernelbench, Scale::small}) {
      SCOPED_TRACE(fmt::format("{} at {}", k.name, to_string(scale)));
      try {
        EXPECT_FALSE(parse(k, scale).launches.empty());
      } catch (const InputError& e) {
        ADD_FAILURE() << e.what();
      }
    }
  }
}

// Known-good kernels compile and are full fp32: no TF32, fp16 or approximate math in their PTX.
TEST(KernelCatalog, KnownGoodCompileAtFullPrecision) {
  for (const auto& k : known_good_kernels()) {
    SCOPED_TRACE(k.name);
    const CompileResult r = compile(parse(k, Scale::kernelbench));
    EXPECT_TRUE(r.ok()) << r.error() << "\n" << r.log;
    EXPECT_FALSE(r.module().audit.reduced_precision()) << r.module().audit.summary();
  }
}

TEST(KernelCatalog, AdversarialCompileUnlessMeantNotTo) {
  for (const auto& k : adversarial_kernels()) {
    if (k.expected == Outcome::compile_error) continue;  // next test
    SCOPED_TRACE(k.name);
    const auto candidate = parse_or_fail(k, Scale::kernelbench);
    if (!candidate) continue;
    const CompileResult r = compile(*candidate);
    EXPECT_TRUE(r.ok()) << r.error() << "\n" << r.log;
    // The fp16 round trip is also visible to the precision audit (the check still decides).
    if (k.name == "half_precision") {
      EXPECT_TRUE(r.module().audit.has(PrecisionCategory::fp16));
    }
  }
}

// Spot checks that plans resolve to the sizes their kernels assume at kernelbench scale.
TEST(KernelCatalog, PlansResolveToTheTaskShapes) {
  auto plan = [](const std::string& name) {
    const CatalogKernel* k = find_catalog_kernel(name);
    EXPECT_NE(k, nullptr) << name;
    return parse(*k, Scale::kernelbench);
  };
  const Candidate gemm = plan("gemm");
  ASSERT_EQ(gemm.launches.size(), 1u);
  EXPECT_EQ(gemm.launches[0].grid, (Dim3{32, 32, 1}));
  EXPECT_EQ(gemm.launches[0].args[3].ivalue, 4096);

  const Candidate rms = plan("rms_norm");
  ASSERT_EQ(rms.launches[0].args.size(), 6u);
  EXPECT_EQ(rms.launches[0].args[2].ivalue, 64);                 // channels
  EXPECT_EQ(rms.launches[0].args[3].ivalue, 512 * 512);          // plane
  EXPECT_EQ(rms.launches[0].args[4].ivalue, int64_t{112} * 512 * 512);  // positions
  EXPECT_EQ(rms.launches[0].args[5].kind, ArgKind::f32);
  EXPECT_FLOAT_EQ(static_cast<float>(rms.launches[0].args[5].value), 1e-5f);

  const Candidate conv = plan("conv2d_3x3");
  EXPECT_EQ(conv.launches[0].grid, (Dim3{8, 128, 16 * 8}));
  EXPECT_EQ(conv.launches[0].args[1].kind, ArgKind::parameter);

  const Candidate mse = plan("mse_loss");
  ASSERT_EQ(mse.launches.size(), 2u);
  ASSERT_EQ(mse.scratch.size(), 1u);
  EXPECT_EQ(mse.scratch[0].bytes, 8 * 1024);
  EXPECT_EQ(mse.launches[0].grid.x, 1024u);
  EXPECT_EQ(mse.launches[1].args[3].ivalue, int64_t{1} << 30);

  const Candidate relu = plan("relu");
  EXPECT_EQ(relu.launches[0].args[2].ivalue, int64_t{4096} * 393216);  // beyond int32
}

// A kernel that is right only on KernelBench's inputs (uniform [0,1)) is caught by the stress
// trial alone: its task's stress set must reach negative values, where these kernels go wrong.
TEST(KernelCatalog, StressTrialKernelsHaveSignedStressInputs) {
  int stress_kernels = 0;
  for (const auto& k : adversarial_kernels()) {
    if (!contains(first_line(kernel_source(k)), "by the stress trial")) continue;
    SCOPED_TRACE(k.name);
    ++stress_kernels;
    EXPECT_EQ(k.expected, Outcome::wrong_answer);
    for (Scale scale : {Scale::kernelbench, Scale::small}) {
      const TaskSpec spec = task_spec(k.task_id, scale);
      const auto domains = input_domains(spec, InputSet::stress);
      ASSERT_EQ(domains.size(), spec.inputs.size());
      bool signed_input = false;
      for (const auto& d : domains)
        signed_input = signed_input || (d.kind == InputDomain::Kind::interval && d.lo < 0 && d.hi > 0);
      EXPECT_TRUE(signed_input) << "no stress input of task " << k.task_id << " takes both signs";
    }
  }
  EXPECT_GE(stress_kernels, 10);
}

// launch_counter_half_output starts cheating right after the check runs (2 per trial, the stress
// trial included, and one on changed inputs), so its first cheating run is a warm-up or a timed run,
// never a checked one.
TEST(KernelCatalog, LaunchCounterCheatsRightAfterTheChecks) {
  const CatalogKernel* k = find_catalog_kernel("launch_counter_half_output");
  ASSERT_NE(k, nullptr);
  const EvalSettings settings;
  const int trials = settings.trials + (settings.inputs == InputChecks::robust ? 1 : 0);
  const std::string define = fmt::format("#define CHECK_RUNS {}\n", 2 * trials + 1);
  EXPECT_TRUE(contains(kernel_source(*k), define)) << "expected " << define;
}

// The compile_error kernels fail for their own reason (a short time limit keeps the bomb cheap).
TEST(KernelCatalog, CompileErrorKernelsFailForTheRightReason) {
  const std::map<std::string, std::string> reason = {
      {"compile_bomb", "timed out"},
      {"include_host_file", "#include \"/etc/passwd\" is not allowed"},
      {"printf_flood", "vprintf"},
      {"huge_source", "over the limit"},
      {"device_side_launch", "Unresolved extern function"},
  };
  CompileOptions options;
  options.time_limit_seconds = 10;
  for (const auto& k : adversarial_kernels()) {
    if (k.expected != Outcome::compile_error) continue;
    SCOPED_TRACE(k.name);
    ASSERT_TRUE(reason.count(k.name)) << "add the reason this kernel must fail for";
    const auto candidate = parse_or_fail(k, Scale::kernelbench);
    if (!candidate) continue;
    const CompileResult r = compile(*candidate, options);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.outcome(), Outcome::compile_error);
    EXPECT_TRUE(contains(r.error(), reason.at(k.name))) << "error: " << r.error();
    if (std::getenv("KBRL_TEST_VERBOSE")) std::cout << k.name << ": " << r.error() << "\n";
  }
}

// NVRTC would quote /etc/passwd in its log: the include must be refused before NVRTC reads it.
TEST(KernelCatalog, HostFileNeverReachesTheLog) {
  const CatalogKernel* k = find_catalog_kernel("include_host_file");
  ASSERT_NE(k, nullptr);
  const CompileResult r = compile(parse(*k, Scale::kernelbench));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.options.empty()) << "NVRTC ran";
  std::ifstream passwd("/etc/passwd");
  std::string line;
  if (std::getline(passwd, line) && !line.empty()) {
    EXPECT_FALSE(contains(r.log, line));
    EXPECT_FALSE(contains(r.error(), line));
  }
}

TEST(KernelCatalog, HugeSourceIsGeneratedNotStored) {
  const CatalogKernel* k = find_catalog_kernel("huge_source");
  ASSERT_NE(k, nullptr);
  EXPECT_LT(std::filesystem::file_size(kernels_dir() / k->file), 64u << 10);
  EXPECT_GE(kernel_source(*k).size(), 10u << 20);
}

// An absurd grid (grid.y = 2^20) never reaches the driver: the plan parser enforces the limits.
TEST(KernelCatalog, AbsurdGridIsRefusedByTheParser) {
  const CatalogKernel* k = find_catalog_kernel("relu");
  ASSERT_NE(k, nullptr);
  std::string text = kernel_source(*k);
  const std::string grid = "grid=min(cdiv(numel(x),1024),16384)";
  ASSERT_NE(text.find(grid), std::string::npos);
  text.replace(text.find(grid), grid.size(), "grid=256,1048576");
  EXPECT_THROW(parse_candidate_file(text, task_spec(19, Scale::kernelbench)), InputError);
}

TEST(KernelCatalog, KernelsDirFollowsTheEnvironment) {
  const char* before = std::getenv("KBRL_KERNELS_DIR");
  const std::string saved = before ? before : "";
  ::setenv("KBRL_KERNELS_DIR", "/nonexistent/kbrl-kernels", 1);
  EXPECT_EQ(kernels_dir(), std::filesystem::path("/nonexistent/kbrl-kernels"));
  EXPECT_THROW(kernel_source(known_good_kernels().front()), InputError);
  if (before) {
    ::setenv("KBRL_KERNELS_DIR", saved.c_str(), 1);
  } else {
    ::unsetenv("KBRL_KERNELS_DIR");
  }
  EXPECT_TRUE(std::filesystem::is_directory(kernels_dir() / "known_good"));
}

}  // namespace
}  // namespace kbrl
