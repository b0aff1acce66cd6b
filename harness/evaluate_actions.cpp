#include "evaluate_actions.h"

#include <set>
#include <utility>

#include <kbrl/error.h>

namespace kbrl {

std::vector<SubmittedAction> evaluate_actions(Evaluator& evaluator, const TaskSpec& task,
                                              const std::vector<ActionSubmission>& submissions,
                                              const std::string& policy, const std::string& observation,
                                              std::map<std::string, EvalRecord>& records) {
  std::vector<SubmittedAction> out;
  std::vector<KeyedCandidate> todo;
  std::vector<std::pair<std::string, ActionInfo>> todo_actions;  // each todo's raw action and info
  std::set<std::string> queued;
  for (const ActionSubmission& s : submissions) {
    Realized real = realize(task, s.action);
    const ActionInfo info{s.action.kind, real.code, s.token_count, s.prompt_version};
    SubmittedAction& done = out.emplace_back();
    done.code = real.code;
    if (!real.candidate) {
      done.key = evaluator.format_error_key(task.id, real.raw);
      if (!records.count(done.key)) {
        records[done.key] = evaluator.format_error(task.id, real.raw, info, real.format_error, policy, real.failure);
        done.evaluated_now = true;
      }
      continue;
    }
    KeyedCandidate keyed = evaluator.keyed(std::move(*real.candidate), observation);  // hashed once, here
    done.key = keyed.key;
    if (!records.count(done.key) && queued.insert(done.key).second) {
      done.evaluated_now = true;
      todo.push_back(std::move(keyed));
      todo_actions.emplace_back(std::move(real.raw), info);
    }
  }
  if (!todo.empty()) {
    std::vector<EvalRecord> made = evaluator.evaluate_all(todo, policy, todo_actions);
    KBRL_ASSERT(made.size() == todo.size(), "{} records for {} candidates", made.size(), todo.size());
    for (EvalRecord& r : made) records[r.key] = std::move(r);
  }
  for (const SubmittedAction& s : out)
    KBRL_ASSERT(records.count(s.key), "no record for an action of task {} (key {})", task.id, s.key);
  return out;
}

}  // namespace kbrl
