#pragma once
// The evaluator's one way in for a batch of submissions (evaluate_batch): each submission prepared
// (a policy's action realized into a candidate, kernels/action.h, and described as its record
// describes it), keyed under its observation, claimed in the caller's keyed store
// (harness/record/keyed_work.h: the store knows the key, another waiter leads it, or this batch
// leads it), a text that yields no candidate recorded as its format error, and every candidate
// this batch leads evaluated once, each record handed back as it is made. The experiments'
// environment and `kbrl sweep` call evaluate_actions (a map of records as the store); `kbrl serve`'s
// dispatchers call evaluate_batch with the scheduler's store, shared by every GPU and job
// (serve/scheduler_dispatch.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <harness/evaluator.h>
#include <harness/record/keyed_work.h>
#include <kernels/action.h>

namespace kbrl {

/// One action and how its record describes it.
struct ActionSubmission {
  Action action;
  int64_t token_count = 0;     // text: the model's tokens; knobs: one per knob
  std::string prompt_version;  // text: the prompt it answered
};

/// An action made ready for the evaluator: realized (its candidate, or why it has none) and
/// described as its record describes it.
struct PreparedAction {
  Realized real;
  ActionInfo info;
};

/// `submission` of `task` realized (kernels/action.h's realize: a knob configuration outside the
/// task's space throws InputError there) and described.
PreparedAction prepare_action(const TaskSpec& task, const ActionSubmission& submission);

/// The record of a prepared action that yielded no candidate: Evaluator::format_error with its
/// reason and outcome (format_error, or unsupported_format).
EvalRecord record_without_candidate(Evaluator& evaluator, int task_id, const PreparedAction& action,
                                    const std::optional<std::string>& policy);

/// One submission of a batch: its task, its prepared action, the observation it is keyed under.
struct BatchItem {
  int task_id = 0;
  const PreparedAction* action = nullptr;
  const std::string* observation = nullptr;
};

/// The caller's side of evaluate_batch: its keyed store and where each record goes. Each item is
/// claimed in order before any candidate is evaluated; an item without a candidate that leads its
/// key gets its record (a format error) at once.
class BatchCaller {
 public:
  virtual ~BatchCaller() = default;
  /// Item `i`'s record key (`candidate`: whether it has a candidate to evaluate; else its record is
  /// a format error). `leads`: this batch makes the record and hands it to made(); `known` and
  /// `joined`: the caller answers the item itself.
  virtual KeyClaim claim(size_t i, const std::string& key, bool candidate) = 0;
  /// The record of item `i`, which led its key: made now, or taken from the attached rollout log.
  virtual void made(size_t i, const EvalRecord& record) = 0;
  /// Asked before each candidate after the first that needs the GPU: false leaves the rest.
  virtual bool go_on() { return true; }
};

/// `items` evaluated through `evaluator` for `policy` (recorded in each record), duplicates removed
/// against the caller's store. Returns the items that led their key and were left unevaluated
/// (go_on said no), in order: the caller releases their keys. Throws on a harness fault
/// (Evaluator::evaluate_each); records made before it were handed over.
std::vector<size_t> evaluate_batch(Evaluator& evaluator, const std::vector<BatchItem>& items,
                                   const std::optional<std::string>& policy, BatchCaller& caller);

/// What became of one submission: the key of its record in the store.
struct SubmittedAction {
  std::string key;
  std::string code;            // text: the code extracted from it; knobs: empty
  bool evaluated_now = false;  // the first submission of a key the store did not have
};

/// Evaluates `submissions` of `task` by `policy` under `observation` (Evaluator::key): returns one
/// SubmittedAction per submission, in order; `records` (the caller's store, by key) holds each one's
/// record afterwards. Records already in `records` are used, not evaluated again.
std::vector<SubmittedAction> evaluate_actions(Evaluator& evaluator, const TaskSpec& task,
                                              const std::vector<ActionSubmission>& submissions,
                                              const std::string& policy, const std::string& observation,
                                              std::map<std::string, EvalRecord>& records);

}  // namespace kbrl
