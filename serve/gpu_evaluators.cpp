#include "gpu_evaluators.h"

#include <algorithm>

namespace kbrl::serving {

Evaluator& GpuEvaluators::get(const PreparedItem& item, RolloutLog* log, size_t keep) {
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->first != item.settings_id) continue;
    open_.splice(open_.begin(), open_, it);
    return *open_.front().second;
  }
  while (open_.size() >= keep) {
    retired_restarts_ += std::max<int64_t>(0, open_.back().second->worker_starts() - 1);
    open_.pop_back();
  }
  EvalSettings settings = item.settings;
  settings.device = device_;
  auto evaluator = std::make_unique<Evaluator>(settings);
  evaluator->attach_log(log);
  open_.emplace_front(item.settings_id, std::move(evaluator));
  return *open_.front().second;
}

int64_t GpuEvaluators::restarts() const {
  int64_t n = retired_restarts_;
  for (const auto& [id, e] : open_) n += std::max<int64_t>(0, e->worker_starts() - 1);
  return n;
}

}  // namespace kbrl::serving
