// The passes of an update (micro_batches.h).
#include "micro_batches.h"

#include <algorithm>

#include <kbrl/error.h>

namespace kbrl::lm {
namespace {

/// Items in order of length, longest first (ties by index: deterministic).
void longest_first(std::vector<size_t>& items, const std::vector<size_t>& length) {
  std::stable_sort(items.begin(), items.end(), [&](size_t a, size_t b) { return length[a] > length[b]; });
}

/// Passes of `items` (sorted) of at most `size` rows, all sharing `prompt` whole.
void shared_passes(const std::vector<int>& prompt, const std::vector<size_t>& items, size_t size,
                   std::vector<MicroBatch>& out) {
  for (size_t start = 0; start < items.size(); start += size) {
    MicroBatch m;
    m.prompt = prompt;
    m.items.assign(items.begin() + static_cast<std::ptrdiff_t>(start),
                   items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), start + size)));
    m.tails.resize(m.items.size());
    out.push_back(std::move(m));
  }
}

}  // namespace

std::vector<MicroBatch> plan_micro_batches(const std::vector<std::vector<int>>& prompts,
                                           const std::vector<size_t>& prompt_of, const std::vector<size_t>& lengths,
                                           size_t size, bool pool) {
  KBRL_ASSERT(prompt_of.size() == lengths.size(), "{} items with prompts, {} with lengths", prompt_of.size(),
              lengths.size());
  KBRL_ASSERT(size >= 1, "a pass needs at least one row");
  for (const auto& p : prompts) KBRL_ASSERT(!p.empty(), "a prompt needs at least one token");
  std::vector<std::vector<size_t>> by_prompt(prompts.size());
  for (size_t i = 0; i < prompt_of.size(); ++i) {
    KBRL_ASSERT(prompt_of[i] < prompts.size(), "item {} has prompt {} of {}", i, prompt_of[i], prompts.size());
    by_prompt[prompt_of[i]].push_back(i);
  }
  std::vector<MicroBatch> out;
  std::vector<size_t> pooled;
  for (size_t g = 0; g < prompts.size(); ++g) {
    if (by_prompt[g].empty()) continue;
    if (!pool || by_prompt[g].size() >= kOwnPassItems || size == 1) {
      longest_first(by_prompt[g], lengths);
      shared_passes(prompts[g], by_prompt[g], size, out);
    } else {
      pooled.insert(pooled.end(), by_prompt[g].begin(), by_prompt[g].end());
    }
  }
  // A pooled row's length is its tail and its completion; the tail is about its prompt's length.
  std::vector<size_t> row_length(lengths.size(), 0);
  for (size_t i : pooled) row_length[i] = prompts[prompt_of[i]].size() + lengths[i];
  longest_first(pooled, row_length);
  for (size_t start = 0; start < pooled.size(); start += size) {
    const std::vector<size_t> part(pooled.begin() + static_cast<std::ptrdiff_t>(start),
                                   pooled.begin() + static_cast<std::ptrdiff_t>(std::min(pooled.size(), start + size)));
    // The longest prefix every prompt of the pass shares (a whole prompt at most: its rows' tails
    // are then empty, as in a prompt's own pass).
    const std::vector<int>& first = prompts[prompt_of[part[0]]];
    size_t common = first.size();
    for (size_t i : part) {
      const std::vector<int>& p = prompts[prompt_of[i]];
      common = static_cast<size_t>(std::mismatch(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(common),
                                                 p.begin(), p.end()).first - first.begin());
    }
    if (common == 0) {  // nothing shared (prompts of other templates): each prompt's own passes
      std::vector<std::vector<size_t>> own(prompts.size());
      for (size_t i : part) own[prompt_of[i]].push_back(i);
      for (size_t g = 0; g < prompts.size(); ++g)
        if (!own[g].empty()) shared_passes(prompts[g], own[g], size, out);
      continue;
    }
    MicroBatch m;
    m.prompt.assign(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(common));
    m.items = part;
    for (size_t i : part) {
      const std::vector<int>& p = prompts[prompt_of[i]];
      m.tails.emplace_back(p.begin() + static_cast<std::ptrdiff_t>(common), p.end());
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace kbrl::lm
