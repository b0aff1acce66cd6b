#pragma once
// Actions and the one place they become Candidates (docs/design.md, the way data flows). An action is
// either the knob configuration of a task's generator (the schedule policy and the baselines) or a
// language model's text. `realize` turns either into a Candidate; the experiment environment,
// `kbrl sweep` and `kbrl replay` all call it, and nothing else builds candidates from actions.
#include <optional>
#include <string>
#include <string_view>

#include <kbrl/enum_names.h>
#include <kbrl/outcome.h>
#include <reference/task.h>

#include "candidate.h"
#include "knob_space.h"

namespace kbrl {

enum class ActionKind { knobs, text };
template <>
struct EnumNames<ActionKind> {
  static constexpr std::string_view what = "action kind";
  static constexpr EnumEntry<ActionKind> entries[] = {{ActionKind::knobs, "knobs"},
                                                      {ActionKind::text, "text"}};
};
std::string_view to_string(ActionKind);
ActionKind parse_action_kind(std::string_view);  // throws InputError naming the values

struct Action {
  ActionKind kind = ActionKind::knobs;
  Config config;     // knobs: a legal configuration of the task's generator space
  std::string text;  // text: the model's raw output
};

/// The code in a model's text: the body of the last non-empty fenced code block (``` or ~~~, with
/// or without a language tag after the fence; a final block whose closing fence is missing runs to
/// the end of the text), else the whole text when there is no fence, else "" (only empty blocks).
/// CRLF and lone CR become LF; tabs are kept; leading and trailing blank lines are dropped.
std::string extract_code(std::string_view text);

/// How a text action's code was read.
enum class TextStyle {
  body,  // the BODY of the scaffold's forward kernel, optionally after helper device functions
  file,  // a complete candidate file with `// kbrl:` plan lines (kernels/candidate_file.h)
};
template <>
struct EnumNames<TextStyle> {
  static constexpr std::string_view what = "prompt style";
  static constexpr EnumEntry<TextStyle> entries[] = {{TextStyle::body, "body"},
                                                     {TextStyle::file, "file"}};
};
std::string_view to_string(TextStyle);
TextStyle parse_text_style(std::string_view);  // throws InputError naming the values

/// What realize() made of an action.
struct Realized {
  std::string raw;                     // the action as a record keeps it: the text, or "k=v,..."
  std::optional<Candidate> candidate;  // absent when the text yields no candidate
  std::string code;                    // text: the extracted code; knobs: empty
  std::optional<TextStyle> style;      // text: how the code was read
  std::string format_error;            // why there is no candidate (the record's detail)
  Outcome failure = Outcome::format_error;  // the record's outcome without a candidate: format_error, or
                                            // unsupported_format for a KernelBench answer kbrl cannot read
};

/// The largest text realize() reads (bytes); longer text is a format error.
inline constexpr size_t kMaxActionTextBytes = 256 * 1024;

/// The one function that turns an action into a Candidate.
/// - knobs: the task's generator (kernels/generator.h). Throws InputError for a configuration
///   outside the task's space or a task no generator covers: a knob action comes from our own code.
/// - text: extract_code(), then a candidate file when the code has a `// kbrl:` line, else the body
///   of the scaffold's kernel: top-level helper definitions (`__device__` functions, structs,
///   `#define`s, constants) before the first statement go before the kernel, the rest is the body;
///   a complete `kbrl_forward` definition in the code is taken apart into helpers and body. Text
///   that yields no candidate (no code, too long, unbalanced braces, a bad plan line, `main()`, a
///   `__global__` kernel other than kbrl_forward in body style) never throws: `format_error` says
///   why. `#include` lines stay in the code: NVRTC decides (allowed headers only).
/// - text in KernelBench's format (Python `class ModelNew` with load_inline): imported
///   (kernels/kernelbench_import.h) into a candidate file, which is then read as above; `code` is
///   that file. An answer the importer cannot read has `failure` unsupported_format and the reason.
Realized realize(const TaskSpec& task, const Action& action);

}  // namespace kbrl
