#pragma once
// Parametric kernel generators, one per operator family (docs/design.md, Policies): a generator maps a
// task and a configuration of its knob space to a Candidate, through the same contract an LLM's
// action uses. The schedule policy samples configurations token by token (knob_space.h).
#include <string>
#include <string_view>
#include <vector>

#include <reference/task.h>

#include "candidate.h"
#include "knob_space.h"

namespace kbrl {

class Generator {
 public:
  virtual ~Generator() = default;

  /// The family's name, e.g. "elementwise".
  virtual std::string_view name() const = 0;
  virtual bool covers(int task_id) const = 0;
  /// The task's knob space. It depends on the task's id only, never on its scale, so a
  /// configuration (and its tokens) means the same at every scale. Throws InputError for a task
  /// this generator does not cover.
  virtual KnobSpace space(const TaskSpec& task) const = 0;
  /// The candidate of a legal configuration at the task's scale. Throws InputError for a task not
  /// covered or an illegal configuration.
  virtual Candidate generate(const TaskSpec& task, const Config& config) const = 0;
  /// The hand-chosen configuration for the task: what a kernel engineer would pick first, never an
  /// unsafe value (no fast-math, reduced precision or dropped tail).
  virtual Config expert(const TaskSpec& task) const = 0;
};

/// Every registered generator.
const std::vector<const Generator*>& generators();

/// The generator that covers `task_id`; throws InputError naming the task (and the covered ids)
/// when none does yet.
const Generator& generator_for(int task_id);

/// The ids covered by some generator, ascending.
std::vector<int> covered_tasks();

/// A candidate as a candidate file (kernels/candidate_file.h): `header` lines as `//` comments,
/// the `// kbrl:` plan lines (launches with literal numbers, scratch, options), then the source.
/// parse_candidate_file of the result gives back the same launches, scratch and options.
std::string candidate_file_text(const Candidate& candidate, const TaskSpec& task,
                                const std::vector<std::string>& header = {});

}  // namespace kbrl
