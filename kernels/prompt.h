#pragma once
// The prompts a language-model policy sends (docs/design.md, Policies): the task (operator, shapes,
// dtypes, the reference semantics in our words), the contract (what the harness owns, the allowed
// compile options, the scaffold or the candidate-file format), K worked examples of other tasks
// from kernels/known_good/, an optional system prompt with reasoning guidance (report 000), and for
// an SDPO teacher (report 003, 3.6) the execution feedback of a rollout and optionally a correct
// solution from its batch, never the rollout's own code. `kbrl prompt` prints exactly this.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <kbrl/enum_names.h>
#include <kernels/action.h>
#include <reference/task.h>

namespace kbrl {

enum class SystemPrompt { reasoning, none };
template <>
struct EnumNames<SystemPrompt> {
  static constexpr std::string_view what = "system prompt";
  static constexpr EnumEntry<SystemPrompt> entries[] = {{SystemPrompt::reasoning, "reasoning"},
                                                        {SystemPrompt::none, "none"}};
};
std::string_view to_string(SystemPrompt);
SystemPrompt parse_system_prompt(std::string_view);  // throws InputError naming the values

/// What a teacher prompt tells of a rollout: its execution feedback, never its code.
struct PromptFeedback {
  std::string outcome;      // e.g. "compile_error", "wrong_answer", "ok" (kbrl/outcome.h)
  std::string detail;       // the outcome's detail, as the record has it
  std::string compile_log;  // NVRTC's log; the prompt shows an excerpt
  std::optional<double> speedup;       // correctness-gated
  std::optional<double> runtime_ms;    // the candidate's median
  std::optional<double> reference_ms;  // the reference's median
};

struct PromptOptions {
  TextStyle style = TextStyle::body;
  int shots = 1;  // worked examples of other tasks, 0..kMaxPromptShots
  SystemPrompt system = SystemPrompt::reasoning;
  std::optional<PromptFeedback> feedback;    // SDPO teacher: the rollout's execution feedback
  std::optional<std::string> demonstration;  // SDPO teacher: a correct solution from the batch
  /// SDPO teacher: the instruction "Correctly solve the original question." after the sections above
  /// (report 003, 3.6, item 4): every teacher prompt has it, the prompt-only teacher nothing else.
  bool resolve = false;
};

inline constexpr int kMaxPromptShots = 4;
/// The feedback part shows at most this much of the compile log (lines, bytes), and of the
/// outcome's detail (bytes), each followed by a note of what was cut.
inline constexpr size_t kPromptLogLines = 40;
inline constexpr size_t kPromptLogBytes = 4096;
inline constexpr size_t kPromptDetailBytes = 1024;
/// The size budget of a body-style prompt with one example and the reasoning system part, for
/// every task (system + user, bytes; about 2,500 tokens): small models have 4k-8k contexts.
/// ctest/policies/test_prompt.cpp holds every task to it.
inline constexpr size_t kPromptOneShotBodyMaxBytes = 10000;
/// The prompt template's version; bumped whenever the text a prompt builds changes.
inline constexpr std::string_view kPromptTemplateVersion = "kbrl-prompt-1";

struct Prompt {
  /// The template version and the options that shape the text, e.g.
  /// "kbrl-prompt-1/body/shots=1/system=reasoning" (+ "/feedback", "/demonstration"). Every record
  /// and samples.csv row of a text action names it.
  std::string version;
  std::string system;  // empty for SystemPrompt::none
  std::string user;
  /// The prompt as one text, for a completions endpoint: the system part, a blank line, the user
  /// part (just the user part when there is no system part).
  std::string text() const;
};

/// The prompt for `task`. Worked examples are known-good kernels (kernels/kernel_catalog.h) of
/// other tasks than `task`, in the prompt's style (scaffold bodies for `body`, complete files for
/// `file`), shown at `task`'s scale: a deterministic choice taking the task's family first, then
/// related families, then the rest, each in catalog order. Throws InputError for shots outside
/// 0..kMaxPromptShots, and when the kernels directory cannot be read.
/// to_string(SystemPrompt) and parse_system_prompt are defined with it (kernels/prompt.cpp).
Prompt build_prompt(const TaskSpec& task, const PromptOptions& options = {});

/// The answer a model should give for `task`: the task's own known-good kernel
/// (kernels/kernel_catalog.h) in `style`, in one ```cuda block, as the worked examples show answers;
/// nullopt when the catalog has none of that task in that style. SFT's demonstrations.
std::optional<std::string> known_good_answer(const TaskSpec& task, TextStyle style);

}  // namespace kbrl
