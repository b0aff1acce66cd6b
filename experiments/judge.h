#pragma once
// The GRPO report's LLM-as-a-judge (its 3.5): a critic scores each candidate kernel on correctness,
// compilability and speed, three numbers in [0, 1]; their mean J is added to the kernel's reward
// with weight lambda (the report's 0.5): r' = r + lambda * J. It densifies a reward that is zero
// while nothing compiles. Two judges:
// - `endpoint:<url>[,model=NAME,...]`: a language model behind an OpenAI-compatible server (the
//   endpoint policy's spec keys: model, key_env, timeout, retries, concurrency (requests in flight at
//   once, one per candidate), max_tokens, ...),
//   asked the report's question (the task and the candidate's source; JSON with the three floats
//   and a short reasoning) at temperature 0 with a JSON schema as the response format (llama.cpp
//   and vLLM constrain decoding to it; OpenAI's structured outputs). An answer that is not that
//   JSON scores 0 and is counted as a failure (the report's code does the same); a server that
//   cannot be reached is an error.
// - `rules`: a deterministic judge for offline runs that reads the candidate's CUDA source (after
//   realize(): a knob configuration's generated file, a model's extracted code) and checks, each
//   check worth an equal share of its score:
//     compilability: delimiters ({}, (), []) balance outside comments and strings; a __global__
//                    function is defined; no host-library code NVRTC cannot compile (std::, torch,
//                    at::, pybind);
//     correctness:   the thread's index comes from blockIdx and threadIdx; a bound guards it (a
//                    comparison with < in an if or while, or in a for's condition); an indexed
//                    store writes an output;
//     speed:         vectorized memory access (float2/float4/half2/int4 or __ldg); on-chip reuse
//                    (__shared__ or warp shuffles); unrolled or grid-stride loops (#pragma unroll,
//                    or a stride of gridDim.x * blockDim.x); __restrict__ pointers.
//   It judges what the code looks like, never whether it runs: a proxy, as the report's is.
// A sample that realizes to no candidate (a format error) scores 0 from both.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <experiments/csv_table.h>
#include <experiments/environment.h>
#include <reference/task.h>

namespace kbrl {

struct JudgeScores {
  double correctness = 0, compilability = 0, speed = 0;
  bool ok = false;    // false: nothing judged (no candidate) or the judge's answer was unusable
  std::string error;  // why not ok
  /// J, the report's overall score: the mean of the three.
  double mean() const { return (correctness + compilability + speed) / 3.0; }
};

class Judge {
 public:
  virtual ~Judge() = default;
  virtual std::string name() const = 0;
  /// Scores of each candidate source of one task, in order ("" = no candidate: 0, not ok).
  virtual std::vector<JudgeScores> score(const TaskSpec& task, const std::vector<std::string>& sources) = 0;
};

/// The rules judge's scores of one source (see above).
JudgeScores rules_judge_scores(std::string_view source);

/// The question the endpoint judge asks about `source` for `task` (the report's prompt, with
/// kbrl's task description in place of the PyTorch module).
std::string judge_prompt(const TaskSpec& task, std::string_view source);

/// Reads a judge's answer: a JSON object (alone, or the first {...} in the text) with numbers
/// correctness, compilability and speed, each clamped to [0, 1]. Not ok (with the reason) otherwise.
JudgeScores parse_judge_answer(std::string_view answer);

/// `rules` or `endpoint:<url>[,key=value...]`; InputError naming the forms otherwise.
std::unique_ptr<Judge> make_judge(std::string_view spec);

/// An environment whose rewards carry the judge's bonus: each rollout's reward plus weight * J of
/// its candidate. Every judged rollout is a row of `scores_csv` when given (schemas::judge_scores()).
class JudgedEnvironment final : public Environment {
 public:
  JudgedEnvironment(Environment& inner, std::unique_ptr<Judge> judge, double weight, CsvTable* scores_csv = nullptr);
  std::string name() const override;
  std::vector<Rollout> evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                const std::string& policy) override;
  double evaluator_seconds() const override { return inner_.evaluator_seconds(); }
  void set_observation(const std::string& id) override { inner_.set_observation(id); }
  /// Answers the judge could not use so far (scored 0).
  int64_t failures() const { return failures_; }

 private:
  Environment& inner_;
  std::unique_ptr<Judge> judge_;
  double weight_;
  CsvTable* scores_csv_;
  int64_t failures_ = 0;
};

}  // namespace kbrl
