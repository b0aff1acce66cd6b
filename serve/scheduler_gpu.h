#pragma once
// Internal to serve/scheduler*.cpp: one GPU of the Scheduler (scheduler.h), its dispatcher thread and
// its Evaluators.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "scheduler.h"

namespace kbrl::serving {

/// One GPU's Evaluators: one per distinct settings (PreparedItem::settings_id), each with its worker
/// process on that GPU, the least recently used closed when more are asked for than the server keeps
/// (SchedulerOptions::evaluators_per_gpu). Owned by the GPU's dispatcher thread.
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

struct Scheduler::Gpu {
  explicit Gpu(int index) : device(index), evaluators(index) {}
  int device = 0;
  std::thread thread;
  GpuEvaluators evaluators;  // the dispatcher's own
  std::atomic<int64_t> restart_count{0};  // evaluators.restarts(), published by the dispatcher for /metrics
  std::string state = "starting", state_detail;  // readiness (GpuState); the scheduler's mutex_ guards them
  std::chrono::steady_clock::time_point down_until;  // while down: no items before then while another GPU is not down
};

}  // namespace kbrl::serving
