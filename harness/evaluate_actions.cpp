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

std::vector<SubmittedAction> evaluate_actions(Evaluator& evaluator, const TaskSpec& task,
                                              const std::vector<ActionSubmission>& submissions,
                                              const std::string& policy, const std::string& observation,
                                              std::map<std::string, EvalRecord>& records) {
  using Work = KeyedWork<size_t, MapRecords>;
  Work work(MapRecords{&records});
  std::vector<SubmittedAction> out;
  std::vector<KeyedCandidate> todo;
  std::vector<std::pair<std::string, ActionInfo>> todo_actions;  // each todo's raw action and info
  for (size_t i = 0; i < submissions.size(); ++i) {
    PreparedAction prepared = prepare_action(task, submissions[i]);
    SubmittedAction& done = out.emplace_back();
    done.code = prepared.real.code;
    if (!prepared.real.candidate) {
      done.key = evaluator.format_error_key(task.id, prepared.real.raw);
      if (work.claim(done.key, i) == Work::Claim::leads) {
        work.finish(done.key, record_without_candidate(evaluator, task.id, prepared, policy));
        done.evaluated_now = true;
      }
      continue;
    }
    KeyedCandidate keyed = evaluator.keyed(std::move(*prepared.real.candidate), observation);  // hashed once, here
    done.key = keyed.key;
    if (work.claim(done.key, i) == Work::Claim::leads) {
      done.evaluated_now = true;
      todo.push_back(std::move(keyed));
      todo_actions.emplace_back(std::move(prepared.real.raw), prepared.info);
    }
  }
  if (!todo.empty()) {
    const std::vector<EvalRecord> made = evaluator.evaluate_all(todo, policy, todo_actions);
    KBRL_ASSERT(made.size() == todo.size(), "{} records for {} candidates", made.size(), todo.size());
    for (const EvalRecord& r : made) work.finish(r.key, r);
  }
  for (const SubmittedAction& s : out)
    KBRL_ASSERT(records.count(s.key), "no record for an action of task {} (key {})", task.id, s.key);
  return out;
}

}  // namespace kbrl
