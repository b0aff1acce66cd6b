// A fuzz of kbrl serve over TCP: a bounded number of random raw requests (random bytes in the
// request line, the path, the query, the headers and the body; JSON bodies with strings that are not
// UTF-8, truncated, with huge numbers or deep nesting) to a live `kbrl serve --compile-only`
// process. Afterwards the process must be alive and /healthz must answer 200. The seed is printed;
// KBRL_FUZZ_SEED=N replays a run, KBRL_FUZZ_REQUESTS=N changes its length.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include <gtest/gtest.h>

#include "serve_process.h"

namespace kbrl::serving::testing {
namespace {

namespace fs = std::filesystem;

constexpr const char* kToken = "fuzz-token-0123456789";
constexpr double kTimeBudgetSeconds = 45;

class RequestFuzzer {
 public:
  explicit RequestFuzzer(uint64_t seed) : rng_(seed) {}

  std::string request() {
    switch (pick(6)) {
      case 0: return bytes(pick(400));  // anything at all
      case 1: return line(random_method(), random_target()) + headers() + "\r\n" + body();
      case 2: return evaluate(pick(2) ? "?async=1" : "");
      case 3: return line("GET", "/v1/jobs/" + pick_of({hex(32), hex(16), bytes(pick(40)), "%2e%2e%2f"})) + auth() + "\r\n";
      case 4: return line("GET", pick_of({"/healthz", "/metrics", "/v1/tasks", "/v1/openapi.json"}) + query()) +
                     headers() + "\r\n";
      default: return truncate(evaluate(""));
    }
  }

 private:
  size_t pick(size_t n) { return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  std::string pick_of(std::initializer_list<std::string> options) { return *(options.begin() + pick(options.size())); }
  std::string bytes(size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(pick(256));
    return s;
  }
  std::string hex(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += "0123456789abcdef"[pick(16)];
    return s;
  }
  /// Text with, now and then, bytes that are not UTF-8, control characters and quotes.
  std::string text(size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += pick(40) == 0 ? static_cast<char>(0x80 + pick(128)) : static_cast<char>(32 + pick(95));
    return s;
  }
  std::string random_method() { return pick_of({"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "G\xff", bytes(pick(8))}); }
  std::string random_target() {
    std::string target = pick_of({"/healthz", "/v1/evaluate", "/v1/tasks/19/prompt", "/v1/tasks/", "/v1/jobs/", "/", "*", ""});
    if (target == "/v1/tasks/") target.append(text(pick(8))).append("/prompt");
    if (target == "/v1/jobs/") target.append(text(pick(40)));
    if (target == "/") target.append(bytes(pick(60)));
    return target.append(query());
  }
  std::string query() {
    if (pick(3) == 0) return "";
    std::string q = "?";
    for (size_t i = pick(4); i > 0; --i)
      q += pick_of({"async", "style", text(pick(6))}) + "=" + pick_of({"0", "1", "file", text(pick(10))}) + "&";
    return q;
  }
  std::string line(const std::string& method, const std::string& target) {
    return method + " " + target + " " + pick_of({"HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/9.9", text(pick(10))}) + "\r\n";
  }
  std::string auth() {
    return pick_of({"", std::string("Authorization: Bearer ") + kToken + "\r\n",
                    std::string("Authorization: bearer ") + kToken + "\r\n", "Authorization: " + text(pick(40)) + "\r\n"}) +
           (pick(2) ? "X-Kbrl-Client: " + text(pick(70)) + "\r\n" : "");
  }
  std::string headers() {
    std::string h = auth();
    for (size_t i = pick(5); i > 0; --i)
      h += pick_of({"Content-Length", "Transfer-Encoding", "Connection", "Host", text(pick(12))}) + ": " +
           pick_of({"chunked", "close", "keep-alive", "99999999999999999999", "-1", text(pick(50)), bytes(pick(20))}) + "\r\n";
    return h;
  }
  std::string json_value(int depth) {
    switch (pick(depth > 3 ? 5 : 7)) {
      case 0: return "\"" + text(pick(30)) + "\"";
      case 1: return pick_of({"1e999", "-1e999", "99999999999999999999999", "19", "-19", "0.5", "1e-400", "NaN"});
      case 2: return pick_of({"true", "null", "\"\\ud800\"", "\"\\u0000\"", "\"\\xff\"", "\"#pragma message(\\\"\\\\xff\\\")\""});
      case 3: return std::string(pick(2000), '[');
      case 4: return "\"```cuda\\n" + text(pick(60)) + "\\n```\"";
      case 5: return "[" + json_value(depth + 1) + "," + json_value(depth + 1) + "]";
      default: return "{\"" + pick_of({"task_id", "text", "candidate", "config", "mode", "reward", text(5)}) + "\": " +
                      json_value(depth + 1) + "}";
    }
  }
  std::string body() {
    if (pick(4) == 0) return bytes(pick(300));
    return "{\"items\": [{\"task_id\": " + pick_of({"19", "1", "0", "101", "1e999", "\"19\""}) + ", \"" +
           pick_of({"text", "candidate", "config", "mode"}) + "\": " + json_value(0) + "}]}";
  }
  /// A well-formed POST /v1/evaluate (its body fuzzed).
  std::string evaluate(const std::string& query) {
    const std::string b = body();
    return line("POST", "/v1/evaluate" + query) + auth() + "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  }
  std::string truncate(const std::string& request) { return request.substr(0, pick(request.size() + 1)); }

  std::mt19937_64 rng_;
};

uint64_t env_number(const char* name, uint64_t fallback) {
  const char* value = std::getenv(name);
  return value ? std::strtoull(value, nullptr, 10) : fallback;
}

TEST(ServeRawFuzz, RandomRawRequestsNeitherKillNorWedgeTheServer) {
  const uint64_t seed = env_number("KBRL_FUZZ_SEED", 20260305);
  const uint64_t requests = env_number("KBRL_FUZZ_REQUESTS", 5000);
  std::printf("fuzz seed %llu (KBRL_FUZZ_SEED=%llu replays it), %llu requests\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(requests));
  const fs::path dir = fs::temp_directory_path() / ("kbrl-serve-fuzz-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "token") << kToken << "\n";
  ServeProcess server({"--compile-only", "--token-file", (dir / "token").string(), "--log", (dir / "log").string(),
                       "--request-timeout", "5", "--max-queue", "64", "--batch", "4"});
  ASSERT_NE(server.port(), 0) << "kbrl serve did not start";
  RequestFuzzer fuzzer(seed);
  const auto start = std::chrono::steady_clock::now();
  uint64_t sent = 0;
  std::map<int, uint64_t> statuses;  // 0: no answer (closed, or slower than the read)
  for (; sent < requests; ++sent) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kTimeBudgetSeconds) break;
    const std::string request = fuzzer.request();
    ++statuses[raw_request(server.port(), request, 0.5).status];
    if (sent % 100 == 0) {
      ASSERT_TRUE(server.alive()) << "kbrl serve died by request " << sent << " (seed " << seed << ")";
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%llu requests in %.1f s; answers by status:", static_cast<unsigned long long>(sent), seconds);
  for (const auto& [status, n] : statuses) std::printf(" %d: %llu", status, static_cast<unsigned long long>(n));
  std::printf("\n");
  EXPECT_GE(sent, 500u) << "too few requests in the time budget to mean much";
  ASSERT_TRUE(server.alive()) << "kbrl serve died (seed " << seed << "), status " << server.exit_status;
  EXPECT_EQ(raw_request(server.port(), get_request("/healthz"), 30).status, 200) << "seed " << seed;
  EXPECT_TRUE(server.alive());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kbrl::serving::testing
