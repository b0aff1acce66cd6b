#pragma once
// A kbrl serve inside this process: the scheduler and HTTP server on a free loopback port, run on a
// thread of their own, drained when destroyed. kbrl-experiment --gpus evaluates through one (every
// GPU of the host behind one queue); the serve tests and benchmarks start theirs with it.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "scheduler.h"
#include "server.h"

namespace kbrl::serving {

/// "all" (every visible GPU; {0} when compiling only) or device indices like "0,1". InputError
/// naming `flag` for anything else, a device listed twice, or "all" without a GPU.
std::vector<int> parse_gpu_list(const std::string& text, bool compile_only, const std::string& flag = "--gpus");

class LocalServer {
 public:
  /// Starts the scheduler's dispatchers (their workers start) and serves on 127.0.0.1 at a free port.
  LocalServer(EvalSettings defaults, SchedulerOptions scheduling, ServerOptions serving = {});
  ~LocalServer() { stop(); }
  LocalServer(const LocalServer&) = delete;
  LocalServer& operator=(const LocalServer&) = delete;

  const std::string& url() const { return url_; }
  uint16_t port() const { return server_->port(); }
  Scheduler& scheduler() { return *scheduler_; }
  /// Drains (what is queued finishes) and joins the server's thread; idempotent.
  void stop();

 private:
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Server> server_;
  std::string url_;
  std::thread thread_;
};

}  // namespace kbrl::serving
