#pragma once
// GET /metrics: the scheduler's counters, gauges and queue-wait histogram, each GPU's worker state,
// the HTTP answers by status and their latency, and the build, as Prometheus text.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "histogram.h"
#include "scheduler.h"

namespace kbrl::serving {

/// What the HTTP front end counts.
struct HttpMetrics {
  std::map<int, int64_t> requests;  // answered, by status
  Histogram request_seconds;        // from a request's last byte to its answer's first
};

/// `commit`: the build's (kbrl_build_info), "" when the program does not know it.
std::string prometheus(const SchedulerMetrics& metrics, const HttpMetrics& http, std::string_view commit);

}  // namespace kbrl::serving
