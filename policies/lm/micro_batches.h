#pragma once
// Internal to kbrl::lm (no libtorch): how an update's items become forward/backward passes. A pass
// computes one prompt once (batch 1) and shares its keys and values with every row; each row is the
// rest of its item's own prompt (its tail: scored, never trained on) and then the item's completion.
//
// A prompt with many completions (a GRPO group) gets passes of its own with the whole prompt shared
// and empty tails. Prompts with few completions (an SFT batch drawn over many tasks holds one or two
// answers per task) are pooled: their items share passes of up to `size` rows, the prompts' common
// prefix (a chat template's system turn) shared and each prompt's rest in its rows' tails. Without
// pooling, such a batch ran as many passes of one or two rows: 16 answers of 12 tasks took 12 passes
// instead of one, which left a GPU mostly idle.
#include <cstddef>
#include <vector>

namespace kbrl::lm {

struct MicroBatch {
  std::vector<int> prompt;               // computed once, shared by every row (never empty)
  std::vector<size_t> items;             // the rows' items (indices into the update's batch)
  std::vector<std::vector<int>> tails;   // per row: its prompt after `prompt` (empty when shared whole)
};

/// A prompt with at least this many items keeps its passes to itself.
inline constexpr size_t kOwnPassItems = 4;

/// The passes of a batch: `prompts[g]` the distinct prompts (none empty), item i's prompt
/// `prompts[prompt_of[i]]` and its completion `lengths[i]` tokens; at most `size` rows a pass, rows
/// of similar length together (longest first), every item in exactly one pass. Without `pool`, every
/// prompt gets passes of its own.
std::vector<MicroBatch> plan_micro_batches(const std::vector<std::vector<int>>& prompts,
                                           const std::vector<size_t>& prompt_of, const std::vector<size_t>& lengths,
                                           size_t size, bool pool = true);

}  // namespace kbrl::lm
