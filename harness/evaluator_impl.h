#pragma once
// The evaluator's private state (evaluator.h's Evaluator::Impl), shared by evaluator.cpp (set-up,
// keys, the batches) and evaluate_one.cpp (one candidate through the stages). Not for other callers.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <harness/compile/compile_cache.h>
#include <harness/compile/compile.h>
#include <harness/worker/worker.h>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include "evaluator.h"

namespace kbrl {

struct Evaluator::Impl {
  std::unique_ptr<CompileCache> cache;
  std::unique_ptr<CompilePool> pool;
  CompileOptions compile_options;
  bool compile_ready = false;
  std::unique_ptr<Worker> worker;
  std::optional<DeviceInfo> device;
  std::optional<DevicePeaks> peaks;
  uint64_t secret = 0;
  std::map<int, RuntimeStats> reference;  // by task id, at the settings' scale

  /// Sends one request; a failed call is returned as is (the caller maps it to an outcome).
  CallResult call(const nlohmann::json& request, double timeout_seconds) {
    return worker->call(request, std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  }

  /// A request the harness needs (info, peaks): any failure is a harness fault.
  nlohmann::json call_or_throw(const nlohmann::json& request, double timeout_seconds) {
    CallResult r = call(request, timeout_seconds);
    if (r.status != CallStatus::ok)
      throw Error(fmt::format("GPU worker request '{}' failed ({}): {}", request.at("op").get<std::string>(),
                              to_string(r.status),
                              r.status == CallStatus::handler_error ? r.reply.dump() : r.detail));
    return r.reply;
  }
};


}  // namespace kbrl
