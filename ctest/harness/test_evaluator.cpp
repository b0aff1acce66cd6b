// The evaluator on a machine without a GPU: compile errors are recorded without one, anything that
// needs the GPU fails with a clear error, and bad settings are input errors.
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include <kbrl/error.h>

#include <harness/evaluate_actions.h>
#include <harness/evaluator.h>
#include <harness/record/rollout_log.h>
#include <kernels/candidate_file.h>
#include <kernels/kernel_catalog.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

EvalSettings cpu_settings() {
  EvalSettings s;
  s.scale = Scale::small;
  s.arch = "sm_90a";  // explicit: there is no device to ask
  s.worker_program = KBRL_CLI;
  return s;
}

Candidate broken_candidate() {
  Candidate c;
  c.task_id = 19;
  c.source = "extern \"C\" __global__ void relu(const float* x, float* y) { this is not C++ }";
  c.launches = {{"relu", {1, 1, 1}, {32, 1, 1}, 0, {{ArgKind::input, 0}, {ArgKind::output, 0}}}};
  return c;
}

TEST(Evaluator, CompileErrorIsRecordedWithoutAGpu) {
  Evaluator evaluator(cpu_settings());
  const auto path = std::filesystem::temp_directory_path() / "kbrl-test-evaluator-cpu.jsonl";
  std::filesystem::remove(path);
  RolloutLog log(path);
  evaluator.attach_log(&log);
  const EvalRecord r = evaluator.evaluate(broken_candidate(), "raw text", "unit-test");
  EXPECT_EQ(r.outcome, Outcome::compile_error);
  EXPECT_FALSE(r.compile.ok);
  EXPECT_FALSE(r.compile.log.empty());
  EXPECT_EQ(r.reward, 0.0);
  EXPECT_EQ(r.raw_action, "raw text");
  EXPECT_EQ(log.size(), 1u);
  EXPECT_TRUE(log.contains(r.key));
  EXPECT_EQ(r.key, evaluator.key(broken_candidate()));
}

TEST(Evaluator, RunningWithoutAGpuIsAClearError) {
  std::string reason;
  if (gpu_available(&reason)) GTEST_SKIP() << "this machine has a GPU: the gpu tests cover it";
  Evaluator evaluator(cpu_settings());
  Candidate c = parse_candidate_file(
      "// kbrl: launch relu grid=cdiv(numel(x),256) block=256 args=in:x,out:y,i64:numel(x)\n"
      "extern \"C\" __global__ void relu(const float* x, float* y, long long n) {\n"
      "  long long i = blockIdx.x * 256ll + threadIdx.x; if (i < n) y[i] = x[i] > 0 ? x[i] : 0; }\n",
      task_spec(19, Scale::small));
  try {
    evaluator.evaluate(c);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU"), std::string::npos) << e.what();
  }
}

Candidate relu_candidate() {
  return parse_candidate_file(
      "// kbrl: launch relu grid=cdiv(numel(x),256) block=256 args=in:x,out:y,i64:numel(x)\n"
      "extern \"C\" __global__ void relu(const float* x, float* y, long long n) {\n"
      "  long long i = blockIdx.x * 256ll + threadIdx.x; if (i < n) y[i] = x[i] > 0 ? x[i] : 0; }\n",
      task_spec(19, Scale::small));
}

Candidate scale_candidate() {
  return parse_candidate_file(
      "// kbrl: launch scale grid=cdiv(numel(A),256) block=256 args=in:A,scalar:s,out:C,i64:numel(A)\n"
      "extern \"C\" __global__ void scale(const float* a, float s, float* c, long long n) {\n"
      "  long long i = blockIdx.x * 256ll + threadIdx.x; if (i < n) c[i] = a[i] * s; }\n",
      task_spec(5, Scale::small));
}

TEST(Evaluator, AHarnessFaultOnOneCandidateIsRecordedAndTheBatchGoesOn) {
  // The fake worker plays a GPU (fake_worker.cpp): ok everywhere, its handler fails on task 5.
  EvalSettings s = cpu_settings();
  s.worker_program = KBRL_FAKE_WORKER;
  s.peaks = DevicePeaks{3e12, 5e13, 4e14};
  Evaluator evaluator(s);
  const auto path = std::filesystem::temp_directory_path() / fmt::format("kbrl-harness-fault-{}.jsonl", ::getpid());
  std::filesystem::remove(path);
  const int64_t faults_before = harness_errors_recorded();
  std::string fault_key;
  {
    RolloutLog log(path);
    evaluator.attach_log(&log);
    const std::vector<KeyedCandidate> batch = {evaluator.keyed(relu_candidate()), evaluator.keyed(scale_candidate()),
                                               evaluator.keyed(relu_candidate())};
    const std::vector<EvalRecord> records = evaluator.evaluate_all(batch, "unit-test");
    ASSERT_EQ(records.size(), 3u);
    EXPECT_EQ(records[0].outcome, Outcome::ok) << records[0].outcome_detail;
    EXPECT_NEAR(records[0].speedup, 2.0, 1e-9);
    EXPECT_EQ(records[1].outcome, Outcome::harness_error);
    EXPECT_NE(records[1].outcome_detail.find("failed on task 5"), std::string::npos) << records[1].outcome_detail;
    EXPECT_NE(records[1].outcome_detail.find("not the candidate's"), std::string::npos) << records[1].outcome_detail;
    EXPECT_EQ(records[1].reward, 0.0);
    EXPECT_EQ(records[2].outcome, Outcome::ok);
    EXPECT_EQ(harness_errors_recorded(), faults_before + 1);
    // Written for the record, but not a record a rerun takes back.
    EXPECT_EQ(log.size(), 2u);
    fault_key = records[1].key;
    EXPECT_FALSE(log.contains(fault_key));
    EXPECT_FALSE(log.find(fault_key).has_value());
    EXPECT_TRUE(log.contains(records[0].key));
    evaluator.attach_log(nullptr);
  }
  RolloutLog reopened(path);  // the same after a restart
  EXPECT_EQ(reopened.size(), 2u);
  EXPECT_FALSE(reopened.contains(fault_key));
  std::filesystem::remove(path);
}

// The way in from actions (harness/evaluate_actions.h): realized, a format error recorded as such,
// each key evaluated once per store, another observation another key.
TEST(Evaluator, EvaluateActionsEvaluatesEachKeyOnceIntoTheStore) {
  EvalSettings s = cpu_settings();
  s.compile_only = true;
  s.worker_program = "/nonexistent/kbrl";
  Evaluator evaluator(s);
  const TaskSpec& task = task_spec(19, s.scale);
  const std::string good = kernel_source(*find_catalog_kernel("relu"));
  const ActionSubmission kernel{{ActionKind::text, {}, "Here it is:\n```cuda\n" + good + "```\n"}, 10, "p1"};
  const ActionSubmission no_code{{ActionKind::text, {}, "I cannot write this kernel.\n```cuda\n```\n"}, 3, "p1"};
  std::map<std::string, EvalRecord> store;
  const auto done = evaluate_actions(evaluator, task, {kernel, no_code, kernel}, "unit-test", "seed42", store);
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(store.size(), 2u);
  EXPECT_EQ(done[0].key, done[2].key);
  EXPECT_TRUE(done[0].evaluated_now);
  EXPECT_FALSE(done[2].evaluated_now);  // the same kernel again: one evaluation
  ASSERT_FALSE(done[0].code.empty());
  EXPECT_EQ(good.rfind(done[0].code, 0), 0u);  // the fenced code (without its last newline)
  const EvalRecord& r = store.at(done[0].key);
  EXPECT_EQ(r.outcome, Outcome::not_run);
  EXPECT_TRUE(r.compile.ok);
  EXPECT_EQ(r.action.token_count, 10);
  EXPECT_EQ(r.action.prompt_version, "p1");
  EXPECT_EQ(r.raw_action, kernel.action.text);
  EXPECT_EQ(store.at(done[1].key).outcome, Outcome::format_error);
  EXPECT_TRUE(done[1].evaluated_now);
  const auto again = evaluate_actions(evaluator, task, {no_code, kernel}, "unit-test", "seed42", store);
  EXPECT_EQ(again[0].key, done[1].key);
  EXPECT_EQ(again[1].key, done[0].key);
  EXPECT_FALSE(again[0].evaluated_now || again[1].evaluated_now);  // the store had both
  EXPECT_EQ(store.size(), 2u);
  const auto other = evaluate_actions(evaluator, task, {kernel}, "unit-test", "seed43", store);
  EXPECT_NE(other[0].key, done[0].key);  // another observation: evaluated (and timed) again
  EXPECT_TRUE(other[0].evaluated_now);
  EXPECT_EQ(store.size(), 3u);
}

TEST(Evaluator, CompileOnlyRecordsNotRunWithoutStartingAWorker) {
  EvalSettings s = cpu_settings();
  s.compile_only = true;
  s.worker_program = "/nonexistent/kbrl";  // a worker start would fail loudly
  Evaluator evaluator(s);
  const ActionInfo action{ActionKind::text, "the code", 42, "kbrl-prompt-1/body"};
  const EvalRecord ok = evaluator.evaluate(relu_candidate(), "the model's text", "unit-test", action);
  EXPECT_EQ(ok.outcome, Outcome::not_run);
  EXPECT_TRUE(ok.compile.ok);
  EXPECT_NE(ok.outcome_detail.find("no GPU"), std::string::npos) << ok.outcome_detail;
  EXPECT_EQ(ok.action, action);
  EXPECT_EQ(ok.reward, 0.0);  // the speedup reward needs a correct, timed candidate
  const auto all = evaluator.evaluate_all({relu_candidate(), broken_candidate()}, "unit-test",
                                          {{"a", action}, {"b", ActionInfo{}}});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].outcome, Outcome::not_run);
  EXPECT_EQ(all[0].raw_action, "a");
  EXPECT_EQ(all[1].outcome, Outcome::compile_error);
  EXPECT_EQ(evaluator.worker_starts(), 0);
  s.arch.clear();
  EXPECT_THROW(Evaluator{s}, InputError);  // compiling without a GPU needs --arch
}

// One resume path: evaluate_all returns one record per candidate in order, a repeated candidate is
// evaluated once, and a rerun with the same log takes every record from it (nothing evaluated or
// logged again); format-error records the same.
TEST(Evaluator, EvaluateAllAnswersEveryCandidateAndARerunTakesTheLog) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("kbrl-test-resume-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  EvalSettings s = cpu_settings();
  s.compile_only = true;
  s.worker_program = "/nonexistent/kbrl";
  const std::vector<Candidate> batch = {relu_candidate(), broken_candidate(), relu_candidate()};
  std::vector<EvalRecord> first;
  {
    RolloutLog log(dir / "log.jsonl");
    Evaluator evaluator(s);
    evaluator.attach_log(&log);
    first = evaluator.evaluate_all(batch, "unit-test");
    ASSERT_EQ(first.size(), 3u);
    EXPECT_EQ(first[0].outcome, Outcome::not_run);
    EXPECT_EQ(first[1].outcome, Outcome::compile_error);
    EXPECT_EQ(first[2].key, first[0].key);
    EXPECT_EQ(first[2].outcome, Outcome::not_run);
    EXPECT_EQ(log.size(), 2u);  // the repeat was evaluated once
    evaluator.format_error(19, "no code here", {}, "no code block");
    EXPECT_EQ(log.size(), 3u);
  }
  RolloutLog log(dir / "log.jsonl");
  Evaluator evaluator(s);
  evaluator.attach_log(&log);
  // Order changed, one new candidate: the logged ones come back as logged, only the new one runs.
  Candidate other = relu_candidate();
  other.source += "\n// another candidate\n";
  const auto again = evaluator.evaluate_all({broken_candidate(), other, relu_candidate()}, "unit-test");
  ASSERT_EQ(again.size(), 3u);
  EXPECT_EQ(again[0].key, first[1].key);
  EXPECT_EQ(again[0].timestamp, first[1].timestamp);  // the logged record, not a new evaluation
  EXPECT_EQ(again[0].outcome_detail, first[1].outcome_detail);
  EXPECT_EQ(again[2].key, first[0].key);
  EXPECT_EQ(again[2].timestamp, first[0].timestamp);
  EXPECT_NE(again[1].key, first[0].key);
  EXPECT_EQ(again[1].outcome, Outcome::not_run);
  EXPECT_EQ(log.size(), 4u);
  const EvalRecord fe = evaluator.format_error(19, "no code here", {}, "no code block");
  EXPECT_EQ(fe.outcome, Outcome::format_error);
  EXPECT_EQ(log.size(), 4u);  // taken from the log
  EXPECT_EQ(read_rollout_log(dir / "log.jsonl").size(), 4u);
  std::filesystem::remove_all(dir);
}

TEST(Evaluator, PlansThatDoNotMatchTheCompiledKernelAreRefusedBeforeAnyLaunch) {
  EvalSettings s = cpu_settings();
  s.compile_only = true;
  s.worker_program = "/nonexistent/kbrl";
  Evaluator evaluator(s);
  Candidate short_args = relu_candidate();
  short_args.launches.at(0).args.pop_back();  // one argument fewer than the kernel's parameters
  const EvalRecord r = evaluator.evaluate(short_args);
  EXPECT_EQ(r.outcome, Outcome::launch_error);
  EXPECT_TRUE(r.compile.ok);
  EXPECT_NE(r.outcome_detail.find("refused before any launch"), std::string::npos) << r.outcome_detail;
  Candidate too_many = relu_candidate();
  too_many.launches.resize(plan_limits::kMaxLaunches + 1, too_many.launches.at(0));
  const EvalRecord limited = evaluator.evaluate(too_many);
  EXPECT_EQ(limited.outcome, Outcome::launch_error);
  EXPECT_NE(limited.outcome_detail.find("64"), std::string::npos) << limited.outcome_detail;
  EXPECT_EQ(evaluator.worker_starts(), 0);
}

TEST(Evaluator, FormatErrorRecordsAreKeyedByTheTextAndLogged) {
  Evaluator evaluator(cpu_settings());
  const auto path = std::filesystem::temp_directory_path() / "kbrl-test-evaluator-format.jsonl";
  std::filesystem::remove(path);
  RolloutLog log(path);
  evaluator.attach_log(&log);
  const ActionInfo action{ActionKind::text, "", 7, "v"};
  const EvalRecord r = evaluator.format_error(19, "no code here", action, "no code in the text", "unit-test");
  EXPECT_EQ(r.outcome, Outcome::format_error);
  EXPECT_FALSE(r.compile.ok);
  EXPECT_EQ(r.outcome_detail, "no code in the text");
  EXPECT_EQ(r.key, evaluator.format_error_key(19, "no code here"));
  EXPECT_NE(r.key, evaluator.format_error_key(19, "other text"));
  EXPECT_NE(r.key, evaluator.format_error_key(20, "no code here"));
  EXPECT_TRUE(log.contains(r.key));
  const std::vector<EvalRecord> back = read_rollout_log(path);
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0], r);
  EXPECT_THROW(evaluator.format_error(777, "x", action, "y"), InputError);
}

TEST(Evaluator, BadSettingsAndTasksAreInputErrors) {
  EvalSettings s = cpu_settings();
  s.trials = 0;
  EXPECT_THROW(Evaluator{s}, InputError);
  s = cpu_settings();
  s.job_timeout_seconds = 0;
  EXPECT_THROW(Evaluator{s}, InputError);
  Evaluator evaluator(cpu_settings());
  Candidate c = broken_candidate();
  c.task_id = 777;
  EXPECT_THROW(evaluator.evaluate(c), InputError);
  EXPECT_DOUBLE_EQ(parse_tolerance("strict"), 1e-4);
  EXPECT_DOUBLE_EQ(parse_tolerance("legacy"), 1e-2);
  EXPECT_THROW(parse_tolerance("loose"), InputError);
}

}  // namespace
}  // namespace kbrl
