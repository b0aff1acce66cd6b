#pragma once
// A kbrl serve running in the test's process on a free loopback port (the real server and
// scheduler, a fake GPU worker by default), and a libcurl client for it.
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <kbrl/http_client.h>
#include <serve/scheduler.h>
#include <serve/server.h>

namespace kbrl::serving {

namespace fs = std::filesystem;
using Json = nlohmann::json;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/kbrl-serve-test-XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// A server on a free loopback port, run on a thread, stopped (drained) when destroyed.
class TestServer {
 public:
  TestServer(const fs::path& dir, SchedulerOptions scheduling = {}, ServerOptions serving = {},
             std::string worker = KBRL_FAKE_GPU_WORKER) {
    EvalSettings settings;
    settings.worker_program = std::move(worker);
    settings.cache_dir = dir / "compile-cache";
    settings.secret = 7;
    serving.port = 0;
    scheduler_ = std::make_unique<Scheduler>(settings, scheduling);
    server_ = std::make_unique<Server>(serving, *scheduler_);
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
    thread_ = std::thread([this] { server_->run(/*handle_signals=*/false); });
  }
  ~TestServer() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    server_->stop();
    thread_.join();
  }
  const std::string& url() const { return url_; }
  uint16_t port() const { return server_->port(); }
  Scheduler& scheduler() { return *scheduler_; }

 private:
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Server> server_;
  std::string url_;
  std::thread thread_;
};

inline HttpClient& http() {
  static HttpClient client([] {
    HttpOptions o;
    o.retries = 0;
    o.timeout_seconds = 300;
    o.max_concurrent = 32;
    return o;
  }());
  return client;
}

inline Json post(const std::string& url, const Json& body, long expect = 200, const std::vector<std::string>& headers = {}) {
  const HttpResponse r = http().post_json(url, body.dump(), headers);
  EXPECT_EQ(r.status, expect) << r.body.substr(0, 500);
  return Json::parse(r.body, nullptr, false);
}

inline Json get(const std::string& url, long expect = 200, const std::vector<std::string>& headers = {}) {
  const HttpResponse r = http().get(url, headers);
  EXPECT_EQ(r.status, expect) << r.body.substr(0, 500);
  return Json::parse(r.body, nullptr, false);
}

}  // namespace kbrl::serving
