// kbrl serve (a process of its own, --compile-only) against what a hostile client sends: raw bytes
// in the path, the query and the headers, a plain-ASCII candidate whose compile log holds raw
// bytes, the bearer scheme in another case. Each request ends with an answer of its own (JSON,
// valid UTF-8), and the process lives on: /healthz answers 200 after each.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <harness/record/json_text.h>
#include <kbrl/base64.h>

#include "serve_process.h"
#include "serve_testing.h"

namespace kbrl::serving::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kToken = "hostile-test-token-0123456789";

/// A --compile-only server with a token and a rollout log, in a fresh folder.
class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kbrl-serve-hostile-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "token") << kToken << "\n";
    server_ = std::make_unique<ServeProcess>(std::vector<std::string>{
        "--compile-only", "--token-file", (dir_ / "token").string(), "--log", (dir_ / "log").string()});
    ASSERT_NE(server_->port(), 0) << "kbrl serve did not start";
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  /// The answer to `request`, checked to be JSON text that is valid UTF-8 (or no answer at all).
  RawAnswer send(const std::string& request) {
    RawAnswer answer = raw_request(server_->port(), request, 120);
    if (answer.status != 0) {
      EXPECT_TRUE(is_valid_utf8(answer.body())) << answer.text.substr(0, 300);
      EXPECT_FALSE(Json::parse(answer.body(), nullptr, false).is_discarded()) << answer.text.substr(0, 300);
    }
    return answer;
  }

  void expect_alive() {
    EXPECT_TRUE(server_->alive()) << "kbrl serve died, status " << server_->exit_status;
    EXPECT_EQ(raw_request(server_->port(), get_request("/healthz")).status, 200);
  }

  static std::string auth() { return std::string("Authorization: Bearer ") + kToken + "\r\n"; }

  fs::path dir_;
  std::unique_ptr<ServeProcess> server_;
};

// One GET /healthz?\xff (no token needed) used to abort the server: the error message quoting the
// query did not encode as JSON, inside the read handler.
TEST_F(HostileTest, RawBytesInThePathOrQueryAreAnsweredNotFatal) {
  EXPECT_EQ(send(get_request("/healthz?\xff=1")).status, 400);
  expect_alive();
  EXPECT_EQ(send(get_request("/healthz?x=\xfe\xff")).status, 400);
  EXPECT_EQ(send(get_request("/\xff\xfe", auth())).status, 404);
  EXPECT_EQ(send(get_request("/v1/tasks/\xff/prompt", auth())).status, 404);
  EXPECT_EQ(send(get_request("/v1/jobs/\xff", auth())).status, 404);
  EXPECT_EQ(send(get_request("/v1/tasks/19/prompt?style=\xff", auth())).status, 400);
  EXPECT_EQ(send(get_request("/v1/tasks", auth() + "X-Kbrl-Client: \xff\xfe\r\n")).status, 200);
  EXPECT_EQ(send(post_request("/v1/evaluate?\xc0=1", "{}", auth())).status, 400);
  expect_alive();
}

// Plain-ASCII candidates whose compile log holds raw bytes (a #line file name, a #pragma message
// with \xff escapes) used to abort the server when it encoded the answer. The records come back,
// their logs valid UTF-8 with the exact bytes in compile.log_base64.
TEST_F(HostileTest, ACompileLogWithRawBytesIsAnswered) {
  const std::string relu = source_file("kernels/known_good/relu.cu", KBRL_SOURCE_DIR);
  const Json items = {
      {{"task_id", 19}, {"candidate", relu + "#pragma message(\"\\xff\\xfe\")\n"}},
      {{"task_id", 19},
       {"candidate", "// kbrl: launch k grid=1 block=32 args=in:x,out:y\n#line 1 \"\\xff.cu\"\n"
                     "extern \"C\" __global__ void k(const float* x, float* y) { nonsense }\n"}}};
  const RawAnswer answer = send(post_request("/v1/evaluate", Json{{"items", items}}.dump(), auth()));
  ASSERT_EQ(answer.status, 200) << answer.text.substr(0, 500);
  const Json records = Json::parse(answer.body())["records"];
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1]["outcome"], "compile_error");
  bool exact = false;
  for (const Json& r : records)
    if (r["compile"].contains("log_base64"))
      exact = exact || base64_decode(r["compile"]["log_base64"].get<std::string>()).find('\xff') != std::string::npos;
  EXPECT_TRUE(exact) << records.dump().substr(0, 2000);
  expect_alive();
  // The rollout log holds them too, each on one line of UTF-8.
  std::ifstream in(dir_ / "log" / "rollouts.jsonl", std::ios::binary);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(is_valid_utf8(log));
}

// The bearer scheme is case-insensitive (RFC 7235, 2.1): `bearer` used to be a 401.
TEST_F(HostileTest, TheBearerSchemeIsReadInAnyCase) {
  for (const char* scheme : {"Bearer ", "bearer ", "BEARER ", "bEaReR   "})
    EXPECT_EQ(send(get_request("/v1/tasks", std::string("Authorization: ") + scheme + kToken + "\r\n")).status, 200)
        << scheme;
  for (const std::string& bad : {std::string("Basic ") + kToken, std::string("Bearer"), std::string("Bearer ") + kToken + "x",
                                std::string("Bearerx ") + kToken, std::string("bearer")})
    EXPECT_EQ(send(get_request("/v1/tasks", "Authorization: " + bad + "\r\n")).status, 401) << bad;
  expect_alive();
}

}  // namespace
}  // namespace kbrl::serving::testing
