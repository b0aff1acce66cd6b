#pragma once
// Where samples become rewards (docs/design.md, the way data flows): a sample's configuration goes
// through its task's generator to a Candidate, and the evaluator scores it. The loops
// (experiments/training_loops.h) see only this interface, so they run against the real evaluator
// on a GPU and against a synthetic reward table in the CPU tests.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <harness/record/eval_record.h>
#include <kbrl/outcome.h>
#include <harness/reward.h>
#include <policies/policy.h>

namespace kbrl {

class Evaluator;
struct EvalSettings;

/// One evaluated sample: the sample, the record of its evaluation (shared by the samples of one
/// candidate; never null), and what this rollout adds to it. Everything about the evaluation is read
/// from the record, so fast and significantly fast are the record's (harness/record/eval_record.h).
struct Rollout {
  Sample sample;
  std::shared_ptr<const EvalRecord> record = std::make_shared<const EvalRecord>();
  std::string code;  // text actions: the code realize() extracted from the text
  /// The record's reward, or another reward of the same gates (RewardedEnvironment).
  double reward = 0.0;
  double compile_seconds = 0.0;  // NVRTC time, charged to the one sample whose evaluation compiled

  Outcome outcome() const { return record->outcome; }
  const std::string& outcome_detail() const { return record->outcome_detail; }  // a format error's reason, say
  bool compiled() const { return record->compile.ok; }
  bool correct() const { return record->outcome == Outcome::ok; }
  double speedup() const { return record->speedup; }  // correctness-gated
  /// The speedup's 95% interval: set for correct, timed candidates only.
  const std::optional<SpeedupInterval>& speedup_ci() const { return record->speedup_ci; }
  double runtime_ms() const { return record->runtime ? record->runtime->median_ms : 0.0; }  // 0 when not timed
  const std::vector<std::string>& flags() const { return record->flags; }
  /// fast_p's event (fast_1's by default): correct and strictly faster than p times the reference.
  bool fast(double p = 1.0) const { return is_fast(*record, p); }
  /// sig_fast_p's event: fast, and the lower end of the speedup's interval above p (never without one).
  bool significantly_fast(double p = 1.0) const { return is_significantly_fast(*record, p); }
};

/// A rollout of `sample` read from `record` (not null), its reward the record's.
Rollout rollout_from(Sample sample, std::shared_ptr<const EvalRecord> record, std::string code = {},
                     double compile_seconds = 0.0);
Rollout rollout_from(Sample sample, EvalRecord record, std::string code = {}, double compile_seconds = 0.0);

class Environment {
 public:
  virtual ~Environment() = default;
  virtual std::string name() const = 0;
  /// Evaluates samples of one task, in order. `policy` names the sampler in the records.
  virtual std::vector<Rollout> evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                        const std::string& policy) = 0;
  /// Wall seconds spent evaluating so far (compile waits, checks and timing).
  virtual double evaluator_seconds() const = 0;
  /// The observation later evaluations belong to (an experiment's seed: "seed 42"): a candidate
  /// sampled again within one observation reuses its first record (a repeated configuration is one
  /// timing, clustered), and under another observation it is evaluated and timed again, so no two
  /// seeds share a timing. "" (the start) is an observation too. A table has no noise to repeat.
  virtual void set_observation(const std::string& id) { (void)id; }
};

/// The real thing: realize (kernels/action.h: generator or model text) -> Candidate ->
/// Evaluator::evaluate_all; text that yields no candidate is a format_error record. Identical candidates (the
/// same record key: source, plan, settings and observation, set_observation) share one evaluation:
/// a configuration sampled again within an observation reuses its first record (its timing
/// included), so a run spends GPU time on distinct kernels only; rollouts still count every sample, and a reused sample keeps the
/// record's speedup and interval, so its fast and significantly fast classification. Records are
/// appended to the evaluator's attached rollout log once per distinct candidate; a candidate already
/// in that log (an interrupted run's) gets its logged record back from evaluate_all, so a rerun
/// with the same log evaluates nothing twice.
class EvaluatorEnvironment final : public Environment {
 public:
  explicit EvaluatorEnvironment(Evaluator& evaluator);
  std::string name() const override { return "evaluator"; }
  std::vector<Rollout> evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                const std::string& policy) override;
  double evaluator_seconds() const override { return seconds_; }
  void set_observation(const std::string& id) override { observation_ = id; }
  /// Distinct candidates evaluated (or preloaded) so far.
  size_t distinct_evaluations() const { return memo_.size(); }

 private:
  Evaluator& evaluator_;
  double seconds_ = 0.0;
  std::map<std::string, EvalRecord> memo_;  // by record key
  std::string observation_;
};

/// The evaluator behind one or more `kbrl serve` (docs/serve.md): each sample becomes an item (a
/// model's text, or a knob configuration), the server's records become rollouts, with the same
/// reading of a record as EvaluatorEnvironment's. The mode, tolerance, input checks and reward of
/// `settings` travel with every item; the scale is the server's, and a record of another scale than
/// the task's is an InputError. Identical samples are evaluated once (the server deduplicates; its
/// --log is the rollout log). A server that stays unreachable after the client's retries is an Error.
class ServedEnvironment final : public Environment {
 public:
  ServedEnvironment(std::vector<std::string> urls, std::string token, const EvalSettings& settings);
  ~ServedEnvironment() override;
  std::string name() const override { return "served"; }
  std::vector<Rollout> evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                const std::string& policy) override;
  double evaluator_seconds() const override { return seconds_; }
  void set_observation(const std::string& id) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  double seconds_ = 0.0;
};

/// A fixed reward table over every task's knob space, for CPU tests of the algorithms. Each
/// (knob, value) of a task has an effect drawn from `seed`; a configuration's log-speedup is the
/// sum of its values' effects, so a policy can learn it knob by knob. A configuration with an
/// unsafe value (precision other than fp32, fast_math=on, tail=dropped) is wrong for half of the
/// configurations (by hash). Rewards follow `reward` (speedup kind: the gated speedup). There is no
/// timing noise in a table: a correct rollout's speedup interval is [speedup, speedup], so it is
/// significantly fast exactly when it is fast.
class SyntheticEnvironment final : public Environment {
 public:
  explicit SyntheticEnvironment(uint64_t seed, double effect_scale = 0.5, RewardConfig reward = {});
  std::string name() const override { return "synthetic"; }
  std::vector<Rollout> evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                const std::string& policy) override;
  double evaluator_seconds() const override { return 0.0; }

  /// The rollout a configuration always gets.
  Rollout score(const TaskSpec& task, const Sample& sample) const;
  /// The expected reward of `policy` on `task` at `temperature`: the sum over every legal
  /// configuration of p(configuration) * reward.
  double expected_reward(Policy& policy, const TaskSpec& task, double temperature) const;

 private:
  uint64_t seed_;
  double effect_scale_;
  RewardConfig reward_;
};

/// Another environment's rollouts rewarded again under `reward` (reward_of on each rollout's gates:
/// compiled, correct, gated speedup): one evaluation, another reward, e.g. the surprisal report's
/// 6.7 reward sparsification (threshold:T against the dense speedup).
class RewardedEnvironment final : public Environment {
 public:
  RewardedEnvironment(Environment& inner, RewardConfig reward) : inner_(inner), reward_(std::move(reward)) {}
  std::string name() const override { return inner_.name() + "+reward:" + reward_spec(reward_); }
  std::vector<Rollout> evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                const std::string& policy) override {
    std::vector<Rollout> rollouts = inner_.evaluate(task, samples, policy);
    for (Rollout& r : rollouts) r.reward = reward_of(reward_, task.id, r.compiled(), r.correct(), r.speedup());
    return rollouts;
  }
  double evaluator_seconds() const override { return inner_.evaluator_seconds(); }
  void set_observation(const std::string& id) override { inner_.set_observation(id); }

 private:
  Environment& inner_;
  RewardConfig reward_;
};

}  // namespace kbrl
