#pragma once
// Internal to serve/scheduler*.cpp: one GPU of the Scheduler (scheduler.h), its dispatcher thread and
// its Evaluators.
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "gpu_evaluators.h"
#include "scheduler.h"

namespace kbrl::serving {

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
