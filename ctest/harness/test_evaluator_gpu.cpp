// The evaluator end to end on a GPU (label gpu; skipped where there is none): every known-good
// kernel passes at kernelbench scale, every adversarial kernel gets its outcome, and after each of
// them a known-good kernel still evaluates correctly. Results are also printed as a table.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <harness/evaluator.h>
#include <harness/gpu/gpu_session.h>
#include <harness/record/rollout_log.h>
#include <kernels/action.h>
#include <kernels/candidate_file.h>
#include <kernels/kernel_catalog.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

EvalSettings gpu_settings() {
  EvalSettings s;
  s.scale = Scale::kernelbench;
  s.mode = TimingMode::fast;
  s.job_timeout_seconds = 20;  // the infinite loop costs this much
  s.worker_program = KBRL_CLI;
  s.cache_dir = std::filesystem::temp_directory_path() / "kbrl-test-evaluator-gpu-cache";
  s.secret = 20261122;
  return s;
}

Candidate load(const CatalogKernel& k, Scale scale = Scale::kernelbench) {
  return parse_candidate_file(kernel_source(k), task_spec(k.task_id, scale), k.file);
}

class EvaluatorGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (!gpu_available(&reason)) GTEST_SKIP() << "no GPU: " << reason;
  }
  static Evaluator& evaluator() {
    static Evaluator instance(gpu_settings());
    return instance;
  }
};

/// The trial that measured the accuracy against float64, or nullptr.
const TrialCheck* accuracy_trial(const EvalRecord& r) {
  for (const auto& t : r.trials)
    if (t.f64_error) return &t;
  return nullptr;
}

void print_row(const CatalogKernel& k, const EvalRecord& r) {
  const TrialCheck* a = accuracy_trial(r);
  std::printf("%-28s task %3d  %-16s expected %-16s speedup %7.3f  f64 %9.3g ref %9.3g  %s\n", k.name.c_str(),
              k.task_id, std::string(to_string(r.outcome)).c_str(), std::string(to_string(k.expected)).c_str(),
              r.speedup, a ? *a->f64_error : NAN, a && a->f64_reference_error ? *a->f64_reference_error : NAN,
              r.outcome_detail.substr(0, 150).c_str());
  std::fflush(stdout);
}

TEST_F(EvaluatorGpu, ModelTextBecomesACheckedCandidate) {
  // What a language model answers in the scaffolded action space, prose and fence included.
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  const auto evaluate_text = [&](const std::string& body) {
    const std::string text = "Each thread handles a strided range.\n```cuda\n" + body + "\n```\n";
    const Realized real = realize(task, {ActionKind::text, {}, text});
    EXPECT_TRUE(real.candidate) << real.format_error;
    const ActionInfo info{ActionKind::text, real.code, 20, "test"};
    return evaluator().evaluate(*real.candidate, text, "text", info);
  };
  const EvalRecord good = evaluate_text("KBRL_GRID_STRIDE_LOOP(i, y_numel) { y[i] = x[i] > 0.f ? x[i] : 0.f; }");
  EXPECT_EQ(good.outcome, Outcome::ok) << good.outcome_detail;
  EXPECT_GT(good.speedup, 0.0);
  EXPECT_EQ(good.action.kind, ActionKind::text);
  // (An identity body would pass: KernelBench's inputs are uniform in [0, 1), where relu(x) = x.)
  const EvalRecord wrong = evaluate_text("KBRL_GRID_STRIDE_LOOP(i, y_numel) { y[i] = 2.f * x[i]; }");
  EXPECT_EQ(wrong.outcome, Outcome::wrong_answer) << wrong.outcome_detail;
}

TEST_F(EvaluatorGpu, KnownGoodKernelsPassAtKernelBenchScale) {
  for (const auto& k : known_good_kernels()) {
    SCOPED_TRACE(k.name);
    const EvalRecord r = evaluator().evaluate(load(k), "", "known_good");
    print_row(k, r);
    EXPECT_EQ(r.outcome, Outcome::ok) << r.outcome_detail;
    // Six trials (the stress set, KernelBench's draw and its mixes), the second run of one of them on
    // changed inputs.
    int stress = 0, kernelbench = 0, changed = 0;
    for (const auto& t : r.trials) {
      stress += t.seed_id.rfind("stress-", 0) == 0;
      kernelbench += t.seed_id.rfind("trial-", 0) == 0;
      changed += t.seed_id.find("-changed") != std::string::npos;
    }
    EXPECT_EQ(r.trials.size(), 6u);
    EXPECT_EQ(stress, 1);
    EXPECT_GE(kernelbench, 1);
    EXPECT_EQ(changed, 1);
    bool float_output = false;
    for (const auto& out : task_spec(k.task_id, Scale::kernelbench).outputs) float_output |= out.dtype == DType::f32;
    if (float_output) {
      ASSERT_NE(accuracy_trial(r), nullptr) << "no trial measured the accuracy against float64";
    }
    EXPECT_EQ(r.inputs, "robust");
    for (const char* stage : {"load", "check", "time", "check.inputs", "check.candidate", "check.reference",
                              "check.compare", "time.inputs", "time.candidate", "time.reference", "time.compare"})
      EXPECT_GT(r.gpu_stage_ms.count(stage), 0u) << stage;
    // The parts are device time within the step's wall time.
    double check_parts = 0;
    for (const auto& [name, ms] : r.gpu_stage_ms)
      if (name.rfind("check.", 0) == 0) check_parts += ms;
    EXPECT_LE(check_parts, r.gpu_stage_ms.at("check") * 1.01 + 1.0);
    ASSERT_TRUE(r.speedup_ci.has_value());
    EXPECT_LE(r.speedup_ci->low, r.speedup_ci->high);
    ASSERT_TRUE(r.runtime.has_value());
    ASSERT_TRUE(r.reference.has_value());
    EXPECT_GT(r.speedup, 0.0);
    EXPECT_TRUE(r.compile.precision_findings.empty());
  }
}

TEST_F(EvaluatorGpu, AdversarialKernelsGetTheirOutcomeAndLeaveTheHarnessIntact) {
  const CatalogKernel* relu = find_catalog_kernel("relu");
  ASSERT_NE(relu, nullptr);
  const Candidate good = load(*relu);
  for (const auto& k : adversarial_kernels()) {
    SCOPED_TRACE(k.name);
    const EvalRecord r = evaluator().evaluate(load(k), "", "adversarial");
    print_row(k, r);
    EXPECT_EQ(r.outcome, k.expected) << r.outcome_detail;
    EXPECT_EQ(r.reward, 0.0);
    const EvalRecord after = evaluator().evaluate(good, "", "known_good");
    EXPECT_EQ(after.outcome, Outcome::ok) << "after " << k.name << ": " << after.outcome_detail;
  }
  EXPECT_GT(evaluator().worker_starts(), 1) << "faulting kernels must have cost the worker its life";
}

TEST_F(EvaluatorGpu, LegacyToleranceAcceptsHalfPrecisionReluStrictDoesNot) {
  EvalSettings legacy = gpu_settings();
  legacy.atol = legacy.rtol = 1e-2;
  Evaluator lenient(legacy);
  const CatalogKernel* half = find_catalog_kernel("half_precision");
  ASSERT_NE(half, nullptr);
  const EvalRecord r = lenient.evaluate(load(*half));
  EXPECT_EQ(r.outcome, Outcome::ok) << r.outcome_detail;
  EXPECT_FALSE(r.compile.precision_findings.empty()) << "the audit must see the fp16 conversions";
}

TEST_F(EvaluatorGpu, LogResumesAndReplayAgrees) {
  const auto path = std::filesystem::temp_directory_path() / "kbrl-test-evaluator-gpu.jsonl";
  std::filesystem::remove(path);
  std::vector<Candidate> candidates = {load(*find_catalog_kernel("relu")),
                                       load(*find_catalog_kernel("nan_output")),
                                       load(*find_catalog_kernel("sum_dim1"))};
  {
    RolloutLog log(path);
    evaluator().attach_log(&log);
    const auto records = evaluator().evaluate_all(candidates);
    evaluator().attach_log(nullptr);
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(log.size(), 3u);
    // Resume: everything is logged, so every record comes back from the log and nothing is
    // evaluated or logged again.
    evaluator().attach_log(&log);
    const auto again = evaluator().evaluate_all(candidates);
    evaluator().attach_log(nullptr);
    ASSERT_EQ(again.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(again[i].key, records[i].key);
      EXPECT_EQ(again[i].outcome, records[i].outcome);
      EXPECT_EQ(again[i].timestamp, records[i].timestamp);  // the logged record, not a new evaluation
    }
    EXPECT_EQ(log.size(), 3u);
  }
  const auto logged = read_rollout_log(path);
  ASSERT_EQ(logged.size(), 3u);
  for (const auto& record : logged) {
    const EvalRecord again = evaluator().evaluate(record.candidate);
    EXPECT_EQ(again.outcome, record.outcome) << record.task_name;
    EXPECT_EQ(again.key, record.key);
  }
}

// A GPU too full for the harness's own tensors (another process holds the memory: seen with six
// sampling processes side by side at KernelBench's sizes) is the harness's failure, counted and
// evaluated again by a rerun, never the candidate's runtime_error. The worker is capped at 2% of
// the GPU's memory, where ReLU's 6 GiB input does not fit.
TEST_F(EvaluatorGpu, AGpuTooFullForTheHarnessIsAHarnessErrorNotTheCandidates) {
  const CatalogKernel* relu = find_catalog_kernel("relu");
  ASSERT_NE(relu, nullptr);
  ::setenv("KBRL_WORKER_MEMORY_FRACTION", "0.02", 1);  // the worker inherits it when it starts
  EvalSettings settings = gpu_settings();
  settings.cache_dir = std::filesystem::temp_directory_path() / "kbrl-test-evaluator-gpu-full";
  Evaluator full(settings);
  const int64_t before = harness_errors_recorded();
  const EvalRecord r = full.evaluate(load(*relu), "", "known_good");
  ::unsetenv("KBRL_WORKER_MEMORY_FRACTION");
  print_row(*relu, r);
  EXPECT_EQ(r.outcome, Outcome::harness_error) << r.outcome_detail;
  EXPECT_NE(r.outcome_detail.find("out of memory"), std::string::npos) << r.outcome_detail;
  EXPECT_EQ(harness_errors_recorded(), before + 1);
}

}  // namespace
}  // namespace kbrl
