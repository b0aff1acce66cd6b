#pragma once
// A Prometheus-style histogram of seconds (kbrl serve's request latency and queue wait): counts per
// bucket of fixed upper bounds, the sum and the count. Not thread-safe: its owner locks.
#include <cstdint>
#include <vector>

namespace kbrl::serving {

struct Histogram {
  /// Upper bounds in seconds, ascending: from 5 ms (a health check) to 1 hour (the longest
  /// synchronous evaluate a server waits for by default).
  static std::vector<double> seconds_bounds() {
    return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600};
  }

  std::vector<double> bounds = seconds_bounds();
  std::vector<int64_t> counts = std::vector<int64_t>(bounds.size() + 1, 0);  // the last: above every bound
  double sum = 0;
  int64_t count = 0;

  void observe(double value) {
    size_t i = 0;
    while (i < bounds.size() && value > bounds[i]) ++i;
    ++counts[i];
    sum += value;
    ++count;
  }
};

}  // namespace kbrl::serving
