#include "prometheus.h"

#include <fmt/format.h>

namespace kbrl::serving {

std::string prometheus(const SchedulerMetrics& m, const std::map<int, int64_t>& requests) {
  struct Single {
    const char* name;
    const char* type;
    const char* help;
    double value;
  };
  const Single singles[] = {
      {"kbrl_queue_items", "gauge", "Items waiting for a GPU.", static_cast<double>(m.queued)},
      {"kbrl_running_items", "gauge", "Items a GPU dispatcher holds.", static_cast<double>(m.running)},
      {"kbrl_gpus", "gauge", "GPUs this server evaluates on.", static_cast<double>(m.gpus)},
      {"kbrl_deduplicated_total", "counter", "Items answered by another item's evaluation.",
       static_cast<double>(m.deduplicated)},
      {"kbrl_compile_seconds_total", "counter", "NVRTC compile time of the evaluated candidates.", m.compile_seconds},
      {"kbrl_gpu_seconds_total", "counter", "Time the GPU dispatchers spent evaluating (compile, check, time).",
       m.gpu_seconds},
      {"kbrl_kernel_seconds_total", "counter", "Timed runs of candidates and their paired references.",
       m.kernel_seconds},
      {"kbrl_worker_restarts_total", "counter", "GPU worker processes started again after a crash or timeout.",
       static_cast<double>(m.worker_restarts)},
      {"kbrl_jobs_failed_total", "counter", "Groups of items failed by an infrastructure fault.",
       static_cast<double>(m.jobs_failed)},
      {"kbrl_kept_job_bytes", "gauge", "Records of finished async jobs kept for polling, in bytes.",
       static_cast<double>(m.kept_job_bytes)},
      {"kbrl_recent_record_bytes", "gauge", "Records kept to answer repeated items, in bytes.",
       static_cast<double>(m.recent_record_bytes)},
  };
  std::string out;
  auto header = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  for (const Single& s : singles) {
    header(s.name, s.type, s.help);
    out += fmt::format("{} {}\n", s.name, s.value);
  }
  header("kbrl_evaluations_total", "counter", "Records answered, by outcome.");
  for (const auto& [outcome, n] : m.evaluations) out += fmt::format("kbrl_evaluations_total{{outcome=\"{}\"}} {}\n", outcome, n);
  header("kbrl_http_requests_total", "counter", "HTTP requests answered, by status.");
  for (const auto& [status, n] : requests) out += fmt::format("kbrl_http_requests_total{{code=\"{}\"}} {}\n", status, n);
  return out;
}

}  // namespace kbrl::serving
