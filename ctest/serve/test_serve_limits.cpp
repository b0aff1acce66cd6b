// What kbrl serve keeps for its clients, and for how long: async jobs visible to the client that
// made them only, under ids of 128 random bits; finished jobs' records bounded in bytes (the oldest
// dropped first, then answered 410); open connections bounded per peer, with a reserve where
// /healthz and authenticated requests still get in.
#include <set>

#include <gtest/gtest.h>

#include "live_server.h"
#include "serve_process.h"

namespace kbrl::serving {
namespace {

using testing::connect_to;
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
