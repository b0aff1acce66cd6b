#include "evaluate_actions.h"

#include <utility>

#include <harness/record/keyed_work.h>
#include <kbrl/error.h>

namespace kbrl {

namespace {

// The caller's store as KeyedWork's known records.
struct MapRecords {
  std::map<std::string, EvalRecord>* records;
  const EvalRecord* find(const std::string& key) const {
    auto it = records->find(key);
    return it == records->end() ? nullptr : &it->second;
  }
  void remember(const std::string& key, const EvalRecord& record) { (*records)[key] = record; }
};

}  // namespace

PreparedAction prepare_action(const TaskSpec& task, const ActionSubmission& s) {
  PreparedAction out{realize(task, s.action), {}};
  out.info = {s.action.kind, out.real.code, s.token_count, s.prompt_version};
  return out;
}

EvalRecord record_without_candidate(Evaluator& evaluator, int task_id, const PreparedAction& action,
                                    const std::optional<std::string>& policy) {
  KBRL_ASSERT(!action.real.candidate, "task {}: an action with a candidate has no format error to record", task_id);
  return evaluator.format_error(task_id, action.real.raw, action.info, action.real.format_error, policy,
                                action.real.failure);
}

std::vector<size_t> evaluate_batch(Evaluator& evaluator, const std::vector<BatchItem>& items,
                                   const std::optional<std::string>& policy, BatchCaller& caller) {
  std::vector<KeyedCandidate> todo;
  std::vector<size_t> todo_items;                                // each todo's item
  std::vector<std::pair<std::string, ActionInfo>> todo_actions;  // each todo's raw action and info
  for (size_t i = 0; i < items.size(); ++i) {
    const BatchItem& item = items[i];
    const PreparedAction& prepared = *item.action;
    if (!prepared.real.candidate) {
      if (caller.claim(i, evaluator.format_error_key(item.task_id, prepared.real.raw), false) == KeyClaim::leads)
        caller.made(i, record_without_candidate(evaluator, item.task_id, prepared, policy));
      continue;
    }
    KeyedCandidate keyed = evaluator.keyed(*prepared.real.candidate, *item.observation);  // may start the worker
    if (caller.claim(i, keyed.key, true) != KeyClaim::leads) continue;
    todo.push_back(std::move(keyed));
    todo_items.push_back(i);
    todo_actions.emplace_back(prepared.real.raw, prepared.info);
  }
  if (todo.empty()) return {};
  std::vector<size_t> left = evaluator.evaluate_each(
      todo, [&](size_t k, const EvalRecord& r) { caller.made(todo_items[k], r); }, [&] { return caller.go_on(); },
      todo_actions, policy);
  for (size_t& k : left) k = todo_items[k];
  return left;
}

namespace {

// evaluate_actions's store: the caller's map of records by key.
class MapCaller : public BatchCaller {
 public:
  MapCaller(std::map<std::string, EvalRecord>& records, std::vector<SubmittedAction>& out)
      : work_(MapRecords{&records}), out_(out) {}

  KeyClaim claim(size_t i, const std::string& key, bool) override {
    out_[i].key = key;
    const KeyClaim claim = work_.claim(key, i);
    out_[i].evaluated_now = claim == KeyClaim::leads;
    return claim;
  }
  void made(size_t, const EvalRecord& record) override { work_.finish(record.key, record); }

 private:
  KeyedWork<size_t, MapRecords> work_;
  std::vector<SubmittedAction>& out_;
};

}  // namespace

std::vector<SubmittedAction> evaluate_actions(Evaluator& evaluator, const TaskSpec& task,
                                              const std::vector<ActionSubmission>& submissions,
                                              const std::string& policy, const std::string& observation,
                                              std::map<std::string, EvalRecord>& records) {
  std::vector<PreparedAction> prepared;
  prepared.reserve(submissions.size());
  std::vector<BatchItem> items;
  std::vector<SubmittedAction> out(submissions.size());
  for (size_t i = 0; i < submissions.size(); ++i) {
    prepared.push_back(prepare_action(task, submissions[i]));
    out[i].code = prepared.back().real.code;
  }
  for (const PreparedAction& p : prepared) items.push_back({task.id, &p, &observation});
  MapCaller caller(records, out);
  const std::vector<size_t> left = evaluate_batch(evaluator, items, policy, caller);
  KBRL_ASSERT(left.empty(), "{} candidates of task {} left unevaluated", left.size(), task.id);
  for (const SubmittedAction& s : out)
    KBRL_ASSERT(records.count(s.key), "no record for an action of task {} (key {})", task.id, s.key);
  return out;
}

}  // namespace kbrl
