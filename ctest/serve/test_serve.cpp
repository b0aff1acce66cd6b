// kbrl serve end to end on the CPU: the real server, scheduler and evaluator (NVRTC compiles the
// candidates), with a fake GPU worker answering every candidate as correct at speedup 2.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <kbrl/http_client.h>
#include <harness/record/rollout_log.h>
#include <serve/client.h>
#include <serve/server.h>
#include <experiments/environment.h>
#include <kernels/generator.h>
#include <reference/task_registry.h>

#include "live_server.h"
#include "serve_process.h"
#include "serve_testing.h"

namespace kbrl::serving {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using testing::file_text;

/// Candidates that differ in their launch plan and source (a compile each).
std::string relu_candidate(int grid = 16384) { return testing::relu_file(grid); }

TEST(Serve, AnswersOneRecordPerItemInOrder) {
  TempDir dir;
  TestServer server(dir.path());
  const Json items = {{{"task_id", 19}, {"candidate", relu_candidate()}},
                      {{"task_id", 19}, {"text", "No code from me today.\n```cuda\n```"}},
                      {{"task_id", 19}, {"text", "```cuda\n" + relu_candidate(8192) + "```"}, {"reward", "composite"}}};
  const Json answer = post(server.url() + "/v1/evaluate", {{"items", items}});
  ASSERT_EQ(answer["records"].size(), 3u);
  const EvalRecord ok = record_from_json(answer["records"][0]);
  EXPECT_EQ(ok.outcome, Outcome::ok) << ok.outcome_detail;
  EXPECT_NEAR(ok.speedup, 2.0, 1e-9);
  EXPECT_EQ(ok.raw_action, relu_candidate());
  EXPECT_EQ(ok.device, "fake GPU (kbrl tests)");
  const EvalRecord none = record_from_json(answer["records"][1]);
  EXPECT_EQ(none.outcome, Outcome::format_error);
  EXPECT_EQ(none.reward, 0.0);
  const EvalRecord text = record_from_json(answer["records"][2]);
  EXPECT_EQ(text.outcome, Outcome::ok) << text.outcome_detail;
  EXPECT_NE(text.key, ok.key);
  EXPECT_GT(text.reward, ok.reward) << "the composite reward adds compile and correctness terms";
  // kbrl eval --server prints the same verdict through the C++ client.
  const fs::path file = dir.path() / "relu.cu";
  std::ofstream(file) << relu_candidate();
  const std::string command = std::string(KBRL_CLI) + " eval --task 19 --kernel " + file.string() + " --server " +
                              server.url() + " --json " + (dir.path() / "r.json").string() + " > /dev/null";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  EXPECT_EQ(Json::parse(file_text(dir.path() / "r.json"))["key"], ok.key);
}

TEST(Serve, IdenticalItemsAreEvaluatedOnceForEveryWaiter) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  TestServer server(dir.path());
  const Json item = {{"task_id", 19}, {"candidate", relu_candidate(4096)}};
  std::vector<std::thread> clients;
  std::vector<Json> answers(4);
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&, c] { answers[c] = post(server.url() + "/v1/evaluate", {{"items", {item, item, item}}}); });
  for (auto& t : clients) t.join();
  std::set<std::string> keys;
  for (const Json& a : answers) {
    ASSERT_EQ(a["records"].size(), 3u);
    for (const Json& r : a["records"]) keys.insert(r["key"].get<std::string>() + r["timestamp"].get<std::string>());
  }
  EXPECT_EQ(keys.size(), 1u) << "every waiter gets the one evaluation";
  EXPECT_EQ(runs.count(), 1u);
  const std::string metrics = http().get(server.url() + "/metrics").body;
  EXPECT_NE(metrics.find("kbrl_evaluations_total{outcome=\"ok\"} 12"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("kbrl_deduplicated_total 11"), std::string::npos) << metrics;
}

TEST(Serve, AsyncJobsArePolledToTheirRecords) {
  TempDir dir;
  TestServer server(dir.path());
  const Json accepted = post(server.url() + "/v1/evaluate?async=1",
                             {{"items", {{{"task_id", 19}, {"candidate", relu_candidate()}}}}}, 202);
  const std::string id = accepted["job"];
  EXPECT_EQ(accepted["status_url"], "/v1/jobs/" + id);
  Json job;
  for (int i = 0; i < 600; ++i) {
    job = get(server.url() + "/v1/jobs/" + id);
    if (job["status"] == "done") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(job["status"], "done") << job.dump();
  EXPECT_EQ(job["done"], 1);
  EXPECT_EQ(job["records"][0]["outcome"], "ok");
  get(server.url() + "/v1/jobs/0123456789abcdef", 404);
  get(server.url() + "/v1/jobs/..%2F..%2Fetc", 404);
  // The 202 says where the job is in Location too (RFC 9110), as status_url does in the body.
  const uint16_t port = server.port();
  const testing::RawAnswer raw = testing::raw_request(
      port, testing::post_request("/v1/evaluate?async=1",
                                  Json{{"items", {{{"task_id", 19}, {"candidate", relu_candidate()}}}}}.dump()));
  ASSERT_EQ(raw.status, 202) << raw.text;
  const std::string url = Json::parse(raw.body())["status_url"];
  EXPECT_NE(raw.text.find("\r\nLocation: " + url + "\r\n"), std::string::npos) << raw.text;
}

TEST(Serve, ATokenIsNeededOffLoopbackAndChecked) {
  TempDir dir;
  Scheduler scheduler(EvalSettings{}, {});
  ServerOptions open;
  open.host = "0.0.0.0";
  open.port = 0;
  EXPECT_THROW(Server(open, scheduler), InputError);
  ServerOptions guarded;
  guarded.token = "0123456789abcdef-secret";
  TestServer server(dir.path(), {}, guarded);
  EXPECT_EQ(get(server.url() + "/v1/tasks", 401)["error"]["code"], "unauthorized");
  get(server.url() + "/v1/tasks", 401, {"Authorization: Bearer wrong"});
  get(server.url() + "/v1/tasks", 401, {"Authorization: Bearer 0123456789abcdef-secreT"});
  get(server.url() + "/v1/tasks", 200, {"Authorization: Bearer 0123456789abcdef-secret"});
  get(server.url() + "/healthz", 200);  // health checks need no token
}

TEST(Serve, AFullQueueAnswers429AndDrainFinishesWhatIsQueued) {
  TempDir dir;
  ::setenv("KBRL_FAKE_GPU_MS", "1500", 1);  // read by the worker, which starts on the first item
  SchedulerOptions scheduling;
  scheduling.max_queue = 2;
  scheduling.batch = 2;
  auto server = std::make_unique<TestServer>(dir.path(), scheduling);
  auto async = [&](int grid) {
    return post(server->url() + "/v1/evaluate?async=1",
                {{"items", {{{"task_id", 19}, {"candidate", relu_candidate(grid)}}}}}, 202)["job"].get<std::string>();
  };
  const std::string first = async(1000);
  for (int i = 0; i < 600 && server->scheduler().metrics().running < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(server->scheduler().metrics().running, 1u);  // the worker holds it for 1.5 s
  const std::string second = async(1001), third = async(1002);
  EXPECT_EQ(server->scheduler().metrics().queued, 2u);
  const Json full = post(server->url() + "/v1/evaluate?async=1",
                         {{"items", {{{"task_id", 19}, {"candidate", relu_candidate(1004)}}}}}, 429);
  EXPECT_EQ(full["error"]["code"], "queue_full");
  EXPECT_EQ(full["error"]["retryable"], true);
  // Draining: no new jobs; the queued ones are evaluated and answered.
  std::thread stopper([&] { server->stop(); });
  for (int i = 0; i < 200 && !server->scheduler().draining(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_THROW(server->scheduler().submit("late", {}), ApiException);
  stopper.join();
  for (const std::string& id : {first, second, third}) {
    const auto job = server->scheduler().job(id);
    ASSERT_NE(job, nullptr);
    EXPECT_EQ(job->status(), Job::Status::done) << id;
  }
  server.reset();
  ::unsetenv("KBRL_FAKE_GPU_MS");
}

TEST(Serve, ARestartedServerWithTheSameLogAnswersFromIt) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  SchedulerOptions scheduling;
  scheduling.log = dir.path() / "log" / "rollouts.jsonl";
  const Json items = {{{"task_id", 19}, {"candidate", relu_candidate(2000)}},
                      {{"task_id", 19}, {"candidate", relu_candidate(2001)}},
                      {{"task_id", 19}, {"text", "```\n```"}}};
  Json before;
  {
    TestServer server(dir.path(), scheduling);
    before = post(server.url() + "/v1/evaluate", {{"items", items}});
  }
  EXPECT_EQ(runs.count(), 2u);
  TestServer again(dir.path(), scheduling);
  const Json after = post(again.url() + "/v1/evaluate", {{"items", items}});
  EXPECT_EQ(runs.count(), 2u) << "nothing evaluated again";
  ASSERT_EQ(after["records"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(after["records"][i]["key"], before["records"][i]["key"]);
    EXPECT_EQ(after["records"][i]["timestamp"], before["records"][i]["timestamp"]);
  }
  EXPECT_EQ(line_count(scheduling.log), 3u);
}

TEST(Serve, AnExperimentEnvironmentEvaluatesThroughTheServer) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  TestServer server(dir.path());
  EvalSettings settings;
  settings.reward.kind = RewardKind::composite;
  ServedEnvironment env({server.url()}, "", settings);
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  Sample knobs;
  knobs.task_id = 19;
  knobs.config = generator_for(19).expert(task);
  Sample text;
  text.task_id = 19;
  text.kind = ActionKind::text;
  text.text = "Here it is:\n```cuda\n" + testing::relu_body(3000, nullptr) + "```\n";
  Sample empty = text;
  empty.text = "```\n```";
  const std::vector<Rollout> rollouts = env.evaluate(task, {knobs, text, knobs, empty}, "test");
  ASSERT_EQ(rollouts.size(), 4u);
  for (int i : {0, 1, 2}) {
    EXPECT_EQ(rollouts[i].outcome(), Outcome::ok) << i << ": " << rollouts[i].outcome_detail();
    EXPECT_TRUE(rollouts[i].correct());
    EXPECT_NEAR(rollouts[i].speedup(), 2.0, 1e-9);
    EXPECT_GT(rollouts[i].reward, 2.0) << "composite: compile and correctness terms on top";
  }
  EXPECT_EQ(rollouts[1].code.find("kbrl: scaffold") != std::string::npos, true) << rollouts[1].code;
  EXPECT_EQ(rollouts[3].outcome(), Outcome::format_error);
  EXPECT_EQ(runs.count(), 2u) << "the repeated configuration is evaluated once";
  EXPECT_GT(env.evaluator_seconds(), 0.0);
  // A server at another scale than the run's is refused, naming the fix.
  EXPECT_THROW(env.evaluate(task_spec(19, Scale::small), {knobs}, "test"), InputError);
}

// An experiment's seeds are separate observations: a configuration sampled again within one is
// evaluated once (its timing reused), under another it is evaluated and timed again; in process and
// through the server alike, and a rerun over the same log evaluates nothing again.
TEST(Serve, AnotherObservationTimesACandidateAgain) {
  TempDir dir;
  FakeGpuRuns runs(dir.path() / "runs.txt");
  const TaskSpec task = task_spec(19, Scale::kernelbench);
  Sample knobs;
  knobs.task_id = 19;
  knobs.config = generator_for(19).expert(task);
  const auto observe = [&](Environment& env) {
    env.set_observation("seed 42");
    const std::vector<Rollout> first = env.evaluate(task, {knobs, knobs}, "test");
    env.set_observation("seed 43");
    env.evaluate(task, {knobs}, "test");
    env.set_observation("seed 42");
    const std::vector<Rollout> again = env.evaluate(task, {knobs}, "test");
    EXPECT_EQ(again[0].speedup_ci(), first[0].speedup_ci());
  };
  EvalSettings settings;
  settings.worker_program = KBRL_FAKE_GPU_WORKER;
  settings.cache_dir = dir.path() / "compile-cache";
  {
    Evaluator evaluator(settings);
    RolloutLog log(dir.path() / "rollouts.jsonl");
    evaluator.attach_log(&log);
    EvaluatorEnvironment env(evaluator);
    observe(env);
    EXPECT_EQ(runs.count(), 2u) << "one evaluation per observation";
    EvaluatorEnvironment rerun(evaluator);
    observe(rerun);
    EXPECT_EQ(runs.count(), 2u) << "the log holds both observations' records";
  }
  TestServer server(dir.path());
  ServedEnvironment served({server.url()}, "", settings);
  observe(served);
  EXPECT_EQ(runs.count(), 4u) << "the server keys an item with its observation";
}

TEST(Serve, AWorkerThatCannotStartIsARetryable503) {
  TempDir dir;
  TestServer server(dir.path(), {}, {}, (dir.path() / "no-such-worker").string());
  const Json answer = post(server.url() + "/v1/evaluate", {{"items", {{{"task_id", 19}, {"candidate", relu_candidate()}}}}}, 503);
  EXPECT_EQ(answer["error"]["code"], "worker_lost");
  EXPECT_EQ(answer["error"]["retryable"], true);
}

TEST(Serve, TheClientMovesToTheNextUrlAndASlowClientIsCutOff) {
  TempDir dir;
  ServerOptions options;
  options.read_timeout_seconds = 1;
  TestServer server(dir.path(), {}, options);
  // A port nothing listens on, first in the list.
  const int probe = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(probe, reinterpret_cast<sockaddr*>(&addr), &len);
  const std::string dead = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  ::close(probe);
  ClientOptions options_client;
  options_client.urls = parse_server_urls(dead + "," + server.url() + "/");
  options_client.backoff_seconds = 0.01;
  Client client(options_client);
  const auto records = client.evaluate(Json::array({{{"task_id", 19}, {"text", "no code\n```\n```"}}}));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].outcome, Outcome::format_error);
  EXPECT_GE(client.retries(), 1);
  EXPECT_THROW(client.evaluate(Json::array({{{"task_id", 999}, {"text", "x"}}})), InputError);
  EXPECT_THROW(parse_server_urls("ftp://x"), InputError);

  // Half a request, then silence: the server closes the connection after its read timeout.
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  addr.sin_port = htons(server.port());
  ASSERT_EQ(::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string partial = "POST /v1/evaluate HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n";
  ASSERT_EQ(::send(s, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
  const auto start = std::chrono::steady_clock::now();
  char buffer[256];
  const ssize_t got = ::recv(s, buffer, sizeof buffer, 0);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ::close(s);
  EXPECT_LE(got, 0);
  EXPECT_LT(waited, 10.0);
}

}  // namespace
}  // namespace kbrl::serving
