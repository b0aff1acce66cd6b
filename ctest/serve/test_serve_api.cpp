// The evaluate request's parsing: every malformed part is a 400 or 413 naming its field; text that
// yields no candidate is a format error, not an HTTP error; an item's overrides reach its settings.
#include <cmath>

#include <gtest/gtest.h>

#include <harness/record/json_text.h>

#include <serve/api.h>
#include <serve/client.h>

#include <cstdio>
#include <fstream>

namespace kbrl::serving {
namespace {

using Json = nlohmann::json;

const char* kRelu =
    "// kbrl: launch relu_forward grid=cdiv(numel(x),256) block=256 args=in:x,out:y,i64:numel(x)\n"
    "extern \"C\" __global__ void relu_forward(const float* x, float* y, long long n) {\n"
    "  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];\n"
    "}\n";

/// The error parse_evaluate_request throws for `body` (fails the test when it throws none).
ApiError error_of(const std::string& body, const ServeLimits& limits = {}) {
  try {
    parse_evaluate_request(body, EvalSettings{}, limits);
  } catch (const ApiException& e) {
    return e.error();
  }
  ADD_FAILURE() << "no error for " << body.substr(0, 200);
  return {};
}

TEST(ServeApi, ParsesEachKindOfItemWithItsOverrides) {
  const Json body = {{"items",
                      {{{"task_id", 19}, {"candidate", kRelu}},
                       {{"task_id", 19}, {"text", "I would rather not write a kernel.\n```\n```"}},
                       {{"task_id", 19}, {"text", std::string("```cuda\n") + kRelu + "```\n"}, {"mode", "full"},
                        {"tolerance", "legacy"}, {"inputs", "kernelbench"}, {"reward", "composite"}}}}};
  const std::vector<PreparedItem> items = parse_evaluate_request(body.dump(), EvalSettings{});
  ASSERT_EQ(items.size(), 3u);
  ASSERT_TRUE(items[0].prepared.real.candidate.has_value());
  EXPECT_EQ(items[0].prepared.real.raw, kRelu);
  EXPECT_TRUE(items[0].prepared.real.format_error.empty());
  EXPECT_FALSE(items[1].prepared.real.candidate.has_value());
  EXPECT_FALSE(items[1].prepared.real.format_error.empty());
  ASSERT_TRUE(items[2].prepared.real.candidate.has_value());
  EXPECT_EQ(items[2].prepared.real.candidate->launches, items[0].prepared.real.candidate->launches);
  EXPECT_EQ(items[2].settings.mode, TimingMode::full);
  EXPECT_EQ(items[2].settings.atol, 1e-2);
  EXPECT_EQ(items[2].settings.inputs, InputChecks::kernelbench);
  EXPECT_EQ(items[2].settings.reward.kind, RewardKind::composite);
  EXPECT_EQ(items[0].settings_id, items[1].settings_id);
  EXPECT_NE(items[0].settings_id, items[2].settings_id);
}

// A model's output need not be UTF-8 (a token can end inside a character): kbrl's client sends it
// as UTF-8 with its exact bytes in text_base64, and the server evaluates those bytes.
TEST(ServeApi, TextThatIsNotUtf8ArrivesWithItsExactBytes) {
  const std::string text = std::string("```cuda\n// \xBF\xE2\x82\n") + kRelu + "```\n";
  Json body = {{"items", {{{"task_id", 19}, {"text", text}}}}};
  EXPECT_THROW(body.dump(), nlohmann::json::type_error);
  keep_exact_bytes(body);
  const std::vector<PreparedItem> items = parse_evaluate_request(body.dump(), EvalSettings{});
  ASSERT_EQ(items.size(), 1u);
  EXPECT_FALSE(items[0].error.has_value());
  EXPECT_EQ(items[0].prepared.real.raw, text);
  ASSERT_TRUE(items[0].prepared.real.candidate.has_value());
  // Bytes that are not base64 are the item's error, in its place; the other items go on.
  const Json bad = {{"items", {{{"task_id", 19}, {"text", "x"}, {"text_base64", "%%%"}}, {{"task_id", 19}, {"text", text}}}}};
  EXPECT_THROW(parse_evaluate_request(bad.dump(), EvalSettings{}), nlohmann::json::type_error);
  Json sent = bad;
  keep_exact_bytes(sent);
  const std::vector<PreparedItem> answered = parse_evaluate_request(sent.dump(), EvalSettings{});
  ASSERT_EQ(answered.size(), 2u);
  ASSERT_TRUE(answered[0].error.has_value());
  EXPECT_NE(answered[0].error->message.find("base64"), std::string::npos) << answered[0].error->message;
  EXPECT_FALSE(answered[1].error.has_value());
  EXPECT_EQ(answered[1].prepared.real.raw, text);
}

TEST(ServeApi, ARewardSpecCarriesItsParameters) {
  const Json body = {{"items",
                      {{{"task_id", 19}, {"candidate", kRelu}, {"reward", "composite"}},
                       {{"task_id", 19}, {"candidate", kRelu}, {"reward", "composite:0.2,1,0.25,4"}},
                       {{"task_id", 19}, {"candidate", kRelu}, {"reward", "threshold:1.5"}}}}};
  const std::vector<PreparedItem> items = parse_evaluate_request(body.dump(), EvalSettings{});
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[1].settings.reward.alpha, 0.2);
  EXPECT_EQ(items[1].settings.reward.r_max, 4.0);
  EXPECT_EQ(items[2].settings.reward.kind, RewardKind::threshold);
  EXPECT_EQ(items[2].settings.reward.threshold, 1.5);
  // Other parameters are other settings: their records never answer each other.
  EXPECT_NE(items[0].settings_id, items[1].settings_id);
  EXPECT_NE(items[1].settings_id, items[2].settings_id);
  const ApiError bad = error_of(R"({"items": [{"task_id": 19, "candidate": "x", "reward": "threshold:0"}]})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.message.find("threshold"), std::string::npos) << bad.message;
}

TEST(ServeApi, AConfigurationOutsideTheTasksSpaceIsAFormatError) {
  const Json legal = {{"block", 256}, {"vec", 4}, {"items_per_thread", 2}, {"grid", "waves"}, {"cache_hint", "none"},
                      {"precision", "fp32"}, {"fast_math", "off"}, {"tail", "safe"}};
  Json unknown = legal;
  unknown["no_such_knob"] = 4;
  Json huge = legal;
  huge["block"] = 1e30;
  const Json body = {{"items", {{{"task_id", 19}, {"config", legal}}, {{"task_id", 19}, {"config", unknown}},
                                {{"task_id", 19}, {"config", huge}}}}};
  const std::vector<PreparedItem> items = parse_evaluate_request(body.dump(), EvalSettings{});
  ASSERT_EQ(items.size(), 3u);
  ASSERT_TRUE(items[0].prepared.real.candidate.has_value()) << items[0].prepared.real.format_error;
  EXPECT_EQ(items[0].prepared.info.kind, ActionKind::knobs);
  EXPECT_NE(items[0].prepared.real.raw.find("block=256"), std::string::npos);
  for (size_t i : {1u, 2u}) {
    EXPECT_FALSE(items[i].prepared.real.candidate.has_value());
    EXPECT_FALSE(items[i].prepared.real.format_error.empty());
  }
}

// KernelBench's dataset rows name a task by level and problem_id; its answers are Python ModelNew
// files: imported, or an unsupported_format record, never a 400.
TEST(ServeApi, KernelBenchNamesAndAnswers) {
  const Json body = {{"items", {{{"level", 1}, {"problem_id", 19}, {"candidate", kRelu}},
                                {{"problem_id", 19}, {"text", "```python\nclass ModelNew(nn.Module):\n    pass\n```"}}}}};
  const std::vector<PreparedItem> items = parse_evaluate_request(body.dump(), EvalSettings{});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].task_id, 19);
  EXPECT_TRUE(items[0].prepared.real.candidate.has_value()) << items[0].prepared.real.format_error;
  EXPECT_FALSE(items[1].prepared.real.candidate.has_value());
  EXPECT_EQ(items[1].prepared.real.failure, Outcome::unsupported_format);
  EXPECT_NE(items[1].prepared.real.format_error.find("no CUDA"), std::string::npos) << items[1].prepared.real.format_error;
  EXPECT_EQ(error_of(R"({"items": [{"level": 2, "problem_id": 19, "candidate": "x"}]})").field, "items[0].level");
  EXPECT_EQ(error_of(R"({"items": [{"task_id": 19, "problem_id": 19, "candidate": "x"}]})").status, 400);
}

// OpenRLHF's remote reward model request: the response is the query without its prompt, the task
// the label.
TEST(ServeApi, OpenRlhfQueriesBecomeTextItems) {
  const std::string prompt = "<|user|>write relu<|assistant|>";
  const Json body = {{"query", {prompt + "```cuda\n" + kRelu + "```", "no prompt here"}},
                     {"prompts", {prompt, "another prompt"}},
                     {"labels", {"19", 20}}};
  const std::vector<PreparedItem> items = parse_openrlhf_request(body.dump(), EvalSettings{});
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].task_id, 19);
  EXPECT_EQ(items[0].prepared.real.raw, std::string("```cuda\n") + kRelu + "```");  // the prompt stripped
  EXPECT_TRUE(items[0].prepared.real.candidate.has_value()) << items[0].prepared.real.format_error;
  EXPECT_EQ(items[1].task_id, 20);
  EXPECT_EQ(items[1].prepared.real.raw, "no prompt here");
  auto error = [](const Json& b) {
    try {
      parse_openrlhf_request(b.dump(), EvalSettings{});
    } catch (const ApiException& e) {
      return e.error();
    }
    ADD_FAILURE() << "no error for " << b.dump();
    return ApiError{};
  };
  EXPECT_EQ(error({{"query", {"x"}}}).field, "labels");
  EXPECT_EQ(error({{"query", {"x", "y"}}, {"labels", {19}}}).field, "labels");
  EXPECT_EQ(error({{"query", {"x"}}, {"labels", {"relu"}}}).field, "labels[0]");
  EXPECT_EQ(error({{"query", {1}}, {"labels", {19}}}).field, "query[0]");
  EvalRecord ok, broken;
  ok.reward = 1.5;
  ok.outcome = Outcome::ok;
  broken.reward = std::nan("");
  broken.outcome = Outcome::compile_error;
  const Json answer = openrlhf_rewards_json({ok, broken});
  EXPECT_EQ(answer["rewards"], Json::array({1.5, 0.0}));
  EXPECT_EQ(answer["outcomes"], Json::array({"ok", "compile_error"}));
}

TEST(ServeApi, MalformedRequestsAre400sNamingTheField) {
  struct Case {
    std::string body;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"{", ""},
      {"[1,2]", ""},
      {R"({"items": []})", "items"},
      {R"({"items": {}})", "items"},
      {R"({"items": [{"task_id": 19, "text": "x"}], "extra": 1})", "extra"},
      {R"({"items": [7]})", "items[0]"},
      {R"({"items": [{"text": "x"}]})", "items[0].task_id"},
      {R"({"items": [{"task_id": "19", "text": "x"}]})", "items[0].task_id"},
      {R"({"items": [{"task_id": 19.5, "text": "x"}]})", "items[0].task_id"},
      {R"({"items": [{"task_id": 0, "text": "x"}]})", "items[0].task_id"},
      {R"({"items": [{"task_id": 101, "text": "x"}]})", "items[0].task_id"},
      {R"({"items": [{"task_id": -3, "text": "x"}]})", "items[0].task_id"},
      {R"({"items": [{"task_id": 19}]})", "items[0]"},
      {R"({"items": [{"task_id": 19, "text": "x", "candidate": "y"}]})", "items[0]"},
      {R"({"items": [{"task_id": 19, "text": 5}]})", "items[0].text"},
      {R"({"items": [{"task_id": 19, "text": "x", "mode": "slow"}]})", "items[0].mode"},
      {R"({"items": [{"task_id": 19, "text": "x", "tolerance": 0.1}]})", "items[0].tolerance"},
      {R"({"items": [{"task_id": 19, "text": "x", "reward": "money"}]})", "items[0].reward"},
      {R"({"items": [{"task_id": 19, "text": "x", "inputs": "all"}]})", "items[0].inputs"},
      {R"({"items": [{"task_id": 19, "text": "x", "shell": "rm -rf /"}]})", "items[0].shell"},
      {R"({"items": [{"task_id": 19, "config": 3}]})", "items[0].config"},
      {R"({"items": [{"task_id": 19, "config": {"x": [1]}}]})", "items[0].config.x"},
      {R"({"items": [{"task_id": 19, "config": {"block": 1.5}}]})", "items[0].config.block"},
      {R"({"items": [{"task_id": 19, "config": "block=256"}]})", "items[0].config"},
      {R"({"items": [{"task_id": 19, "text": 1}, {"task_id": 19, "text": "x", "mode": 1}]})", "items[0].text"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body);
    const ApiError e = error_of(c.body);
    EXPECT_EQ(e.status, 400);
    EXPECT_EQ(e.code, "bad_request");
    EXPECT_FALSE(e.retryable);
    EXPECT_EQ(e.field, c.field);
    EXPECT_FALSE(e.message.empty());
    if (!c.field.empty()) {
      EXPECT_NE(e.message.find(c.field), std::string::npos) << e.message;
    }
  }
}

// In a batch with a readable item, an unreadable one is not the request's 400 but that item's error.
TEST(ServeApi, AnUnreadableItemInABatchCarriesItsError) {
  const auto items = parse_evaluate_request(
      R"({"items": [{"task_id": 19, "text": "x"}, {"task_id": 19, "text": "x", "mode": 1}, {"problem_id": 0, "text": "x"}]})",
      EvalSettings{});
  ASSERT_EQ(items.size(), 3u);
  EXPECT_FALSE(items[0].error.has_value());
  ASSERT_TRUE(items[1].error.has_value());
  EXPECT_EQ(items[1].error->field, "items[1].mode");
  ASSERT_TRUE(items[2].error.has_value());
  EXPECT_EQ(items[2].error->field, "items[2].problem_id");
  EvalRecord ok;
  ok.outcome = Outcome::ok;
  ok.reward = 1.5;
  const std::vector<ItemAnswer> answers = {ok, *items[1].error};
  const Json records = records_json(answers, false)["records"];
  EXPECT_EQ(records[0]["outcome"], "ok");
  EXPECT_EQ(records[1]["error"]["field"], "items[1].mode");
  EXPECT_EQ(records_json(answers, true)["results"][1]["error"]["code"], "bad_request");
  const Json rewards = openrlhf_rewards_json(answers);
  EXPECT_EQ(rewards["rewards"], Json::array({1.5, 0.0}));
  EXPECT_EQ(rewards["outcomes"][1], "error");
}

TEST(ServeApi, OversizedFieldsAre400sAndOversizedBodies413s) {
  ServeLimits limits;
  limits.max_items = 2;
  limits.max_text_bytes = 100;
  limits.max_body_bytes = 4096;
  EXPECT_EQ(error_of(R"({"items": [{"task_id": 19, "text": "a"}, {"task_id": 19, "text": "b"}, {"task_id": 19, "text": "c"}]})",
                     limits).status, 400);
  const ApiError text = error_of(Json{{"items", {{{"task_id", 19}, {"text", std::string(101, 'x')}}}}}.dump(), limits);
  EXPECT_EQ(text.status, 400);
  EXPECT_EQ(text.code, "too_large");
  EXPECT_EQ(text.field, "items[0].text");
  EXPECT_EQ(error_of(std::string(5000, ' '), limits).status, 413);
}

TEST(ServeApi, ErrorJsonHasCodeMessageFieldAndRetryable) {
  const Json j = error_json(bad_request("items[2].mode: unknown", "items[2].mode"));
  EXPECT_EQ(j["error"]["code"], "bad_request");
  EXPECT_EQ(j["error"]["field"], "items[2].mode");
  EXPECT_EQ(j["error"]["retryable"], false);
  EXPECT_FALSE(error_json(not_found("x"))["error"].contains("field"));
}

TEST(ServeApi, TasksAndPrompts) {
  const Json tasks = tasks_json()["tasks"];
  ASSERT_EQ(tasks.size(), 100u);
  EXPECT_EQ(tasks[18]["id"], 19);
  EXPECT_EQ(tasks[18]["name"], "19_ReLU");
  EXPECT_FALSE(tasks[18]["splits"].empty());
  const Json prompt = prompt_json(19, "body", Scale::kernelbench);
  EXPECT_EQ(prompt["task_id"], 19);
  EXPECT_NE(prompt["user"].get<std::string>().find("ReLU"), std::string::npos);
  try {
    prompt_json(19, "poem", Scale::kernelbench);
    ADD_FAILURE() << "no error for style poem";
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().status, 400);
  }
  try {
    prompt_json(555, "body", Scale::kernelbench);
    ADD_FAILURE() << "no error for task 555";
  } catch (const ApiException& e) {
    EXPECT_EQ(e.error().status, 404);
  }
}

TEST(ServeApi, TokenFilesAndServerUrls) {
  const std::string path = ::testing::TempDir() + "kbrl-token-test";
  std::ofstream(path) << "0123456789abcdef0123\r\n";
  EXPECT_EQ(read_token_file(path), "0123456789abcdef0123");
  std::ofstream(path) << "short\n";
  EXPECT_THROW(read_token_file(path), InputError);
  EXPECT_THROW(read_token_file(path + "-missing"), InputError);
  EXPECT_EQ(read_token_file(""), "");
  std::remove(path.c_str());
  EXPECT_EQ(parse_server_urls("http://a:1/,http://b:2"), (std::vector<std::string>{"http://a:1", "http://b:2"}));
  EXPECT_THROW(parse_server_urls("https://a:1"), InputError);
  EXPECT_THROW(parse_server_urls("http://a:1,"), InputError);
}

}  // namespace
}  // namespace kbrl::serving
