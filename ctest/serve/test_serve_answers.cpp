// kbrl serve's answers in their shapes, against a live server with the fake GPU worker: KernelBench's
// result fields and OpenRLHF's rewards on request, an unreadable item answered in its place while the
// others are evaluated, and every malformed request a JSON error.
#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include <serve/server.h>

#include "live_server.h"
#include "serve_testing.h"

namespace kbrl::serving {
namespace {

using Json = nlohmann::json;

// ?format=kernelbench answers KernelBench's result fields instead of kbrl's records, for a
// synchronous evaluate and for a done job.
TEST(Serve, KernelBenchResultFieldsOnRequest) {
  TempDir dir;
  TestServer server(dir.path());
  const Json items = {{"items", {{{"task_id", 19}, {"candidate", testing::relu_file()}}}}};
  const Json answer = post(server.url() + "/v1/evaluate?format=kernelbench", items);
  ASSERT_TRUE(answer.contains("results")) << answer.dump().substr(0, 300);
  EXPECT_FALSE(answer.contains("records"));
  const Json& result = answer["results"][0];
  EXPECT_EQ(result["compiled"], true);
  EXPECT_EQ(result["correctness"], true);  // the fake worker answers every candidate correct
  EXPECT_GT(result["runtime"].get<double>(), 0.0);
  EXPECT_EQ(result["metadata"]["kbrl_outcome"], "ok");
  const std::string id = post(server.url() + "/v1/evaluate?async=1", items, 202)["job"];
  Json job;
  for (int i = 0; i < 600 && job["status"] != "done"; ++i) {
    job = get(server.url() + "/v1/jobs/" + id + "?format=kernelbench");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(job["status"], "done") << job.dump().substr(0, 300);
  EXPECT_FALSE(job.contains("records"));
  EXPECT_EQ(job["results"][0]["correctness"], true);
  EXPECT_EQ(post(server.url() + "/v1/evaluate?format=xml", items, 400)["error"]["field"], "format");
  // OpenRLHF's remote reward model protocol: {"query", "prompts", "labels"} -> {"rewards"}.
  const Json rewards = post(server.url() + "/v1/openrlhf/reward",
                            {{"query", {"P```cuda\n" + testing::relu_file() + "```", "P no code"}},
                             {"prompts", {"P", "P"}}, {"labels", {"19", "19"}}});
  EXPECT_EQ(rewards["rewards"], Json::array({2.0, 0.0})) << rewards.dump();  // the fake worker: speedup 2
  EXPECT_EQ(rewards["outcomes"][1], "compile_error");
}

// An item that cannot be read (an unknown task, a bad value) is answered in its place with its error;
// the batch's other items are evaluated, synchronously, as a job and in KernelBench's format.
TEST(Serve, ABadItemIsAnsweredInItsPlaceAndTheOthersAreEvaluated) {
  TempDir dir;
  TestServer server(dir.path());
  const Json items = {{"items",
                       {{{"task_id", 19}, {"candidate", testing::relu_file()}},
                        {{"task_id", 999}, {"candidate", testing::relu_file()}},
                        {{"task_id", 19}, {"candidate", testing::relu_file()}, {"mode", "slow"}}}}};
  auto expect_answers = [](const Json& answers) {
    ASSERT_EQ(answers.size(), 3u) << answers.dump().substr(0, 300);
    EXPECT_FALSE(answers[0].contains("error")) << answers[0].dump().substr(0, 300);
    EXPECT_EQ(answers[1]["error"]["field"], "items[1].task_id");
    EXPECT_EQ(answers[1]["error"]["code"], "bad_request");
    EXPECT_EQ(answers[2]["error"]["field"], "items[2].mode");
  };
  const Json answer = post(server.url() + "/v1/evaluate", items);
  expect_answers(answer["records"]);
  EXPECT_EQ(answer["records"][0]["outcome"], "ok");
  const Json kernelbench = post(server.url() + "/v1/evaluate?format=kernelbench", items);
  expect_answers(kernelbench["results"]);
  EXPECT_EQ(kernelbench["results"][0]["correctness"], true);
  const std::string id = post(server.url() + "/v1/evaluate?async=1", items, 202)["job"];
  Json job;
  for (int i = 0; i < 600 && job["status"] != "done"; ++i) {
    job = get(server.url() + "/v1/jobs/" + id);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(job["status"], "done") << job.dump().substr(0, 300);
  expect_answers(job["records"]);
  // No item readable: the request is the 400 of its first item.
  const Json none = post(server.url() + "/v1/evaluate", {{"items", {items["items"][1], items["items"][2]}}}, 400);
  EXPECT_EQ(none["error"]["field"], "items[0].task_id");
}

TEST(Serve, BadRequestsGetJsonErrors) {
  TempDir dir;
  ServerOptions options;
  options.limits.max_body_bytes = 64 << 10;
  TestServer server(dir.path(), {}, options);
  auto expect_error = [](const HttpResponse& r, long status, const std::string& code) {
    EXPECT_EQ(r.status, status) << r.body;
    const Json j = Json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.body;
    EXPECT_EQ(j["error"]["code"], code) << r.body;
  };
  expect_error(http().post_json(server.url() + "/v1/evaluate", "{not json"), 400, "bad_request");
  expect_error(http().post_json(server.url() + "/v1/evaluate", R"({"items": [{"task_id": 19, "text": 1}]})"), 400,
               "bad_request");
  expect_error(http().post_json(server.url() + "/v1/evaluate?async=maybe", R"({"items": []})"), 400, "bad_request");
  expect_error(http().post_json(server.url() + "/v1/evaluate?debug=1", R"({"items": []})"), 400, "bad_request");
  expect_error(http().get(server.url() + "/v1/evaluate"), 405, "method_not_allowed");
  expect_error(http().get(server.url() + "/v1/nothing"), 404, "not_found");
  expect_error(http().get(server.url() + "/v1/tasks/0/prompt"), 404, "not_found");
  expect_error(http().get(server.url() + "/v1/tasks/abc/prompt"), 404, "not_found");
  expect_error(http().get(server.url() + "/v1/tasks/19/prompt?style=poem"), 400, "bad_request");
  expect_error(http().post_json(server.url() + "/v1/evaluate", std::string(100 << 10, ' ')), 413, "too_large");
  // The server is still there and answers.
  EXPECT_EQ(get(server.url() + "/healthz")["status"], "ok");
  EXPECT_EQ(get(server.url() + "/v1/tasks")["tasks"].size(), 100u);
  EXPECT_EQ(get(server.url() + "/v1/tasks/19/prompt?style=file")["task_id"], 19);
  EXPECT_EQ(get(server.url() + "/v1/openapi.json")["openapi"].get<std::string>().substr(0, 2), "3.");
}

}  // namespace
}  // namespace kbrl::serving
