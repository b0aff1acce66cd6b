#include "local_server.h"

#include <sstream>

#include <harness/gpu/cuda_driver.h>
#include <harness/gpu/gpu_session.h>
#include <kbrl/error.h>

namespace kbrl::serving {

std::vector<int> parse_gpu_list(const std::string& text, bool compile_only, const std::string& flag) {
  if (text == "all") {
    if (compile_only) return {0};
    std::string why;
    KBRL_CHECK_INPUT(gpu_available(&why), "{} all: no GPU ({}); on a machine without one use --compile-only", flag,
                     why);
    std::vector<int> all(static_cast<size_t>(cuda::driver_status().device_count));
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
    return all;
  }
  std::vector<int> gpus;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    size_t used = 0;
    int device = -1;
    try {
      device = std::stoi(part, &used);
    } catch (const std::exception&) {
    }
    KBRL_CHECK_INPUT(used == part.size() && device >= 0, "{} {}: expected 'all' or device indices like 0,1", flag, text);
    for (int listed : gpus) KBRL_CHECK_INPUT(listed != device, "GPU {} is listed twice ({})", device, flag);
    gpus.push_back(device);
  }
  KBRL_CHECK_INPUT(!gpus.empty(), "{} is empty", flag);
  return gpus;
}

LocalServer::LocalServer(EvalSettings defaults, SchedulerOptions scheduling, ServerOptions serving) {
  serving.host = "127.0.0.1";
  serving.port = 0;
  scheduler_ = std::make_unique<Scheduler>(std::move(defaults), std::move(scheduling));
  server_ = std::make_unique<Server>(serving, *scheduler_);
  url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  thread_ = std::thread([this] { server_->run(/*handle_signals=*/false); });
}

void LocalServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  thread_.join();
}

}  // namespace kbrl::serving
