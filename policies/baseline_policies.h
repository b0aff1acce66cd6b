#pragma once
// Baseline policies (docs/design.md, Policies): uniform-random over legal configurations, heuristic
// (the generators' expert configuration plus noise) and greedy decoding of another policy. Their
// per-token log-probabilities are exact, so they can be scored, selected among and distilled
// from like the learned policy.
#include <memory>

#include "policy.h"

namespace kbrl {

/// Every legal configuration equally likely: p(token_k | prefix) is the share of the prefix's
/// legal completions that continue with token_k. Temperatures > 0 are ignored (the policy is
/// uniform by definition); temperature 0 takes, at each knob, the value with the most legal
/// completions (the first of equals).
class UniformPolicy final : public Policy {
 public:
  std::string name() const override { return "uniform"; }
  std::vector<Sample> sample(const TaskSpec& task, int n, double temperature, uint64_t seed) override;
  std::vector<std::vector<double>> logprob(const TaskSpec& task,
                                           const std::vector<std::vector<int>>& tokens,
                                           double temperature = 1.0) override;
};

/// The generator's expert configuration with noise: at each knob, with probability `noise` the
/// value is drawn uniformly from the legal values, else the expert's value is kept (when it is
/// still legal after the earlier decisions; otherwise uniform over the legal ones). Temperature 0
/// gives the expert configuration; other temperatures are ignored (the noise sets the spread).
class HeuristicPolicy final : public Policy {
 public:
  explicit HeuristicPolicy(double noise = 0.25);
  std::string name() const override;
  std::vector<Sample> sample(const TaskSpec& task, int n, double temperature, uint64_t seed) override;
  std::vector<std::vector<double>> logprob(const TaskSpec& task,
                                           const std::vector<std::vector<int>>& tokens,
                                           double temperature = 1.0) override;

 private:
  double noise_;
};

/// Greedy decoding of another policy: sample() is the inner policy's sample at temperature 0
/// (n identical samples); logprob() is the inner policy's.
class GreedyPolicy final : public Policy {
 public:
  explicit GreedyPolicy(Policy& inner) : inner_(inner) {}
  std::string name() const override { return "greedy(" + inner_.name() + ")"; }
  std::vector<Sample> sample(const TaskSpec& task, int n, double temperature, uint64_t seed) override {
    return inner_.sample(task, n, 0.0, seed);
  }
  std::vector<std::vector<double>> logprob(const TaskSpec& task,
                                           const std::vector<std::vector<int>>& tokens,
                                           double temperature = 1.0) override {
    return inner_.logprob(task, tokens, temperature);
  }

 private:
  Policy& inner_;
};

/// The index drawn from `probs` (summing to ~1) by the inverse CDF at `u` in [0, 1); never an
/// index of probability 0.
int draw_index(const std::vector<double>& probs, double u);

/// Checks that `tokens` is a legal configuration of `space` (InputError naming the reason).
void check_tokens(const KnobSpace& space, const std::vector<int>& tokens);

}  // namespace kbrl
