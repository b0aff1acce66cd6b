// The significant fast_1 beside fast_1: a rollout's speedup interval from its record (a memoized
// one included) or from the synthetic table, score_rollouts' sig_fast_1 on hand-made rollouts, and
// samples.csv's interval columns written, read back, and absent from an older samples.csv.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <tuple>

#include <gtest/gtest.h>

#include <experiments/environment.h>
#include <experiments/schemas.h>
#include <experiments/training_loops.h>
#include <harness/evaluator.h>
#include <harness/record/rollout_log.h>
#include <kbrl/error.h>
#include <kernels/action.h>
#include <reference/task_registry.h>

#include <ctest/harness/harness_testing.h>

namespace kbrl {
namespace {

namespace fs = std::filesystem;

Rollout rollout(bool correct, double speedup, std::optional<SpeedupInterval> ci) {
  Sample sample;
  sample.task_id = 19;
  sample.config = Config({{"block", "256"}});
  EvalRecord record;
  record.task_id = 19;
  record.outcome = correct ? Outcome::ok : Outcome::wrong_answer;
  record.compile.ok = true;
  record.speedup = correct ? speedup : 0.0;
  record.speedup_ci = ci;
  return rollout_from(std::move(sample), std::move(record));
}

fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kbrl-test-significance-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

TEST(Significance, ScoreRolloutsCountsFastAndSignificantlyFastApart) {
  const std::vector<Rollout> rs = {
      rollout(true, 1.3, SpeedupInterval{0.9, 1.6}),  // fast, not significantly: the interval holds 1
      rollout(true, 1.3, SpeedupInterval{1.1, 1.6}),  // both
      rollout(true, 0.8, SpeedupInterval{0.7, 0.9}),  // neither
      rollout(true, 1.2, std::nullopt),               // fast; no interval, so never significant
      rollout(false, 0.0, std::nullopt),              // wrong
  };
  EXPECT_TRUE(rs[0].fast());
  EXPECT_FALSE(rs[0].significantly_fast());
  EXPECT_TRUE(rs[1].fast());
  EXPECT_TRUE(rs[1].significantly_fast());
  EXPECT_FALSE(rs[2].fast());
  EXPECT_FALSE(rs[2].significantly_fast());
  EXPECT_TRUE(rs[3].fast());
  EXPECT_FALSE(rs[3].significantly_fast());
  EXPECT_FALSE(rs[4].significantly_fast());
  // fast_p at other p: [1.1, 1.6] is significantly faster than 1.05x, not than 1.2x.
  EXPECT_TRUE(rs[1].significantly_fast(1.05));
  EXPECT_FALSE(rs[1].significantly_fast(1.2));
  const StepMetrics m = score_rollouts(rs);
  EXPECT_DOUBLE_EQ(m.fast_1, 3.0 / 5);
  EXPECT_DOUBLE_EQ(m.sig_fast_1, 1.0 / 5);
  EXPECT_EQ(score_rollouts({}).sig_fast_1, 0.0);
  // The training_steps row carries it right after fast_1.
  const std::vector<std::string> row = training_step_row("run", m);
  const auto& columns = schemas::training_steps().columns;
  ASSERT_EQ(row.size(), columns.size());
  const auto cell_of = [&](const std::string& column) {
    const auto it = std::find(columns.begin(), columns.end(), column);
    return it == columns.end() ? std::string("(no column)") : row[static_cast<size_t>(it - columns.begin())];
  };
  EXPECT_EQ(cell_of("fast_1"), "0.6");
  EXPECT_EQ(cell_of("sig_fast_1"), "0.2");
}

TEST(Significance, RolloutAgreesWithTheRecordsClassification) {
  for (const auto& [speedup, low, outcome] :
       {std::tuple{1.3, 0.9, Outcome::ok}, std::tuple{1.3, 1.1, Outcome::ok}, std::tuple{0.8, 0.7, Outcome::ok},
        std::tuple{0.0, 1.1, Outcome::wrong_answer}}) {
    EvalRecord record = testing::sample_record();
    record.speedup = speedup;
    record.speedup_ci = SpeedupInterval{low, 1.6};
    record.outcome = outcome;
    const Rollout r = rollout(outcome == Outcome::ok, speedup, record.speedup_ci);
    EXPECT_EQ(r.fast(), is_fast(record)) << speedup << " " << low;
    EXPECT_EQ(r.significantly_fast(), is_significantly_fast(record)) << speedup << " " << low;
  }
}

// The synthetic table has no timing noise: a correct rollout's interval is [speedup, speedup], so
// it is significantly fast exactly when it is fast; a wrong one has no interval.
TEST(Significance, SyntheticRolloutsHaveAPointInterval) {
  SyntheticEnvironment env(7);
  const TaskSpec task = task_spec(19, Scale::small);
  const KnobSpace& space = knob_space_of(task);
  int correct = 0, fast = 0;
  for (const Config& c : space.enumerate()) {
    Sample s;
    s.task_id = task.id;
    s.config = c;
    s.tokens = space.tokenize(c);
    const Rollout r = env.score(task, s);
    if (r.correct()) {
      ++correct;
      ASSERT_TRUE(r.speedup_ci().has_value()) << c.str();
      EXPECT_EQ(*r.speedup_ci(), (SpeedupInterval{r.speedup(), r.speedup()})) << c.str();
    } else {
      EXPECT_FALSE(r.speedup_ci().has_value()) << c.str();
    }
    EXPECT_EQ(r.significantly_fast(), r.fast()) << c.str();
    fast += r.fast();
  }
  EXPECT_GT(correct, 0);
  EXPECT_GT(fast, 0);  // the check above compared some fast rollouts, not only slow ones
}

// A candidate sampled again reuses its first record: the reused rollouts keep the record's
// interval and so its classification. Records preloaded from a log (resume) are reused the same
// way, which this checks without a GPU (nothing is evaluated: every key is in the memo).
TEST(Significance, MemoizedCandidatesKeepTheirInterval) {
  EvalSettings settings;
  settings.compile_only = true;
  settings.arch = "sm_90";
  Evaluator evaluator(settings);
  const TaskSpec task = task_spec(19, settings.scale);
  const KnobSpace& space = knob_space_of(task);
  const std::vector<Config> configs = space.enumerate();
  ASSERT_GE(configs.size(), 2u);
  std::vector<Sample> samples;
  for (const Config& c : {configs[0], configs[1]}) {
    Sample s;
    s.task_id = task.id;
    s.config = c;
    s.tokens = space.tokenize(c);
    samples.push_back(s);
  }
  const fs::path log_path = scratch("memo.jsonl");
  fs::remove(log_path);
  const std::vector<SpeedupInterval> intervals = {{0.9, 1.6}, {1.1, 1.6}};
  {
    RolloutLog log(log_path);
    for (size_t i = 0; i < samples.size(); ++i) {
      const Realized real = realize(task, samples[i].action());
      ASSERT_TRUE(real.candidate.has_value());
      EvalRecord r = testing::sample_record(evaluator.key(*real.candidate));
      r.speedup = 1.3;
      r.speedup_ci = intervals[i];
      log.append(r);
    }
  }
  RolloutLog log(log_path);  // the records come back from it through the evaluator (resume)
  evaluator.attach_log(&log);
  EvaluatorEnvironment env(evaluator);
  const std::vector<Rollout> rs = env.evaluate(task, {samples[0], samples[1], samples[0], samples[1]}, "test");
  ASSERT_EQ(rs.size(), 4u);
  for (size_t i = 0; i < rs.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(rs[i].speedup_ci().has_value());
    EXPECT_EQ(*rs[i].speedup_ci(), intervals[i % 2]);
    EXPECT_TRUE(rs[i].fast());
    EXPECT_EQ(rs[i].significantly_fast(), i % 2 == 1);
  }
  EXPECT_EQ(env.distinct_evaluations(), 2u);
  EXPECT_EQ(log.size(), 2u);  // nothing evaluated again
  EXPECT_DOUBLE_EQ(score_rollouts(rs).sig_fast_1, 0.5);
  evaluator.attach_log(nullptr);
  fs::remove(log_path);
}

TEST(Significance, SamplesCsvRoundTripsTheInterval) {
  const fs::path file = scratch("samples.csv");
  const std::vector<Rollout> rs = {rollout(true, 1.3, SpeedupInterval{1.1, 1.6}), rollout(true, 1.25, std::nullopt),
                                   rollout(false, 0.0, std::nullopt)};
  {
    CsvTable csv(file, schemas::samples());
    for (size_t i = 0; i < rs.size(); ++i) csv.row(schemas::samples_row("run", "policy", static_cast<int>(i), rs[i]));
  }
  const std::vector<schemas::SampleRow> rows = schemas::read_samples(file);
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_TRUE(rows[0].speedup_ci.has_value());
  EXPECT_EQ(*rows[0].speedup_ci, (SpeedupInterval{1.1, 1.6}));
  EXPECT_TRUE(rows[0].significantly_fast());
  EXPECT_DOUBLE_EQ(rows[1].speedup, 1.25);
  EXPECT_FALSE(rows[1].speedup_ci.has_value());  // written as two empty cells
  EXPECT_FALSE(rows[1].significantly_fast());
  EXPECT_FALSE(rows[2].speedup_ci.has_value());
  EXPECT_EQ(rows[2].config, "block=256");
  fs::remove(file);
}

TEST(Significance, OlderSamplesCsvWithoutTheIntervalStillReads) {
  const fs::path file = scratch("old_samples.csv");
  {
    std::ofstream out(file);
    out << "run,policy,task_id,sample,config,tokens,logprob,surprisal,token_count,outcome,compiled,correct,"
           "speedup,reward,action,mean_logprob,prompt_version,finish_reason,outcome_detail,text,code\n"
        << "subset1_seed42,schedule_rlvr,19,0,block=256,1 0,-1.5,1.5,2,ok,1,1,1.3,1.3,knobs,-0.75,,,,,\n";
  }
  const std::vector<schemas::SampleRow> rows = schemas::read_samples(file);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].run, "subset1_seed42");
  EXPECT_EQ(rows[0].tokens, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(rows[0].logprob, -1.5);
  EXPECT_EQ(rows[0].token_count, 2);
  EXPECT_TRUE(rows[0].correct);
  EXPECT_DOUBLE_EQ(rows[0].speedup, 1.3);
  EXPECT_EQ(rows[0].kind, ActionKind::knobs);
  EXPECT_FALSE(rows[0].speedup_ci.has_value());
  EXPECT_FALSE(rows[0].significantly_fast());

  // Half an interval, or another header, is an InputError that says what is wrong.
  const std::string header = schemas::samples().header();
  const auto expect_error = [&](const std::string& text, const std::string& needle) {
    std::ofstream(file) << text;
    try {
      schemas::read_samples(file);
      ADD_FAILURE() << "no error for " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(header + "\nrun,p,19,0,block=256,1,-1,1,1,ok,1,1,1.3,1.1,,1.3,knobs,-1,,,,,\n",
               "both be set or both be empty");
  expect_error("run,policy,task_id\n", "not a samples CSV");
  fs::remove(file);
}

}  // namespace
}  // namespace kbrl
