// Generated kernels through the evaluator on a GPU (label gpu; skipped where there is none): for every
// task a generator covers (every family), the expert configuration and two more safe ones pass at kernelbench scale,
// and an unsafe one (fp16 compute) fails the strict tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include <harness/evaluator.h>
#include <harness/gpu/gpu_session.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

/// No unsafe value of the knobs families use for them (a family may lack some of these knobs).
bool safe(const Config& c) {
  auto is = [&](const char* knob, const char* value) { return !c.has(knob) || c.at(knob) == value; };
  return is("precision", "fp32") && is("fast_math", "off") && is("tail", "safe");
}

class GeneratorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!gpu_available(&reason)) GTEST_SKIP() << "no GPU: " << reason;
  }
  static Evaluator& evaluator() {
    static Evaluator instance([] {
      EvalSettings s;
      s.worker_program = KBRL_CLI;
      s.cache_dir = std::filesystem::temp_directory_path() / "kbrl-test-generator-gpu-cache";
      s.secret = 7;
      return s;
    }());
    return instance;
  }
};

TEST_F(GeneratorGpu, SafeConfigurationsPassAtKernelBenchScale) {
  for (int id : covered_tasks()) {
    const TaskSpec task = task_spec(id, Scale::kernelbench);
    const Generator& g = generator_for(id);
    std::vector<Config> safe_configs;
    for (const auto& c : g.space(task).enumerate())
      if (safe(c)) safe_configs.push_back(c);
    ASSERT_GE(safe_configs.size(), 3u);
    const std::vector<Config> picks = {g.expert(task), safe_configs[safe_configs.size() / 3],
                                       safe_configs[2 * safe_configs.size() / 3 + 1]};
    for (const auto& config : picks) {
      SCOPED_TRACE("task " + std::to_string(id) + " " + config.str());
      const EvalRecord r = evaluator().evaluate(g.generate(task, config), config.str(), "generator");
      const TrialCheck* accuracy = nullptr;
      for (const auto& t : r.trials)
        if (t.f64_error) accuracy = &t;
      std::printf("task %3d  %-70s %-14s speedup %6.3f  f64 %9.3g ref %9.3g  %s\n", id, config.str().c_str(),
                  std::string(to_string(r.outcome)).c_str(), r.speedup, accuracy ? *accuracy->f64_error : NAN,
                  accuracy && accuracy->f64_reference_error ? *accuracy->f64_reference_error : NAN,
                  std::string(to_string(task.family)).c_str());
      EXPECT_EQ(r.outcome, Outcome::ok) << r.outcome_detail;
    }
  }
}

TEST_F(GeneratorGpu, HalfPrecisionComputeFailsTheStrictTolerance) {
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  const Generator& g = generator_for(19);
  Config config = g.expert(task);
  config.set("precision", "fp16_compute");
  const EvalRecord r = evaluator().evaluate(g.generate(task, config));
  EXPECT_EQ(r.outcome, Outcome::wrong_answer) << r.outcome_detail;
  EXPECT_FALSE(r.compile.precision_findings.empty());
}

}  // namespace
}  // namespace kbrl
