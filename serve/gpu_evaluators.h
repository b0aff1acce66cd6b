#pragma once
// One GPU's Evaluators in `kbrl serve`: one per distinct settings (PreparedItem::settings_id), each
// with its worker process on that GPU, the least recently used closed when more are asked for than
// the server keeps (SchedulerOptions::evaluators_per_gpu). Owned by the GPU's dispatcher thread.
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>

#include <harness/evaluator.h>
#include <harness/record/rollout_log.h>

#include "api.h"

namespace kbrl::serving {

class GpuEvaluators {
 public:
  explicit GpuEvaluators(int device) : device_(device) {}

  /// The Evaluator for `item`'s settings on this GPU (made, with `log` attached, if none is open),
  /// keeping at most `keep` open.
  Evaluator& get(const PreparedItem& item, RolloutLog* log, size_t keep);
  /// Worker processes started again after a crash or timeout, over every Evaluator this GPU had.
  int64_t restarts() const;

 private:
  int device_;
  std::list<std::pair<std::string, std::unique_ptr<Evaluator>>> open_;  // most recent first
  int64_t retired_restarts_ = 0;  // of Evaluators closed
};

}  // namespace kbrl::serving
