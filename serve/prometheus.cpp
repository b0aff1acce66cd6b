#include "prometheus.h"

#include <fmt/format.h>

#include <harness/record/eval_record.h>

namespace kbrl::serving {

namespace {

/// Cumulative buckets, the sum and the count, as Prometheus' text format has them.
void histogram(std::string& out, std::string_view name, const Histogram& h) {
  int64_t below = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    below += h.counts[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], below);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, h.count, name, h.sum, name, h.count);
}

}  // namespace

std::string prometheus(const SchedulerMetrics& m, const HttpMetrics& http, std::string_view commit) {
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
      {"kbrl_requeued_total", "counter",
       "Items a GPU gave back to the queue: not started while another GPU waited, or its worker lost.",
       static_cast<double>(m.requeued)},
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
  for (const auto& [status, n] : http.requests)
    out += fmt::format("kbrl_http_requests_total{{code=\"{}\"}} {}\n", status, n);
  header("kbrl_http_request_seconds", "histogram", "Time from a request to its answer (a synchronous evaluate waits).");
  histogram(out, "kbrl_http_request_seconds", http.request_seconds);
  header("kbrl_queue_wait_seconds", "histogram", "Time an item waited in the queue before a GPU dispatcher took it.");
  histogram(out, "kbrl_queue_wait_seconds", m.queue_wait);
  header("kbrl_gpu_ready", "gauge", "1 when the GPU's worker is up (readiness), by device.");
  for (const GpuState& g : m.per_gpu) out += fmt::format("kbrl_gpu_ready{{device=\"{}\"}} {}\n", g.device, g.ready ? 1 : 0);
  header("kbrl_gpu_worker_restarts_total", "counter", "Worker processes started again after a crash or timeout, by device.");
  for (const GpuState& g : m.per_gpu)
    out += fmt::format("kbrl_gpu_worker_restarts_total{{device=\"{}\"}} {}\n", g.device, g.restarts);
  header("kbrl_build_info", "gauge", "The kbrl version and commit this server was built from (always 1).");
  out += fmt::format("kbrl_build_info{{version=\"{}\",commit=\"{}\"}} 1\n", kbrl_version(),
                     commit.empty() ? "unknown" : commit);
  return out;
}

}  // namespace kbrl::serving
