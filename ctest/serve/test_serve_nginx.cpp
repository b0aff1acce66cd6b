// Two `kbrl serve` processes (fake GPU workers) behind nginx, the load balancer the README
// describes: 2,000 distinct items from 16 concurrent connections through the C++ client; one server
// is killed midway. Every item is answered once, with its own record, and every answered record is in
// the union of the servers' logs. Skipped (reported as skipped) where nginx is not installed.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include <harness/record/rollout_log.h>
#include <serve/client.h>

#include "serve_testing.h"

namespace kbrl::serving {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

using testing::file_text;

std::string find_nginx() {
  for (const char* p : {"/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

/// A child process; its stdout's first line is read when asked. Killed (SIGKILL) when destroyed.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env, const fs::path& log) {
    int out[2];
    if (::pipe(out) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      const int err = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (err >= 0) ::dup2(err, 2);
      ::close(out[0]);
      for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      std::_Exit(127);
    }
    ::close(out[1]);
    out_ = ::fdopen(out[0], "r");
  }
  ~Child() { kill(SIGKILL); }
  std::string first_line() {
    char line[512] = {};
    return std::fgets(line, sizeof line, out_) ? std::string(line) : std::string();
  }
  void kill(int signal) {
    if (pid_ <= 0) return;
    ::kill(pid_, signal);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    if (out_) std::fclose(out_);
    out_ = nullptr;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
};

int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(s);
  return ntohs(addr.sin_port);
}

TEST(ServeBehindNginx, NothingIsLostOrAnsweredTwiceWhenAServerDies) {
  const std::string nginx = find_nginx();
  if (nginx.empty()) GTEST_SKIP() << "nginx is not installed (Debian: nginx-light; .ci/setup installs it)";
  char tmpl[] = "/tmp/kbrl-serve-nginx-XXXXXX";
  const fs::path dir = ::mkdtemp(tmpl);
  const std::string env_worker = std::string("KBRL_WORKER=") + KBRL_FAKE_GPU_WORKER;
  const std::string env_cache = "KBRL_CACHE_DIR=" + (dir / "compile-cache").string();
  const std::string env_slow = "KBRL_FAKE_GPU_MS=2";

  // Two servers, each with its own log.
  std::vector<std::unique_ptr<Child>> servers;
  std::vector<std::string> upstreams;
  for (int i = 0; i < 2; ++i) {
    servers.push_back(std::make_unique<Child>(
        std::vector<std::string>{KBRL_CLI, "serve", "--port", "0", "--gpus", "0", "--batch", "16", "--log",
                                 (dir / ("server" + std::to_string(i))).string()},
        std::vector<std::string>{env_worker, env_cache, env_slow}, dir / ("server" + std::to_string(i) + ".err")));
    const Json listening = Json::parse(servers.back()->first_line(), nullptr, false);
    ASSERT_TRUE(listening.is_object()) << file_text(dir / ("server" + std::to_string(i) + ".err"));
    upstreams.push_back(listening["listening"].get<std::string>().substr(7));
  }

  // nginx in the foreground, one process, everything under `dir`.
  const int port = free_port();
  fs::create_directories(dir / "nginx" / "logs");
  std::ofstream(dir / "nginx" / "nginx.conf")
      << "daemon off;\nmaster_process off;\nworker_processes 1;\npid " << (dir / "nginx" / "nginx.pid").string()
      << ";\nerror_log " << (dir / "nginx" / "logs" / "error.log").string() << ";\n"
      << "events { worker_connections 256; }\nhttp {\n"
      << "  access_log off;\n  client_body_temp_path " << (dir / "nginx").string() << "/body;\n"
      << "  proxy_temp_path " << (dir / "nginx").string() << "/proxy;\n"
      << "  client_max_body_size 32m;\n"
      << "  upstream kbrl { server " << upstreams[0] << " max_fails=1 fail_timeout=30s; server " << upstreams[1]
      << " max_fails=1 fail_timeout=30s; keepalive 32; }\n"
      << "  server {\n    listen 127.0.0.1:" << port << ";\n    location / {\n      proxy_pass http://kbrl;\n"
      << "      proxy_http_version 1.1;\n      proxy_set_header Connection \"\";\n"
      << "      proxy_read_timeout 600s;\n      proxy_next_upstream error timeout http_502 http_503;\n"
      << "    }\n  }\n}\n";
  Child balancer({nginx, "-p", (dir / "nginx").string(), "-c", (dir / "nginx" / "nginx.conf").string()}, {},
                 dir / "nginx" / "stderr.log");
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  // 2,000 distinct items (one source, 2,000 launch plans: one compile), 16 connections, 25 a request.
  auto item = [](int n) { return Json{{"task_id", 19}, {"candidate", testing::relu_body(10000 + n)}}; };
  constexpr int kItems = 2000, kThreads = 16, kPerRequest = 25;
  ClientOptions options;
  options.urls = {url};
  options.backoff_seconds = 0.05;
  options.attempts = 40;
  Client client(options);
  client.get("/healthz");  // waits for nginx to listen
  client.evaluate(Json::array({item(-1)}));  // compiles once, into the shared cache

  std::vector<std::optional<EvalRecord>> answers(kItems);
  std::atomic<int> next{0}, answered{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int first; (first = next.fetch_add(kPerRequest)) < kItems;) {
        Json items = Json::array();
        for (int i = first; i < first + kPerRequest; ++i) items.push_back(item(i));
        try {
          const auto records = client.evaluate(items);
          for (int i = 0; i < kPerRequest; ++i) answers[first + i] = records[i];
          answered += kPerRequest;
        } catch (const std::exception& e) {
          ADD_FAILURE() << "items " << first << "..: " << e.what();
          failed = true;
        }
      }
    });
  }
  while (answered < kItems / 2 && !failed) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  servers[0]->kill(SIGKILL);  // midway, with requests in flight
  for (auto& t : threads) t.join();
  ASSERT_FALSE(failed);

  std::set<std::string> keys;
  for (int i = 0; i < kItems; ++i) {
    ASSERT_TRUE(answers[i].has_value()) << "item " << i << " lost";
    EXPECT_EQ(answers[i]->outcome, Outcome::ok) << answers[i]->outcome_detail;
    EXPECT_EQ(answers[i]->raw_action, item(i)["candidate"].get<std::string>()) << "item " << i << " got another's record";
    keys.insert(answers[i]->key);
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(kItems)) << "each item its own record";
  std::map<std::string, int> logged;
  for (int s = 0; s < 2; ++s)
    for (const EvalRecord& r : read_rollout_log(dir / ("server" + std::to_string(s)) / "rollouts.jsonl")) ++logged[r.key];
  int twice = 0;
  for (const std::string& key : keys) {
    EXPECT_GE(logged[key], 1) << "an answered record missing from the logs";
    twice += logged[key] > 1;
  }
  // An item the killed server had evaluated but not yet answered is evaluated again elsewhere; at
  // most the items it held when it died (its batch and the requests in flight to it).
  EXPECT_LE(twice, kThreads * kPerRequest);
  std::printf("2 servers behind nginx: %d items answered, %d client retries, %d items evaluated on both servers "
              "(in flight on the killed one)\n", kItems, client.retries(), twice);
  balancer.kill(SIGTERM);
  servers[1]->kill(SIGTERM);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace
}  // namespace kbrl::serving
