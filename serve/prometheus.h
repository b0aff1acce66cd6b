#pragma once
// GET /metrics: the scheduler's counters and the HTTP answers by status, as Prometheus text.
#include <cstdint>
#include <map>
#include <string>

#include "scheduler.h"

namespace kbrl::serving {

std::string prometheus(const SchedulerMetrics& metrics, const std::map<int, int64_t>& requests);

}  // namespace kbrl::serving
