#pragma once
// The fixed train/eval split of level 1 and the reports' named task subsets.
#include <string>
#include <string_view>
#include <vector>

namespace kbrl {

/// A named list of task ids, ascending.
struct Split {
  std::string name;
  std::string description;
  std::vector<int> ids;
};

/// The seed of the draw that completes the eval split (see reference/README.md).
inline constexpr unsigned long long kSplitSeed = 20260301ULL;

/// "train" (80 tasks), "eval" (20), "subset1" {4,5,12,14,15}, "subset2" {18,28,29,30,32}, "all" (100).
const std::vector<Split>& splits();

/// The split by name; throws InputError listing the names.
const Split& split(std::string_view name);

}  // namespace kbrl
