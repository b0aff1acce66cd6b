// What kbrl serve keeps for its clients, and for how long: async jobs visible to the client that
// made them only, under ids of 128 random bits; finished jobs' records bounded in bytes (the oldest
// dropped first, then answered 410); a job cancelled or forgotten by DELETE; open connections
// bounded per peer, with a reserve where /healthz and authenticated requests still get in; readiness
// (/readyz) that knows whether every GPU's worker is up.
#include <set>

#include <gtest/gtest.h>

#include "live_server.h"
#include "serve_process.h"
#include "serve_testing.h"

namespace kbrl::serving {
namespace {

using testing::connect_to;
using testing::delete_request;
using testing::get_request;
using testing::raw_request;
using testing::raw_request_until_closed;

/// An async job of one item whose record holds `bytes` of text (a format error: nothing compiles).
std::string submit(const std::string& url, size_t bytes, const std::vector<std::string>& headers = {}) {
  const std::string text = std::string(bytes, 'x') + "\n```\n```";
  return post(url + "/v1/evaluate?async=1", {{"items", {{{"task_id", 19}, {"text", text}}}}}, 202, headers)["job"];
}

Json wait_done(const std::string& url, const std::string& id, const std::vector<std::string>& headers = {}) {
  Json job;
  for (int i = 0; i < 600; ++i) {
    job = get(url + "/v1/jobs/" + id, 200, headers);
    if (job["status"] == "done") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return job;
}

TEST(ServeJobs, IdsAre128RandomBits) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = random_job_id();
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
}

// A job id used to be enough to read any client's records. Now another client (another
// X-Kbrl-Client, or another peer without one) is told there is no such job.
TEST(ServeJobs, AJobIsVisibleToTheClientThatMadeItOnly) {
  TempDir dir;
  TestServer server(dir.path());
  const std::string mine = submit(server.url(), 10, {"X-Kbrl-Client: alice"});
  EXPECT_EQ(mine.size(), 32u);
  EXPECT_EQ(wait_done(server.url(), mine, {"X-Kbrl-Client: alice"})["status"], "done");
  EXPECT_EQ(get(server.url() + "/v1/jobs/" + mine, 404, {"X-Kbrl-Client: bob"})["error"]["code"], "not_found");
  get(server.url() + "/v1/jobs/" + mine, 404);  // this peer, without the header: another client
  const std::string peers = submit(server.url(), 10);
  EXPECT_EQ(wait_done(server.url(), peers)["status"], "done");
  get(server.url() + "/v1/jobs/" + peers, 404, {"X-Kbrl-Client: alice"});
}

// Finished jobs used to be kept by item count: 65,536 items of 256 KiB each is 16 GiB. Now their
// records are kept up to a byte budget, the oldest finished dropped first and answered 410 Gone.
TEST(ServeJobs, FinishedJobsAreKeptWithinAByteBudgetAndDroppedOnesAre410) {
  TempDir dir;
  SchedulerOptions scheduling;
  scheduling.kept_job_bytes = 1u << 20;
  scheduling.recent_record_bytes = 1u << 20;
  TestServer server(dir.path(), scheduling);
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(submit(server.url(), 200'000 + i));  // about 400 KB a record (raw action and code)
    EXPECT_EQ(wait_done(server.url(), ids.back())["status"], "done");
  }
  const SchedulerMetrics m = server.scheduler().metrics();
  EXPECT_LE(m.kept_job_bytes, 1u << 20);
  EXPECT_GT(m.kept_job_bytes, 0u);
  EXPECT_LE(m.recent_record_bytes, 1u << 20);
  const Json gone = get(server.url() + "/v1/jobs/" + ids.front(), 410);
  EXPECT_EQ(gone["error"]["code"], "gone");
  EXPECT_EQ(get(server.url() + "/v1/jobs/" + ids.back())["status"], "done");
  get(server.url() + "/v1/jobs/" + ids.front(), 404, {"X-Kbrl-Client: bob"});  // gone, but not bob's to know
  const std::string metrics = http().get(server.url() + "/metrics").body;
  EXPECT_NE(metrics.find("kbrl_kept_job_bytes "), std::string::npos) << metrics;
}

TEST(ServeJobs, DeletingAJobCancelsItOrForgetsIt) {
  TempDir dir;
  struct SlowGpu {  // each candidate holds the fake GPU for 1.5 s (read by the worker when it starts)
    SlowGpu() { ::setenv("KBRL_FAKE_GPU_MS", "1500", 1); }
    ~SlowGpu() { ::unsetenv("KBRL_FAKE_GPU_MS"); }
  } slow_gpu;
  SchedulerOptions scheduling;
  scheduling.batch = 1;
  TestServer server(dir.path(), scheduling);
  const uint16_t port = server.port();
  // A finished job: DELETE answers it as it was, then it is not found, by GET or DELETE.
  const std::string finished = submit(server.url(), 10);
  ASSERT_EQ(wait_done(server.url(), finished)["status"], "done");
  testing::RawAnswer answer = raw_request(port, delete_request("/v1/jobs/" + finished));
  ASSERT_EQ(answer.status, 200) << answer.text;
  EXPECT_EQ(Json::parse(answer.body())["status"], "done");
  EXPECT_EQ(Json::parse(answer.body())["records"].size(), 1u);
  get(server.url() + "/v1/jobs/" + finished, 404);
  EXPECT_EQ(raw_request(port, delete_request("/v1/jobs/" + finished)).status, 404);
  // A job queued behind a slow one is cancelled before a GPU takes it; another client cannot.
  auto async = [&](int grid) {
    return post(server.url() + "/v1/evaluate?async=1",
                {{"items", {{{"task_id", 19}, {"candidate", testing::relu_file(grid)}}}}}, 202)["job"].get<std::string>();
  };
  const std::string slow = async(1000);
  for (int i = 0; i < 600 && server.scheduler().metrics().running < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string queued = async(1001);
  ASSERT_EQ(server.scheduler().metrics().queued, 1u);
  EXPECT_EQ(raw_request(port, delete_request("/v1/jobs/" + queued, "X-Kbrl-Client: bob\r\n")).status, 404);
  answer = raw_request(port, delete_request("/v1/jobs/" + queued));
  ASSERT_EQ(answer.status, 200) << answer.text;
  const Json cancelled = Json::parse(answer.body());
  EXPECT_EQ(cancelled["status"], "failed") << cancelled.dump();
  EXPECT_EQ(cancelled["error"]["code"], "cancelled") << cancelled.dump();
  EXPECT_EQ(server.scheduler().metrics().queued, 0u);
  get(server.url() + "/v1/jobs/" + queued, 404);
  EXPECT_EQ(wait_done(server.url(), slow)["status"], "done");  // the one a GPU held is not disturbed
  // Other methods are named in Allow.
  answer = raw_request(port, testing::post_request("/v1/jobs/" + slow, "{}"));
  EXPECT_EQ(answer.status, 405);
  EXPECT_NE(answer.text.find("\r\nAllow: GET, DELETE\r\n"), std::string::npos) << answer.text;
}

/// /readyz, polled until the GPU's worker is no longer starting.
testing::RawAnswer readiness(uint16_t port) {
  testing::RawAnswer answer;
  for (int i = 0; i < 500; ++i) {
    answer = raw_request(port, get_request("/readyz"));
    if (answer.status == 200 || answer.text.find("\"starting\"") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return answer;
}

TEST(ServeHealth, ReadyOnceEveryWorkerIsUpAndMetricsSaySo) {
  TempDir dir;
  TestServer server(dir.path());
  const testing::RawAnswer answer = readiness(server.port());
  ASSERT_EQ(answer.status, 200) << answer.text;
  const Json ready = Json::parse(answer.body());
  EXPECT_EQ(ready["status"], "ready");
  EXPECT_EQ(ready["gpus"][0]["device"], 0);
  EXPECT_EQ(ready["gpus"][0]["worker"], "up");
  EXPECT_EQ(wait_done(server.url(), submit(server.url(), 10))["status"], "done");
  const std::string metrics = http().get(server.url() + "/metrics").body;
  for (const char* line : {"kbrl_gpu_ready{device=\"0\"} 1\n", "kbrl_gpu_worker_restarts_total{device=\"0\"} 0\n",
                           "kbrl_build_info{version=\"", "kbrl_queue_wait_seconds_count 1\n",
                           "kbrl_queue_wait_seconds_bucket{le=\"+Inf\"} 1\n", "kbrl_http_request_seconds_bucket{le=\"0.005\"} ",
                           "# TYPE kbrl_http_request_seconds histogram\n"})
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
}

TEST(ServeHealth, AWorkerThatCannotStartIsNotReadyButAlive) {
  TempDir dir;
  TestServer server(dir.path(), {}, {}, (dir.path() / "no-such-worker").string());
  const testing::RawAnswer answer = readiness(server.port());
  ASSERT_EQ(answer.status, 503) << answer.text;
  const Json not_ready = Json::parse(answer.body());
  EXPECT_EQ(not_ready["status"], "not_ready");
  EXPECT_EQ(not_ready["gpus"][0]["worker"], "down");
  EXPECT_NE(not_ready["gpus"][0]["detail"].get<std::string>().find("no-such-worker"), std::string::npos) << answer.text;
  EXPECT_EQ(get(server.url() + "/healthz")["status"], "ok");  // alive: liveness is not readiness
  const std::string metrics = http().get(server.url() + "/metrics").body;
  EXPECT_NE(metrics.find("kbrl_gpu_ready{device=\"0\"} 0\n"), std::string::npos) << metrics;
}

// 1,024 idle connections used to lock every client out, /healthz included. Now one peer holds at
// most per_peer regular slots, and past the limits a reserve answers /healthz and token holders.
TEST(ServeConnections, IdleConnectionsLeaveRoomForHealthChecksAndTokenHolders) {
  TempDir dir;
  ServerOptions options;
  options.token = "connections-token";
  options.connections = {8, 4, 8};  // 8 in all, 4 a peer; a reserve of 8, 2 a peer
  TestServer server(dir.path(), {}, options);
  const uint16_t port = server.port();
  std::vector<int> idle;
  for (const char* attacker : {"127.0.0.2", "127.0.0.3", "127.0.0.4"})
    for (int i = 0; i < 12; ++i)
      if (int fd = connect_to(port, attacker); fd >= 0) idle.push_back(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server has taken them all
  // From 127.0.0.1: the regular slots are full (8 of 8), the reserve has room for this peer.
  // Each request waits for the server to close its connection: this peer's two reserve slots are
  // free again for the next (a client that does not wait is refused at once and retries).
  EXPECT_EQ(raw_request_until_closed(port, get_request("/healthz")).status, 200);
  EXPECT_EQ(raw_request_until_closed(port, get_request("/v1/tasks", "Authorization: Bearer connections-token\r\n")).status, 200);
  EXPECT_EQ(raw_request_until_closed(port, get_request("/v1/tasks", "Authorization: bearer connections-token\r\n")).status, 200);
  const testing::RawAnswer refused = raw_request_until_closed(port, get_request("/v1/tasks"));
  EXPECT_EQ(refused.status, 503) << refused.text;
  EXPECT_NE(refused.text.find("too_many_connections"), std::string::npos) << refused.text;
  for (int fd : idle) ::close(fd);
  // Closed connections give their slots back (once the server has seen them close: up to 10 s).
  int status = 0;
  for (int i = 0; i < 100 && status != 401; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = raw_request_until_closed(port, get_request("/v1/tasks")).status;
  }
  EXPECT_EQ(status, 401) << "a regular slot again: the token is asked for";
}

}  // namespace
}  // namespace kbrl::serving
