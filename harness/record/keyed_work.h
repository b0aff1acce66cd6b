#pragma once
// Where identical candidates meet: one record key, evaluated once. The records already known (a
// store the caller chooses: every record of an experiment, kbrl serve's recent ones, the rollout
// log) and the keys in flight with whoever waits on each. evaluate_actions (an experiment's or a
// sweep's actions), kbrl serve's scheduler (items of many jobs on several GPUs) and
// Evaluator::evaluate_each (one batch, over the attached rollout log) remove duplicates here and
// nowhere else. Not thread-safe: the scheduler's lock guards it.
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <harness/record/eval_record.h>

namespace kbrl {

/// What a claim of a key found (KeyedWork::claim, and evaluate_batch's callers).
enum class KeyClaim {
  known,   // its record is known: the caller has it
  joined,  // another waiter leads its evaluation: its finish answers this one too
  leads,   // the caller evaluates it, then finishes it (or releases it if it does not)
};

/// `Known` holds finished records: `std::optional<EvalRecord> find(key)` (or a pointer-like result
/// that tests false when absent) and `remember(key, record)`.
template <class Waiter, class Known>
class KeyedWork {
 public:
  explicit KeyedWork(Known known) : known_(std::move(known)) {}

  using Claim = KeyClaim;

  /// `waiter` wants the record of `key` (known: `*record` holds it).
  Claim claim(const std::string& key, Waiter waiter, std::optional<EvalRecord>* record = nullptr) {
    if (auto found = known_.find(key)) {
      if (record) *record = *found;
      return Claim::known;
    }
    auto [it, fresh] = in_flight_.try_emplace(key);
    it->second.push_back(std::move(waiter));
    return fresh ? Claim::leads : Claim::joined;
  }

  /// The record of `key` is made: remembered (unless `remember` is false: a harness fault that a
  /// later submission should try again), and the waiters it answers returned, the leader first.
  std::vector<Waiter> finish(const std::string& key, const EvalRecord& record, bool remember = true) {
    if (remember) known_.remember(key, record);
    return release(key);
  }

  /// `key` is no longer in flight and nothing is remembered (its evaluation did not happen here):
  /// its waiters, to be answered otherwise or queued again.
  std::vector<Waiter> release(const std::string& key) {
    std::vector<Waiter> waiting;
    auto it = in_flight_.find(key);
    if (it == in_flight_.end()) return waiting;
    waiting = std::move(it->second);
    in_flight_.erase(it);
    return waiting;
  }

  bool in_flight(const std::string& key) const { return in_flight_.count(key) > 0; }
  Known& known() { return known_; }
  const Known& known() const { return known_; }

 private:
  Known known_;
  std::unordered_map<std::string, std::vector<Waiter>> in_flight_;
};

}  // namespace kbrl
