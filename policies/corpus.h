#pragma once
// The generators' kernels written as a language model's answers (docs/design.md, Policies): an SFT
// corpus for teaching a model to write kernels. For each task, N configurations drawn from its
// generator's knob space (the expert's first, then distinct safe ones at random), each rendered as
// the answer a file-style prompt asks for: the candidate file with its `// kbrl:` plan lines in one
// ```cuda block, without the generator's own comment header (which names the generator and its
// knobs, things a prompt never gives). `kbrl corpus` writes it as JSON lines; `kbrl sft --corpus`
// reads it. A task's split travels with each line: train lines are training answers, eval lines
// only held-out data (their NLL is the loss curve's evaluation loss).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <kernels/knob_space.h>
#include <reference/task.h>

#include <kernels/prompt.h>

namespace kbrl {

/// The corpus format's version, in every line.
inline constexpr std::string_view kCorpusVersion = "kbrl-corpus-1";

struct CorpusEntry {
  int task_id = 0;
  std::string task;    // the task's name
  std::string family;  // its operator family
  std::string split;   // "train" or "eval" (the fixed split of reference/splits.h)
  Scale scale = Scale::kernelbench;
  std::string config;  // the generator configuration, "k=v,..."
  bool expert = false; // the generator's expert configuration
  Prompt prompt;       // the prompt the answer answers (its version names style, shots, system)
  std::string answer;  // the assistant's reply: one ```cuda block holding the candidate file
  std::optional<int> prompt_tokens, answer_tokens;  // under the tokenizer the corpus was written with
};

/// The configurations a corpus takes for `task`: the expert's first, then up to n - 1 distinct
/// others drawn uniformly (seeded) from the legal configurations whose precision, fast_math and
/// tail knobs keep the expert's values (no unsafe value: every one is a correct kernel). Fewer than
/// n when the space has fewer. Throws InputError for a task no generator covers or n < 1.
std::vector<Config> corpus_configurations(const TaskSpec& task, int n, uint64_t seed);

/// The generator's candidate for `config` as a file-style answer (see above).
std::string generator_answer(const TaskSpec& task, const Config& config);

/// The split a task belongs to: "train" or "eval".
std::string split_of(int task_id);

/// One corpus line as JSON (an OpenAI-style "messages" list beside kbrl's fields, so any trainer
/// reads it as a chat SFT dataset), and back. read_corpus throws InputError naming the file and line
/// of anything malformed, of another corpus version, or of an unknown task.
std::string corpus_line(const CorpusEntry& entry);
std::vector<CorpusEntry> read_corpus(const std::filesystem::path& file);

}  // namespace kbrl
