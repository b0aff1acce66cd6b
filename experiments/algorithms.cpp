#include "algorithms.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include <kbrl/error.h>
#include <kernels/prompt.h>
#include <reference/task_registry.h>

namespace kbrl {

std::vector<double> group_advantages(const std::vector<double>& rewards, bool normalize_std,
                                     double eps) {
  if (rewards.empty()) return {};
  // Equal rewards carry no signal: exact zeros (the mean of equal doubles can round, and a residue
  // of 1e-10 would still move the adapter through Adam's normalization).
  if (std::all_of(rewards.begin(), rewards.end(), [&](double r) { return r == rewards.front(); }))
    return std::vector<double>(rewards.size(), 0.0);
  const double n = static_cast<double>(rewards.size());
  const double mean = std::accumulate(rewards.begin(), rewards.end(), 0.0) / n;
  double var = 0;
  for (double r : rewards) var += (r - mean) * (r - mean);
  const double sd = std::sqrt(var / n);
  std::vector<double> out;
  for (double r : rewards) out.push_back(normalize_std ? (r - mean) / (sd + eps) : r - mean);
  return out;
}

std::vector<TrainItem> grpo_items(const TaskSpec& task, const std::vector<Rollout>& group,
                                  const std::vector<double>& advantages) {
  KBRL_CHECK_INPUT(group.size() == advantages.size(), "{} advantages for {} rollouts",
                   advantages.size(), group.size());
  std::vector<TrainItem> out;
  for (size_t i = 0; i < group.size(); ++i) {
    TrainItem it;
    it.task = task;
    it.tokens = group[i].sample.tokens;
    it.old_logprobs = group[i].sample.logprobs;
    it.advantages.assign(it.tokens.size(), advantages[i]);
    out.push_back(std::move(it));
  }
  return out;
}

std::vector<Rollout> judged_only(const std::vector<Rollout>& group) {
  std::vector<Rollout> out;
  std::copy_if(group.begin(), group.end(), std::back_inserter(out),
               [](const Rollout& r) { return r.outcome() != Outcome::harness_error; });
  return out;
}

std::vector<TrainItem> grpo_group_items(const TaskSpec& task, const std::vector<Rollout>& group,
                                        bool normalize_std) {
  const std::vector<Rollout> judged = judged_only(group);
  std::vector<double> rewards;
  for (const Rollout& r : judged) rewards.push_back(r.reward);
  return grpo_items(task, judged, group_advantages(rewards, normalize_std));
}

std::vector<TrainItem> sft_items(const TaskSpec& task, const std::vector<Sample>& samples) {
  std::vector<TrainItem> out;
  for (const Sample& s : samples) {
    TrainItem it;
    it.task = task;
    it.tokens = s.tokens;
    it.advantages.assign(s.tokens.size(), 1.0);
    out.push_back(std::move(it));
  }
  return out;
}

std::vector<TrainItem> known_good_items(const std::vector<int>& tasks, Scale scale, Policy& policy,
                                        TextStyle style, std::vector<int>* used) {
  std::vector<TrainItem> items;
  for (int id : tasks) {
    const TaskSpec task = task_spec(id, scale);
    const std::optional<std::string> answer = known_good_answer(task, style);
    if (!answer) continue;
    Sample s;
    s.task_id = id;
    s.kind = ActionKind::text;
    s.text = *answer;
    s.tokens = policy.text_tokens(s.text);
    const std::vector<TrainItem> more = sft_items(task, {s});
    items.insert(items.end(), more.begin(), more.end());
    if (used) used->push_back(id);
  }
  KBRL_CHECK_INPUT(!items.empty(),
                   "no known-good {}-style kernel for tasks {} (kernels/known_good/ has them for a few tasks)",
                   to_string(style), fmt::join(tasks, ","));
  return items;
}

std::string_view to_string(SdpoTeacher t) { return enum_name(t); }
SdpoTeacher parse_sdpo_teacher(std::string_view text) { return parse_enum<SdpoTeacher>(text); }

TeacherContext sdpo_context(const std::vector<Rollout>& group, size_t index, SdpoTeacher teacher) {
  KBRL_CHECK_INPUT(index < group.size(), "rollout {} of a group of {}", index, group.size());
  TeacherContext c;
  if (teacher == SdpoTeacher::prompt_only) return c;
  int best = -1;
  for (size_t j = 0; j < group.size(); ++j) {
    if (j == index || !group[j].correct()) continue;
    if (best < 0 || group[j].speedup() > group[static_cast<size_t>(best)].speedup()) best = static_cast<int>(j);
  }
  if (best >= 0) c.demonstration = group[static_cast<size_t>(best)].sample.tokens;
  c.feedback = TeacherContext::Feedback{group[index].compiled(), group[index].correct(), group[index].speedup()};
  return c;
}

std::vector<TrainItem> sdpo_items(TrainablePolicy& policy, const TaskSpec& task,
                                  const std::vector<Rollout>& group, SdpoTeacher teacher,
                                  double beta, double temperature, int64_t* teacher_tokens) {
  std::vector<TrainItem> out;
  for (size_t i = 0; i < group.size(); ++i) {
    const Sample& s = group[i].sample;
    const TeacherContext context = sdpo_context(group, i, teacher);
    const std::vector<double> student = policy.logprob(task, {s.tokens}, temperature).at(0);
    const std::vector<double> t = policy.teacher_logprob(task, {s.tokens}, context, temperature).at(0);
    TrainItem it;
    it.task = task;
    it.tokens = s.tokens;
    it.old_logprobs = student;
    for (size_t k = 0; k < s.tokens.size(); ++k) it.advantages.push_back(beta * (t[k] - student[k]));
    if (teacher_tokens) *teacher_tokens += static_cast<int64_t>(s.tokens.size());
    out.push_back(std::move(it));
  }
  return out;
}

BoaDecision best_of_adaptation(const std::vector<double>& scores, int patience) {
  KBRL_CHECK_INPUT(!scores.empty(), "best_of_adaptation: no steps");
  KBRL_CHECK_INPUT(patience >= 0, "patience {} must be >= 0", patience);
  BoaDecision d;
  d.best_step = 0;
  d.best_score = scores[0];
  int regressions = 0;
  for (size_t s = 1; s < scores.size(); ++s) {
    if (scores[s] > d.best_score) {
      d.best_score = scores[s];
      d.best_step = static_cast<int>(s);
    }
    regressions = scores[s] < scores[s - 1] ? regressions + 1 : 0;
    if (patience > 0 && regressions >= patience) {
      d.stop_step = static_cast<int>(s);
      break;
    }
  }
  return d;
}

}  // namespace kbrl
