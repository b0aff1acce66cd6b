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
    const ActionSubmission& s = submissions[i];
    Realized real = realize(task, s.action);
    const ActionInfo info{s.action.kind, real.code, s.token_count, s.prompt_version};
    SubmittedAction& done = out.emplace_back();
    done.code = real.code;
    if (!real.candidate) {
      done.key = evaluator.format_error_key(task.id, real.raw);
      if (work.claim(done.key, i) == Work::Claim::leads) {
        work.finish(done.key, evaluator.format_error(task.id, real.raw, info, real.format_error, policy, real.failure));
        done.evaluated_now = true;
      }
      continue;
    }
    KeyedCandidate keyed = evaluator.keyed(std::move(*real.candidate), observation);  // hashed once, here
    done.key = keyed.key;
    if (work.claim(done.key, i) == Work::Claim::leads) {
      done.evaluated_now = true;
      todo.push_back(std::move(keyed));
      todo_actions.emplace_back(std::move(real.raw), info);
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
