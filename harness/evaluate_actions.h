#pragma once
// The evaluator's way in from a policy's actions (text or knobs): each action prepared (realized
// into a candidate, kernels/action.h, and described as its record describes it), a text that yields
// none recorded as its format error, the rest keyed under the observation, every key evaluated once
// (not at all when the caller's store has it: harness/record/keyed_work.h, where kbrl serve removes
// its duplicates too), and every record put into that one keyed store. The experiments' environment
// and `kbrl sweep` call evaluate_actions; `kbrl serve` prepares its items with prepare_action and
// records those without a candidate with record_without_candidate, then queues the rest through
// evaluate_each (serve/scheduler_dispatch.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <harness/evaluator.h>
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
