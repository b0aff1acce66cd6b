// The endpoint policy against a fake server (fake_http_server.h) that answers in llama.cpp's and
// vLLM's shapes: request bodies, log-prob parsing, seeds and reproducibility, spec parsing, retries,
// the failure messages and the response log. No model, no network; small backoffs keep it fast.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <unistd.h>
#include <set>

#include <nlohmann/json.hpp>
#include <policies/endpoint_policy.h>
#include <reference/task_registry.h>

#include "endpoint_testing.h"
#include "fake_model_servers.h"

namespace kbrl {
namespace {

using nlohmann::json;
using namespace kbrl::testing;

TaskSpec relu() { return task_spec(19, Scale::small); }

EndpointOptions options_for(const std::string& url) {
  EndpointOptions o;
  o.url = url;
  o.max_tokens = 64;
  o.http.retries = 2;
  o.http.backoff_seconds = 0.01;
  o.http.timeout_seconds = 10;
  return o;
}

std::vector<double> expected_logprobs(const std::string& text, bool eos) {
  std::vector<double> out;
  for (size_t i = 0; i < text.size(); ++i) out.push_back(fake_logprob(text.substr(0, i + 1)));
  if (eos) out.push_back(fake_logprob(text + "\x01"));
  return out;
}

TEST(EndpointPolicy, LlamaCppSamplingRequestsAndLogprobs) {
  FakeHttpServer server(llama_server);
  auto o = options_for(server.url() + "/v1/");
  o.stop = {"\n\n"};
  EndpointPolicy policy(o);
  EXPECT_EQ(policy.server_kind(), ServerKind::llamacpp);  // GET /props answered
  EXPECT_EQ(policy.name(), "endpoint:127.0.0.1:" + std::to_string(server.port()));
  const auto samples = policy.sample(relu(), 4, 0.7, 42);
  ASSERT_EQ(samples.size(), 4u);
  const Prompt prompt = build_prompt(relu(), o.prompt);
  const auto requests = server.requests("/v1/chat/completions");
  ASSERT_EQ(requests.size(), 4u);
  std::set<uint32_t> seeds;
  for (const auto& r : requests) {
    const json b = json::parse(r.body);
    seeds.insert(b.at("seed").get<uint32_t>());
    EXPECT_EQ(b.at("top_k"), 0);
    EXPECT_EQ(b.at("min_p"), 0.0);
    EXPECT_EQ(b.at("top_p"), 1.0);
    EXPECT_EQ(b.at("temperature"), 0.7);
    EXPECT_EQ(b.at("max_tokens"), 64);
    EXPECT_EQ(b.at("logprobs"), true);
    EXPECT_EQ(b.at("top_logprobs"), 1);
    EXPECT_EQ(b.at("post_sampling_probs"), false);
    EXPECT_EQ(b.at("cache_prompt"), false);
    EXPECT_EQ(b.at("stop"), json::array({"\n\n"}));
    EXPECT_FALSE(b.contains("model"));  // "" = the server's only model
    ASSERT_EQ(b.at("messages").size(), 2u);
    EXPECT_EQ(b["messages"][0].at("content"), prompt.system);
    EXPECT_EQ(b["messages"][1].at("content"), prompt.user);
    EXPECT_TRUE(r.authorization.empty() || has(r.authorization, "Bearer"));
  }
  std::set<uint32_t> expected;
  for (int i = 0; i < 4; ++i) expected.insert(endpoint_sample_seed(42, i));
  EXPECT_EQ(seeds, expected);
  for (int i = 0; i < 4; ++i) {
    const Sample& s = samples[static_cast<size_t>(i)];
    const std::string text = fake_answer(endpoint_sample_seed(42, i));
    EXPECT_EQ(s.text, text);
    EXPECT_EQ(s.kind, ActionKind::text);
    EXPECT_EQ(s.task_id, 19);
    EXPECT_EQ(s.finish_reason, "stop");
    EXPECT_EQ(s.prompt_version, prompt.version);
    EXPECT_EQ(s.logprobs, expected_logprobs(text, true));  // the end token's log-prob included
    ASSERT_EQ(s.tokens.size(), text.size() + 1);
    EXPECT_EQ(s.tokens.front(), 1000 + static_cast<unsigned char>(text[0]));
    EXPECT_EQ(s.tokens.back(), kEos);
    EXPECT_NEAR(s.logprob(), std::accumulate(s.logprobs.begin(), s.logprobs.end(), 0.0), 1e-12);
  }
  // Sample i does not depend on n or on what ran before; the same seed gives the same samples.
  const auto again = policy.sample(relu(), 2, 0.7, 42);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].text, samples[0].text);
  EXPECT_EQ(again[1].logprobs, samples[1].logprobs);
  EXPECT_NE(policy.sample(relu(), 1, 0.7, 43)[0].text, samples[0].text);
}

TEST(EndpointPolicy, CompletionsApiGreedyAndConcurrencyLimit) {
  FakeHttpServer server([](const Request& r) {
    Reply reply = llama_server(r);
    if (r.path == "/v1/completions") reply.delay_seconds = 0.15;
    return reply;
  });
  auto o = options_for(server.url());
  o.api = EndpointApi::completions;
  o.server = ServerKind::llamacpp;
  o.max_tokens = 5;
  o.http.max_concurrent = 2;
  EndpointPolicy policy(o);
  const auto samples = policy.sample(relu(), 6, 1.0, 1);
  EXPECT_TRUE(server.requests("/props").empty());  // the kind was given
  const auto requests = server.requests("/v1/completions");
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_EQ(json::parse(requests[0].body).at("prompt"), build_prompt(relu(), o.prompt).text());
  EXPECT_EQ(json::parse(requests[0].body).at("logprobs"), 1);
  EXPECT_EQ(server.max_in_flight(), 2);
  for (const auto& s : samples) {
    EXPECT_EQ(s.finish_reason, "length");
    EXPECT_EQ(s.text.size(), 5u);
    EXPECT_EQ(s.logprobs, expected_logprobs(s.text, false));
  }
  // temperature 0: one greedy request, its answer n times.
  const auto greedy = policy.sample(relu(), 3, 0.0, 9);
  const auto all = server.requests("/v1/completions");
  ASSERT_EQ(all.size(), 7u);
  EXPECT_EQ(json::parse(all.back().body).at("temperature"), 0.0);
  ASSERT_EQ(greedy.size(), 3u);
  EXPECT_EQ(greedy[0].text, greedy[2].text);
  EXPECT_EQ(greedy[0].logprobs, greedy[2].logprobs);
}

TEST(EndpointPolicy, LlamaCppScoresTextByForcedDecoding) {
  FakeHttpServer server(llama_server);
  EndpointPolicy policy(options_for(server.url()));
  const auto sampled = policy.sample(relu(), 2, 1.0, 5);
  const std::vector<std::string> texts = {sampled[0].text, sampled[1].text, "ab", ""};
  const auto scores = policy.score_text(relu(), texts);
  ASSERT_EQ(scores.size(), 4u);
  EXPECT_EQ(scores[0], sampled[0].logprobs);  // re-scoring reproduces the sampling-time log-probs
  EXPECT_EQ(scores[1], sampled[1].logprobs);
  EXPECT_EQ(scores[2], expected_logprobs("ab", true));
  EXPECT_EQ(scores[3], expected_logprobs("", true));
  bool seen_ab = false, seen_empty = false;
  for (const auto& r : server.requests("/tokenize")) {
    const json b = json::parse(r.body);
    EXPECT_EQ(b.at("add_special"), false);
    EXPECT_EQ(b.at("parse_special"), false);
  }
  for (const auto& r : server.requests("/v1/chat/completions")) {
    const json b = json::parse(r.body);
    if (!b.contains("grammar")) continue;
    EXPECT_EQ(b.at("temperature"), 0.0);
    EXPECT_FALSE(b.contains("stop"));
    EXPECT_EQ(b.at("top_k"), 0);
    if (b["grammar"] == "root ::= <[1097]> <[1098]>") {
      seen_ab = true;
      EXPECT_EQ(b.at("max_tokens"), 3);
    }
    if (b["grammar"] == "root ::= \"\"") seen_empty = true;
  }
  EXPECT_TRUE(seen_ab && seen_empty);
}

TEST(EndpointPolicy, VllmShapes) {
  FakeHttpServer server(vllm_server);
  auto o = options_for(server.url());
  o.model = "m";
  {
    EndpointPolicy policy(o);  // auto: no /props -> openai conventions
    EXPECT_EQ(policy.server_kind(), ServerKind::openai);
    EXPECT_EQ(policy.name(), "endpoint:m");
    const auto s = policy.sample(relu(), 1, 1.0, 3)[0];
    const json b = json::parse(server.requests("/v1/chat/completions").back().body);
    EXPECT_FALSE(b.contains("top_k") || b.contains("cache_prompt") || b.contains("return_tokens_as_token_ids"));
    EXPECT_EQ(b.at("model"), "m");
    EXPECT_EQ(s.logprobs, expected_logprobs(s.text, false));
    EXPECT_TRUE(s.tokens.empty());  // token strings, no ids
  }
  o.server = ServerKind::vllm;
  {
    EndpointPolicy policy(o);  // chat: ids from token_id:N; scoring through /tokenize + prompt_logprobs
    const auto s = policy.sample(relu(), 1, 1.0, 3)[0];
    EXPECT_EQ(json::parse(server.requests("/v1/chat/completions").back().body).at("return_tokens_as_token_ids"), true);
    ASSERT_EQ(s.tokens.size(), s.text.size());
    EXPECT_EQ(s.tokens[0], 1000 + static_cast<unsigned char>(s.text[0]));
    const Prompt p = build_prompt(relu(), o.prompt);
    const std::string head = "<system>" + p.system + "</s><user>" + p.user + "</s>";
    const auto score = policy.score_text(relu(), {"ab"})[0];
    EXPECT_EQ(score, (std::vector<double>{fake_logprob(head + "<assistant>a"), fake_logprob(head + "<assistant>ab")}));
  }
  o.api = EndpointApi::completions;
  {
    EndpointPolicy policy(o);  // completions: token_logprobs; scoring by echo
    const auto s = policy.sample(relu(), 1, 1.0, 4)[0];
    EXPECT_EQ(s.logprobs, expected_logprobs(s.text, false));
    EXPECT_EQ(s.tokens.size(), s.text.size());
    const std::string prompt = build_prompt(relu(), o.prompt).text();
    const auto score = policy.score_text(relu(), {"héllo"})[0];
    std::vector<double> expected;
    std::string prefix = prompt;
    for (const auto& cp : code_points("héllo")) expected.push_back(fake_logprob(prefix += cp));
    EXPECT_EQ(score, expected);  // the text's tokens only, found by text_offset (code points)
    const json b = json::parse(server.requests("/v1/completions").back().body);
    EXPECT_EQ(b.at("echo"), true);
  }
}

TEST(EndpointPolicy, RetriesAfter503And429) {
  std::atomic<int> calls{0};
  FakeHttpServer server([&](const Request& r) {
    if (r.path == "/v1/chat/completions") {
      const int k = calls++;
      if (k < 2) return Reply{503, R"({"error":{"message":"loading model"}})"};
      if (k == 2) return Reply{429, R"({"error":{"message":"slow down"}})", {"Retry-After: 1"}};
    }
    return llama_server(r);
  });
  auto o = options_for(server.url());
  o.http.retries = 3;
  EndpointPolicy policy(o);
  policy.server_kind();
  const auto start = std::chrono::steady_clock::now();
  const auto s = policy.sample(relu(), 1, 1.0, 11);
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(calls.load(), 4);
  EXPECT_GE(elapsed, 0.95);  // Retry-After: 1 honoured (the backoff alone is ~0.07 s)
  EXPECT_EQ(s[0].text, fake_answer(endpoint_sample_seed(11, 0)));
  // Out of retries: the final status becomes an error that quotes the server.
  calls = -10;
  const auto msg = message_of<Error>([&] { policy.sample(relu(), 1, 1.0, 12); });
  EXPECT_TRUE(has(msg, "HTTP 503") && has(msg, "4 tries") && has(msg, "loading model")) << msg;
}

TEST(EndpointPolicy, ServerDownIsAnHttpErrorThatSaysWhatToDo) {
  const int port = FakeHttpServer::unused_port();
  ::setenv("KBRL_TEST_ENDPOINT_KEY", "sk-secret-123", 1);
  auto o = options_for("http://127.0.0.1:" + std::to_string(port));
  o.key_env = "KBRL_TEST_ENDPOINT_KEY";
  o.server = ServerKind::llamacpp;
  EndpointPolicy policy(o);
  const auto msg = message_of<HttpError>([&] { policy.sample(relu(), 2, 1.0, 1); });
  EXPECT_TRUE(has(msg, "127.0.0.1:" + std::to_string(port) + "/v1/chat/completions")) << msg;
  EXPECT_TRUE(has(msg, "3 tries")) << msg;
  EXPECT_TRUE(has(msg, "onnect")) << msg;  // curl: "Couldn't connect to server"
  EXPECT_TRUE(has(msg, "start the server or fix --policy endpoint:URL")) << msg;
  EXPECT_FALSE(has(msg, "sk-secret-123")) << msg;
  // A timeout is retried too, then reported.
  FakeHttpServer slow([](const Request& r) {
    Reply reply = llama_server(r);
    reply.delay_seconds = 0.6;
    return reply;
  });
  auto s = options_for(slow.url());
  s.server = ServerKind::llamacpp;
  s.http.timeout_seconds = 0.2;
  s.http.retries = 1;
  EndpointPolicy slow_policy(s);
  const auto timeout = message_of<HttpError>([&] { slow_policy.sample(relu(), 1, 1.0, 1); });
  EXPECT_TRUE(has(timeout, "2 tries") && has(timeout, "imed out")) << timeout;
  EXPECT_EQ(slow.requests("/v1/chat/completions").size(), 2u);
}

TEST(EndpointPolicy, ServerErrorsBecomeClearErrors) {
  FakeHttpServer vllm(vllm_server);
  auto o = options_for(vllm.url());
  o.model = "nope";
  EndpointPolicy unknown(o);
  auto msg = message_of<InputError>([&] { unknown.sample(relu(), 1, 1.0, 1); });
  EXPECT_TRUE(has(msg, "The model `nope` does not exist.") && has(msg, "GET " + vllm.url() + "/v1/models")) << msg;

  std::string reply_body;
  int status = 200;
  FakeHttpServer server([&](const Request& r) {
    if (r.path == "/v1/chat/completions") return Reply{status, reply_body};
    return llama_server(r);
  });
  EndpointPolicy policy(options_for(server.url()));
  status = 400;
  reply_body = R"({"error":{"code":400,"message":"Field 'max_tokens': Value must be between -1 <= value","type":"invalid_request_error"}})";
  msg = message_of<InputError>([&] { policy.sample(relu(), 1, 1.0, 1); });
  EXPECT_TRUE(has(msg, "HTTP 400") && has(msg, "Field 'max_tokens'")) << msg;
  EXPECT_EQ(server.requests("/v1/chat/completions").size(), 1u);  // 4xx is not retried

  status = 200;
  reply_body = R"({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"hi"},"logprobs":null}],"usage":{"completion_tokens":2}})";
  msg = message_of<Error>([&] { policy.sample(relu(), 1, 1.0, 1); });
  EXPECT_TRUE(has(msg, "no per-token log-probs") && has(msg, "--max-logprobs")) << msg;

  reply_body = R"({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assist)";
  msg = message_of<Error>([&] { policy.sample(relu(), 1, 1.0, 1); });
  EXPECT_TRUE(has(msg, "not valid JSON") && has(msg, server.url())) << msg;

  msg = message_of<InputError>([&] { policy.logprob(relu(), {{0, 1}}); });
  EXPECT_TRUE(has(msg, "score_text")) << msg;
}

TEST(EndpointPolicy, ResponseLogAnswersARerunWithTheServerDown) {
  const auto dir = std::filesystem::temp_directory_path() / ("kbrl_endpoint_log_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("KBRL_TEST_ENDPOINT_KEY", "sk-secret-456", 1);
  std::vector<Sample> first;
  std::vector<std::vector<double>> first_scores;
  std::string url;
  EndpointOptions o;
  {
    FakeHttpServer server(llama_server);
    url = server.url();
    o = options_for(url);
    o.key_env = "KBRL_TEST_ENDPOINT_KEY";
    o.response_log = dir / "responses.jsonl";
    EndpointPolicy policy(o);
    first = policy.sample(relu(), 3, 1.0, 77);
    first_scores = policy.score_text(relu(), {first[0].text});
    EXPECT_EQ(server.requests("/v1/chat/completions").front().authorization, "Bearer sk-secret-456");
  }
  std::ifstream in(o.response_log);
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_FALSE(has(log, "sk-secret-456"));
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 6);  // kind, 3 samples, tokenize, forced decode
  { std::ofstream(o.response_log, std::ios::app) << R"({"key":"torn)"; }  // a killed run's last line
  EndpointPolicy rerun(o);  // nothing listens at `url` any more
  const auto again = rerun.sample(relu(), 3, 1.0, 77);
  ASSERT_EQ(again.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(again[i].text, first[i].text);
    EXPECT_EQ(again[i].logprobs, first[i].logprobs);
    EXPECT_EQ(again[i].tokens, first[i].tokens);
  }
  EXPECT_EQ(rerun.score_text(relu(), {first[0].text}), first_scores);
  const auto msg = message_of<HttpError>([&] { rerun.sample(relu(), 1, 1.0, 78); });  // not logged
  EXPECT_TRUE(has(msg, url)) << msg;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kbrl
