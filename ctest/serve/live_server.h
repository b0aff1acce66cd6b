#pragma once
// A kbrl serve running in the test's process on a free loopback port (the real server and
// scheduler, a fake GPU worker by default), and a libcurl client for it.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <kbrl/http_client.h>
#include <serve/local_server.h>

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

/// A server on a free loopback port with a fake GPU worker and a secret of its own, run on a thread,
/// stopped (drained) when destroyed.
class TestServer {
 public:
  TestServer(const fs::path& dir, SchedulerOptions scheduling = {}, ServerOptions serving = {},
             std::string worker = KBRL_FAKE_GPU_WORKER)
      : local_([&] {
          EvalSettings settings;
          settings.worker_program = std::move(worker);
          settings.cache_dir = dir / "compile-cache";
          settings.secret = 7;
          return settings;
        }(),
               std::move(scheduling), std::move(serving)) {}
  void stop() { local_.stop(); }
  const std::string& url() const { return local_.url(); }
  uint16_t port() const { return local_.port(); }
  Scheduler& scheduler() { return local_.scheduler(); }

 private:
  LocalServer local_;
};

inline size_t line_count(const fs::path& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

/// A runs file the fake worker appends to; set before the server starts its workers.
class FakeGpuRuns {
 public:
  explicit FakeGpuRuns(const fs::path& path) : path_(path) { ::setenv("KBRL_FAKE_GPU_RUNS", path.c_str(), 1); }
  ~FakeGpuRuns() { ::unsetenv("KBRL_FAKE_GPU_RUNS"); }
  size_t count() const { return line_count(path_); }
  /// Runs by device.
  std::map<int, int> by_device() const {
    std::map<int, int> n;
    std::ifstream in(path_);
    for (int task, device; in >> task >> device;) ++n[device];
    return n;
  }

 private:
  fs::path path_;
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
