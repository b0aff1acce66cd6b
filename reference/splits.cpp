#include "splits.h"

#include <algorithm>
#include <cstdint>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "task_registry.h"

namespace kbrl {
namespace {

const std::vector<int> kSubset1{4, 5, 12, 14, 15};
const std::vector<int> kSubset2{18, 28, 29, 30, 32};
constexpr size_t kEvalSize = 20;

// The eval split: both subsets, then tasks drawn by a seeded Fisher-Yates shuffle of the remaining
// ids (ascending) until there are 20.
std::vector<int> eval_ids() {
  std::vector<int> eval = kSubset1;
  eval.insert(eval.end(), kSubset2.begin(), kSubset2.end());
  std::vector<int> rest;
  for (int id : task_ids())
    if (std::find(eval.begin(), eval.end(), id) == eval.end()) rest.push_back(id);
  uint64_t state = kSplitSeed;
  shuffle(rest, state);
  for (size_t i = 0; eval.size() < kEvalSize && i < rest.size(); ++i) eval.push_back(rest[i]);
  std::sort(eval.begin(), eval.end());
  return eval;
}

}  // namespace

const std::vector<Split>& splits() {
  static const std::vector<Split> all = [] {
    const std::vector<int> eval = eval_ids();
    std::vector<int> train;
    for (int id : task_ids())
      if (!std::binary_search(eval.begin(), eval.end(), id)) train.push_back(id);
    return std::vector<Split>{
        {"train", "the 80 level-1 tasks that training may see", train},
        {"eval", "20 held-out tasks: subset1, subset2 and 10 drawn with kSplitSeed", eval},
        {"subset1", "the reports' subset 1 (KernelBench ids 4, 5, 12, 14, 15)", kSubset1},
        {"subset2", "the reports' subset 2 (KernelBench ids 18, 28, 29, 30, 32)", kSubset2},
        {"all", "all 100 level-1 tasks", task_ids()},
    };
  }();
  return all;
}

const Split& split(std::string_view name) {
  std::string names;
  for (const auto& s : splits()) {
    if (s.name == name) return s;
    names += names.empty() ? s.name : ", " + s.name;
  }
  throw InputError(fmt::format("unknown split '{}': expected one of {}", name, names));
}

}  // namespace kbrl
