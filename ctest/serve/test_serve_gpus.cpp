// kbrl serve on several GPUs (fake GPU workers, one per device): one queue for all, a slow GPU
// that holds none of the items the others could run, a lost GPU whose items the others evaluate.
#include <cstdlib>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "live_server.h"
#include "serve_testing.h"

namespace kbrl::serving {
namespace {

/// An environment variable set for one test (the fake workers read it when they start).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

/// `n` ReLU items with distinct launch plans: distinct records from one compiled source.
Json relu_items(int n, int first_grid = 5000) {
  Json items = Json::array();
  for (int i = 0; i < n; ++i) items.push_back({{"task_id", 19}, {"candidate", testing::relu_body(first_grid + i)}});
  return items;
}

int runs_on(const std::map<int, int>& by_device, int device) {
  auto it = by_device.find(device);
  return it == by_device.end() ? 0 : it->second;
}

double metric(const std::string& metrics, const std::string& name) {
  const size_t at = metrics.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::atof(metrics.c_str() + at + name.size() + 2);
}

TEST(Serve, TwoGpusShareTheQueueAndEvaluateEachItemOnce) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  ::setenv("KBRL_FAKE_GPU_MS", "100", 1);
  SchedulerOptions scheduling;
  scheduling.gpus = {0, 1};
  scheduling.batch = 2;
  {
    TestServer server(dir.path(), scheduling);
    Json items = Json::array();
    for (int i = 0; i < 12; ++i) items.push_back({{"task_id", 19}, {"candidate", testing::relu_body(5000 + i % 8)}});
    const Json answer = post(server.url() + "/v1/evaluate", {{"items", items}});
    ASSERT_EQ(answer["records"].size(), 12u);
    for (size_t i = 0; i < 12; ++i) {
      EXPECT_EQ(answer["records"][i]["outcome"], "ok");
      EXPECT_EQ(answer["records"][i]["raw_action"], items[i]["candidate"]);
    }
    EXPECT_EQ(get(server.url() + "/healthz")["gpus"], 2);
  }
  ::unsetenv("KBRL_FAKE_GPU_MS");
  EXPECT_EQ(runs.count(), 8u) << "8 distinct candidates, each evaluated once";
  const auto by_device = runs.by_device();
  EXPECT_GT(by_device.count(0) ? by_device.at(0) : 0, 0);
  EXPECT_GT(by_device.count(1) ? by_device.at(1) : 0, 0) << "both dispatchers took work";
}

// GPU 1 takes 600 ms more a run. Each GPU first takes half of the queue; GPU 0 runs its half and
// waits, so GPU 1 gives back what it has not started, again each time GPU 0 runs dry: GPU 1 runs a
// few items (3 here; 6 to 12 without giving back), and none runs twice.
TEST(Serve, ASlowGpuGivesTheItemsItHasNotStartedToAnIdleOne) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  ScopedEnv slow("KBRL_FAKE_GPU_SLOW", "1:600");
  SchedulerOptions scheduling;
  scheduling.gpus = {0, 1};
  Json answer;
  std::string metrics;
  {
    TestServer server(dir.path(), scheduling);
    answer = post(server.url() + "/v1/evaluate", {{"items", relu_items(24)}});
    metrics = http().get(server.url() + "/metrics").body;
  }
  ASSERT_EQ(answer["records"].size(), 24u) << answer.dump().substr(0, 500);
  for (const Json& r : answer["records"]) EXPECT_EQ(r["outcome"], "ok") << r.dump().substr(0, 2000);
  EXPECT_EQ(runs.count(), 24u) << "each item evaluated once";
  const auto by_device = runs.by_device();
  EXPECT_LE(runs_on(by_device, 1), 4) << "the slow GPU kept items the idle one could run (GPU 0 ran "
                                       << runs_on(by_device, 0) << ")";
  EXPECT_GT(metric(metrics, "kbrl_requeued_total"), 0) << metrics;
}

// GPU 1's worker fails every request (the GPU gone): its items go to GPU 0, which evaluates each
// once; GPU 1 rests, tries one item now and then, and is reported down.
TEST(Serve, ALostGpusItemsAreEvaluatedByTheOthers) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  ScopedEnv lost("KBRL_FAKE_GPU_LOST", "1");
  ScopedEnv ms("KBRL_FAKE_GPU_MS", "50");
  SchedulerOptions scheduling;
  scheduling.gpus = {0, 1};
  scheduling.batch = 4;
  scheduling.down_retry_seconds = 0.2;
  TestServer server(dir.path(), scheduling);
  const Json answer = post(server.url() + "/v1/evaluate", {{"items", relu_items(16)}});
  ASSERT_EQ(answer["records"].size(), 16u) << answer.dump().substr(0, 500);
  for (const Json& r : answer["records"]) EXPECT_EQ(r["outcome"], "ok");
  EXPECT_EQ(runs.count(), 16u);
  EXPECT_EQ(runs_on(runs.by_device(), 0), 16);
  const Json ready = get(server.url() + "/readyz", 503);
  EXPECT_EQ(ready["gpus"][1]["worker"], "down") << ready.dump();
  EXPECT_NE(ready["gpus"][1]["detail"].get<std::string>().find("device 1 is lost"), std::string::npos) << ready.dump();
  EXPECT_EQ(ready["gpus"][0]["worker"], "up") << ready.dump();
}

// Every GPU lost: each item is tried on each GPU at most once, then its job fails with a retryable
// error (no hang, no record blaming the candidates).
TEST(Serve, ItemsNoGpuCanRunFailRetryably) {
  TempDir dir;
  ScopedEnv lost("KBRL_FAKE_GPU_LOST", "all");
  SchedulerOptions scheduling;
  scheduling.gpus = {0, 1};
  scheduling.down_retry_seconds = 0.2;
  TestServer server(dir.path(), scheduling);
  const Json answer = post(server.url() + "/v1/evaluate", {{"items", relu_items(6)}}, 503);
  EXPECT_EQ(answer["error"]["code"], "worker_lost") << answer.dump();
  EXPECT_EQ(answer["error"]["retryable"], true) << answer.dump();
}

}  // namespace
}  // namespace kbrl::serving
