#pragma once
// The learning algorithms' batch builders (docs/design.md, Algorithms), independent of libtorch: they
// turn evaluated rollouts into TrainItems (tokens, old log-probs, per-token advantages) that a
// TrainablePolicy's update() consumes.
#include <cstdint>
#include <vector>

#include <kbrl/enum_names.h>
#include <policies/policy.h>
#include <kernels/prompt.h>

#include "environment.h"

namespace kbrl {

/// GRPO's group-relative advantages (Shao et al. 2024): r_i - mean(r), divided by the group's
/// standard deviation (population, + eps) when `normalize_std` (Dr. GRPO leaves it out). A group
/// of equal rewards gets zero advantages.
std::vector<double> group_advantages(const std::vector<double>& rewards, bool normalize_std,
                                     double eps = 1e-6);

/// One group's items: every token of rollout i gets advantage[i]; old log-probs are the
/// sampling log-probs.
std::vector<TrainItem> grpo_items(const TaskSpec& task, const std::vector<Rollout>& group,
                                  const std::vector<double>& advantages);

/// The rollouts of a group that the harness judged: without those whose outcome is harness_error
/// (the GPU out of memory for the harness, a worker's handler fault). An infrastructure failure
/// says nothing about the sample, so no update learns from it; the step's metrics still count it.
std::vector<Rollout> judged_only(const std::vector<Rollout>& group);

/// GRPO's items for one group: group_advantages over the judged rollouts' rewards (judged_only),
/// then grpo_items of those rollouts; none when no rollout was judged.
std::vector<TrainItem> grpo_group_items(const TaskSpec& task, const std::vector<Rollout>& group,
                                        bool normalize_std);

/// SFT's items: advantage 1 on every token (with Objective::likelihood, the loss is the mean
/// negative log-likelihood).
std::vector<TrainItem> sft_items(const TaskSpec& task, const std::vector<Sample>& samples);

/// A language model's demonstrations: each task's known-good kernel (kernels/known_good/) as the
/// answer text in `style`, tokenized by the policy; tasks without one are skipped (their ids not
/// added to `used`). InputError when none of `tasks` has one.
std::vector<TrainItem> known_good_items(const std::vector<int>& tasks, Scale scale, Policy& policy,
                                        TextStyle style, std::vector<int>* used = nullptr);

enum class SdpoTeacher {
  feedback,     // the demonstration (a correct sample of the batch) and the rollout's execution feedback
  prompt_only,  // neither: the prompt and the teacher's instruction only (report 003's unconditional
                // teacher, 101% of the student's tokens); the schedule policy's equals its student
};
template <>
struct EnumNames<SdpoTeacher> {
  static constexpr std::string_view what = "SDPO teacher";
  static constexpr EnumEntry<SdpoTeacher> entries[] = {{SdpoTeacher::feedback, "feedback"},
                                                       {SdpoTeacher::prompt_only, "prompt_only"}};
};
std::string_view to_string(SdpoTeacher);
SdpoTeacher parse_sdpo_teacher(std::string_view);  // throws InputError

/// The teacher context of rollout `index` of a group (feedback teacher; the prompt-only teacher's is
/// empty): the demonstration is the fastest correct rollout of the group other than this one (none
/// when there is no such rollout), and this rollout's compile status, correctness and speedup.
TeacherContext sdpo_context(const std::vector<Rollout>& group, size_t index, SdpoTeacher teacher);

/// SDPO's items (the surprisal report, 3.6): A_t = beta * (log p_teacher(x_t | context) -
/// log p_student(x_t | prompt)), both at `temperature`; old log-probs are the student's. Adds the
/// teacher's scored tokens to *teacher_tokens when given.
std::vector<TrainItem> sdpo_items(TrainablePolicy& policy, const TaskSpec& task,
                                  const std::vector<Rollout>& group, SdpoTeacher teacher,
                                  double beta, double temperature, int64_t* teacher_tokens = nullptr);

/// Best-of-Adaptation over a trajectory of per-step scores (the surprisal report, 3.5): the step
/// with the highest score (the earliest on ties), and where early stopping with `patience` stops:
/// after `patience` consecutive regressions (a step scoring below the one before it). patience 0
/// never stops early.
struct BoaDecision {
  int best_step = 0;
  double best_score = 0.0;
  int stop_step = -1;  // the step after which training stops; -1 when it never does
};
BoaDecision best_of_adaptation(const std::vector<double>& scores, int patience);

}  // namespace kbrl
