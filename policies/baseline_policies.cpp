#include "baseline_policies.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <mutex>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <kernels/generator.h>

namespace kbrl {
namespace {

/// The token vectors of every legal configuration (cached per task id).
const std::vector<std::vector<int>>& all_tokens(const TaskSpec& task) {
  static std::mutex mutex;
  static std::map<int, std::vector<std::vector<int>>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(task.id);
  if (it == cache.end()) {
    const KnobSpace& space = knob_space_of(task);
    std::vector<std::vector<int>> all;
    for (const Config& c : space.enumerate()) all.push_back(space.tokenize(c));
    it = cache.emplace(task.id, std::move(all)).first;
  }
  return it->second;
}

/// The number of legal completions of `prefix` that continue with each value of the next knob.
std::vector<double> completion_counts(const TaskSpec& task, const std::vector<int>& prefix,
                                      size_t values) {
  std::vector<double> counts(values, 0.0);
  for (const auto& t : all_tokens(task)) {
    bool match = true;
    for (size_t i = 0; i < prefix.size() && match; ++i) match = t[i] == prefix[i];
    if (match) counts[static_cast<size_t>(t[prefix.size()])] += 1.0;
  }
  return counts;
}

std::vector<double> normalized(std::vector<double> w) {
  double total = 0;
  for (double x : w) total += x;
  KBRL_ASSERT(total > 0, "no legal value to sample");
  for (double& x : w) x /= total;
  return w;
}

/// The heuristic's distribution over the next knob's values.
std::vector<double> heuristic_probs(const KnobSpace& space, const Config& expert,
                                    const std::vector<int>& prefix, double noise) {
  const std::vector<bool> mask = space.legal_mask(prefix);
  const Knob& knob = space.knobs()[prefix.size()];
  double legal = 0;
  for (bool b : mask) legal += b ? 1 : 0;
  const int e = knob.index_of(expert.at(knob.name));
  const bool expert_legal = e >= 0 && mask[static_cast<size_t>(e)];
  std::vector<double> p(mask.size(), 0.0);
  for (size_t v = 0; v < mask.size(); ++v) {
    if (!mask[v]) continue;
    p[v] = expert_legal ? noise / legal + (static_cast<int>(v) == e ? 1.0 - noise : 0.0) : 1.0 / legal;
  }
  return p;
}

double log_of(double p) { return p > 0 ? std::log(p) : -std::numeric_limits<double>::infinity(); }

/// The next-token distribution of a baseline policy given the decisions so far.
using NextProbs = std::function<std::vector<double>(const std::vector<int>& prefix)>;

/// n samples drawn token by token from `next` (greedy: the first most likely value).
std::vector<Sample> sample_by(const TaskSpec& task, int n, double temperature, uint64_t seed,
                             const NextProbs& next) {
  KBRL_CHECK_INPUT(n >= 0 && temperature >= 0, "sample: n {} and temperature {} must be >= 0", n,
                   temperature);
  const KnobSpace& space = knob_space_of(task);
  uint64_t state = derive_seed(seed, {task.id});
  std::vector<Sample> out;
  for (int i = 0; i < n; ++i) {
    Sample s;
    s.task_id = task.id;
    for (size_t k = 0; k < space.knobs().size(); ++k) {
      const std::vector<double> p = next(s.tokens);
      const int t = temperature == 0
                        ? static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin())
                        : draw_index(p, splitmix64_uniform01(state));
      s.tokens.push_back(t);
      s.logprobs.push_back(temperature == 0 ? 0.0 : log_of(p[static_cast<size_t>(t)]));
    }
    s.config = space.detokenize(s.tokens);
    out.push_back(std::move(s));
  }
  return out;
}

/// Per-token log-probabilities of given sequences under `next`.
std::vector<std::vector<double>> score_by(const TaskSpec& task, const std::vector<std::vector<int>>& tokens,
                                          const NextProbs& next) {
  const KnobSpace& space = knob_space_of(task);
  std::vector<std::vector<double>> out;
  for (const auto& seq : tokens) {
    check_tokens(space, seq);
    std::vector<double> lp;
    for (size_t k = 0; k < seq.size(); ++k)
      lp.push_back(log_of(next(std::vector<int>(seq.begin(), seq.begin() + static_cast<long>(k)))
                              [static_cast<size_t>(seq[k])]));
    out.push_back(std::move(lp));
  }
  return out;
}

}  // namespace

int draw_index(const std::vector<double>& probs, double u) {
  double acc = 0;
  int last = -1;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] <= 0) continue;
    last = static_cast<int>(i);
    acc += probs[i];
    if (u < acc) return last;
  }
  KBRL_ASSERT(last >= 0, "draw from an empty distribution");
  return last;  // rounding: the last index with mass
}

void check_tokens(const KnobSpace& space, const std::vector<int>& tokens) {
  space.detokenize(tokens);  // throws InputError with the reason
}

namespace {

NextProbs uniform_next(const TaskSpec& task) {
  const KnobSpace& space = knob_space_of(task);
  return [&space, task](const std::vector<int>& prefix) {
    return normalized(completion_counts(task, prefix, space.knobs()[prefix.size()].values.size()));
  };
}

NextProbs heuristic_next(const TaskSpec& task, double noise) {
  const KnobSpace& space = knob_space_of(task);
  return [&space, noise, expert = generator_for(task.id).expert(task)](const std::vector<int>& prefix) {
    return heuristic_probs(space, expert, prefix, noise);
  };
}

}  // namespace

std::vector<Sample> UniformPolicy::sample(const TaskSpec& task, int n, double temperature,
                                          uint64_t seed) {
  return sample_by(task, n, temperature, seed, uniform_next(task));
}

std::vector<std::vector<double>> UniformPolicy::logprob(const TaskSpec& task,
                                                        const std::vector<std::vector<int>>& tokens,
                                                        double temperature) {
  return score_by(task, tokens, uniform_next(task));
}

HeuristicPolicy::HeuristicPolicy(double noise) : noise_(noise) {
  KBRL_CHECK_INPUT(noise >= 0 && noise <= 1, "heuristic noise {} must be in [0, 1]", noise);
}

std::string HeuristicPolicy::name() const { return fmt::format("heuristic(noise={})", noise_); }

std::vector<Sample> HeuristicPolicy::sample(const TaskSpec& task, int n, double temperature,
                                            uint64_t seed) {
  // Temperature 0: no noise, so the expert configuration (its values stay legal step by step).
  return sample_by(task, n, temperature, seed, heuristic_next(task, temperature == 0 ? 0.0 : noise_));
}

std::vector<std::vector<double>> HeuristicPolicy::logprob(const TaskSpec& task,
                                                          const std::vector<std::vector<int>>& tokens,
                                                          double temperature) {
  return score_by(task, tokens, heuristic_next(task, noise_));
}

}  // namespace kbrl
