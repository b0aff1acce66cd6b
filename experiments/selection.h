#pragma once
// Selection strategies over a task's evaluated samples (the surprisal report, 4.5 and 5.2): which
// one sample a method keeps. Each returns the EXPECTED outcome of its pick, averaging over the
// samples it cannot tell apart (ties in log-probability, a random pick), so results do not depend
// on a tie-break or a random draw. A pick is fast (fast_1's event) or significantly fast (the lower
// end of its speedup's 95% interval above 1 too); a method that keeps the best speedup among some
// samples keeps it by speedup, and its pick is significantly fast when that sample is.
#include <string>
#include <string_view>
#include <vector>

#include <kbrl/enum_names.h>
#include <kbrl/fast_p.h>

namespace kbrl {

/// One evaluated sample, as selection sees it.

struct ScoredSample {
  bool correct = false;
  double speedup = 0.0;        // gated: 0 unless correct
  double mean_logprob = 0.0;   // log-probability per token (the report's "mean-logprob")
  double speedup_low = 0.0;    // the lower end of the speedup's 95% interval; 0 without one
  bool fast() const { return fast_event(correct, speedup, 1.0); }
  bool significantly_fast() const { return significantly_fast_event(correct, speedup, speedup_low, 1.0); }
};

enum class SelectionStrategy {
  oracle,            // best-correct: the highest speedup among correct samples (post hoc)
  random_correct,    // a uniformly random correct sample
  confidence,        // the highest mean-logprob among correct samples
  surprisal,         // the lowest mean-logprob (highest surprisal) among correct samples
  surprisal_top3,    // the best speedup among the 3 highest-surprisal correct samples
};
template <>
struct EnumNames<SelectionStrategy> {  // the names of the report's tables
  static constexpr std::string_view what = "selection strategy";
  static constexpr EnumEntry<SelectionStrategy> entries[] = {
      {SelectionStrategy::oracle, "best_correct_oracle"},
      {SelectionStrategy::random_correct, "random_correct"},
      {SelectionStrategy::confidence, "confidence_guided"},
      {SelectionStrategy::surprisal, "surprisal_guided"},
      {SelectionStrategy::surprisal_top3, "surprisal_guided_top3"},
  };
};
std::string_view to_string(SelectionStrategy);
const std::vector<SelectionStrategy>& all_selection_strategies();

/// The expected result of one task's pick.
struct Selection {
  double fast = 0.0;     // probability the pick is correct and faster than the reference
  double sig_fast = 0.0;  // probability the pick is significantly fast (ScoredSample)
  double speedup = 0.0;  // expected (gated) speedup of the pick; 0 when no sample is correct
  int evaluations = 0;   // evaluated samples the strategy needs the results of
  /// Speed measurements it needs beyond every sample's correctness (the reports' "compute"):
  /// oracle every correct sample, surprisal-guided-top3 at most 3, the one-pick strategies none.
  int timed = 0;
};

/// A strategy's pick among a task's samples. No correct sample: fast 0, sig_fast 0, speedup 0.
Selection select_sample(const std::vector<ScoredSample>& samples, SelectionStrategy strategy);

/// The deployable variant the report leaves open: rank ALL samples by surprisal before any
/// evaluation, evaluate only the top m (highest surprisal first; ties ranked by their expected
/// position), keep the fastest correct one. m >= samples evaluates everything (= oracle).
Selection select_top_surprisal_evaluated(const std::vector<ScoredSample>& samples, int m);

/// Best-of-k: the oracle's pick (the best speedup) among k of the samples drawn uniformly without
/// replacement, in expectation over the draws: `fast` is pass@k of the fast event, `speedup` the
/// expected best of k (statistics.h), `sig_fast` the probability that the pick is significantly fast.
/// Needs 1 <= k <= samples.
Selection best_of_random_k(const std::vector<ScoredSample>& samples, int k);

}  // namespace kbrl
