#pragma once
// Fake language-model servers for the endpoint policy's tests, on FakeHttpServer: a llama-server
// (GET /props, /tokenize, generation sampled from the seed or forced by a `<[id]>` grammar, its
// logprobs.content shape with ids and the end token) and a vLLM (no /props, unknown models 404,
// token_id:N strings, echo with text_offset, prompt_logprobs, /tokenize with a toy chat template).
// The fake model has one token per byte (id 1000 + byte, end-of-sequence 2); a token's log-prob
// depends on the text up to it, so sampling and re-scoring agree as they must on a real server.
#include <algorithm>
#include <cstdint>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fake_http_server.h"

namespace kbrl::testing {

using nlohmann::json;
using Reply = FakeHttpServer::Reply;
using Request = FakeHttpServer::Request;

// The fake model: one token per byte (id 1000 + byte), end-of-sequence id 2; the log-prob of a
// token depends on the text before it and the token, so sampling and re-scoring agree.
inline constexpr int kEos = 2;
inline double fake_logprob(std::string_view prefix_and_token) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : prefix_and_token) h = (h ^ c) * 1099511628211ULL;
  return -0.05 - static_cast<double>(h % 400) / 100.0;
}
inline std::string fake_answer(uint64_t seed) { return "y = max(x, 0); // " + std::to_string(seed % 100000); }

// A generated text as llama.cpp reports it (logprobs.content with ids; the end token when it stops).
inline json llama_reply(const json& body, const std::string& path, const std::string& text, bool eos) {
  json content = json::array();
  for (size_t i = 0; i < text.size(); ++i)
    content.push_back({{"id", 1000 + static_cast<unsigned char>(text[i])},
                       {"token", std::string(1, text[i])},
                       {"bytes", json::array()},
                       {"logprob", fake_logprob(text.substr(0, i + 1))},
                       {"top_logprobs", json::array()}});
  if (eos)
    content.push_back({{"id", kEos}, {"token", ""}, {"bytes", json::array()}, {"logprob", fake_logprob(text + "\x01")},
                       {"top_logprobs", json::array()}});
  json choice = {{"index", 0}, {"finish_reason", eos ? "stop" : "length"}, {"logprobs", {{"content", content}}}};
  if (path == "/v1/chat/completions") choice["message"] = {{"role", "assistant"}, {"content", text}};
  else choice["text"] = text;
  return {{"choices", json::array({choice})},
          {"model", body.value("model", "fake.gguf")},
          {"usage", {{"completion_tokens", content.size()}}}};
}

// A fake llama-server: /props, /tokenize (bytes), generation (sampled from the seed, or forced by
// a `<[id]>` grammar).
inline Reply llama_server(const Request& r) {
  if (r.method == "GET" && r.path == "/props")
    return {200, json{{"default_generation_settings", json::object()}, {"total_slots", 1}}.dump()};
  const json body = json::parse(r.body);
  if (r.path == "/tokenize") {
    json ids = json::array();
    for (unsigned char c : body.at("content").get<std::string>()) ids.push_back(1000 + c);
    return {200, json{{"tokens", ids}}.dump()};
  }
  if (r.path != "/v1/chat/completions" && r.path != "/v1/completions")
    return {404, R"({"error":{"code":404,"message":"File Not Found","type":"not_found_error"}})"};
  const int max_tokens = body.at("max_tokens").get<int>();
  std::string text;
  if (body.contains("grammar")) {
    const std::string g = body["grammar"].get<std::string>();
    static const std::regex token(R"(<\[(\d+)\]>)");
    for (auto it = std::sregex_iterator(g.begin(), g.end(), token); it != std::sregex_iterator(); ++it)
      text += static_cast<char>(std::stoi((*it)[1]) - 1000);
  } else {
    text = fake_answer(body.at("seed").get<uint64_t>());
  }
  const bool eos = static_cast<int>(text.size()) < max_tokens;
  if (!eos) text.resize(static_cast<size_t>(max_tokens));
  return {200, llama_reply(body, r.path, text, eos).dump()};
}

// Code points of a UTF-8 string, one string each.
inline std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80 || out.empty()) out.emplace_back(1, static_cast<char>(c));
    else out.back() += static_cast<char>(c);
  return out;
}

// The fake vLLM's chat template and tokenizer (one token per byte).
inline std::string vllm_template(const json& body) {
  std::string s;
  const auto& m = body.at("messages");
  for (size_t i = 0; i < m.size(); ++i) {
    s += "<" + m[i].at("role").get<std::string>() + ">" + m[i].at("content").get<std::string>();
    if (!(i + 1 == m.size() && body.value("continue_final_message", false))) s += "</s>";
  }
  if (body.value("add_generation_prompt", true)) s += "<assistant>";
  return s;
}

// A fake vLLM: no /props; vLLM's response shapes, echo and prompt_logprobs, token_id:N strings.
inline Reply vllm_server(const Request& r) {
  if (r.method == "GET") return {404, R"({"detail":"Not Found"})"};
  const json body = json::parse(r.body);
  if (body.contains("model") && body["model"] != "m")
    return {404, json{{"object", "error"}, {"message", "The model `" + body["model"].get<std::string>() +
                                                           "` does not exist."},
                      {"type", "NotFoundError"}, {"code", 404}}.dump()};
  if (r.path == "/tokenize") {
    json ids = json::array();
    for (unsigned char c : vllm_template(body)) ids.push_back(1000 + c);
    return {200, json{{"tokens", ids}, {"count", ids.size()}}.dump()};
  }
  const bool as_ids = body.value("return_tokens_as_token_ids", false);
  auto token_name = [&](const std::string& t) {
    return as_ids ? "token_id:" + std::to_string(1000 + static_cast<unsigned char>(t[0])) : t;
  };
  if (r.path == "/v1/chat/completions" && body.contains("prompt_logprobs")) {
    const std::string p = vllm_template(body);
    json pl = json::array({nullptr});
    for (size_t i = 1; i < p.size(); ++i)
      pl.push_back({{std::to_string(1000 + static_cast<unsigned char>(p[i])),
                     {{"logprob", fake_logprob(p.substr(0, i + 1))}, {"rank", 1}}}});
    return {200, json{{"choices", json::array({{{"message", {{"content", "x"}}}, {"finish_reason", "length"}}})},
                      {"prompt_logprobs", pl}}.dump()};
  }
  if (r.path == "/v1/completions" && body.value("echo", false)) {
    const auto cps = code_points(body.at("prompt").get<std::string>() + "!");
    json tokens = json::array(), values = json::array(), offsets = json::array();
    std::string prefix;
    for (size_t i = 0; i < cps.size(); ++i) {
      prefix += cps[i];
      tokens.push_back(cps[i]);
      values.push_back(i == 0 ? json(nullptr) : json(fake_logprob(prefix)));
      offsets.push_back(i);
    }
    json lp = {{"tokens", tokens}, {"token_logprobs", values}, {"text_offset", offsets}, {"top_logprobs", nullptr}};
    return {200, json{{"choices", json::array({{{"text", prefix}, {"logprobs", lp}, {"finish_reason", "length"}}})}}
                     .dump()};
  }
  std::string text = fake_answer(body.at("seed").get<uint64_t>());
  text.resize(std::min(text.size(), static_cast<size_t>(body.at("max_tokens").get<int>())));
  json choice = {{"index", 0}, {"finish_reason", "length"}};
  if (r.path == "/v1/chat/completions") {
    json content = json::array();
    for (size_t i = 0; i < text.size(); ++i)
      content.push_back({{"token", token_name(text.substr(i, 1))}, {"logprob", fake_logprob(text.substr(0, i + 1))},
                         {"bytes", json::array()}, {"top_logprobs", json::array()}});
    choice["message"] = {{"role", "assistant"}, {"content", text}};
    choice["logprobs"] = {{"content", content}};
  } else {
    json tokens = json::array(), values = json::array(), offsets = json::array();
    for (size_t i = 0; i < text.size(); ++i) {
      tokens.push_back(token_name(text.substr(i, 1)));
      values.push_back(fake_logprob(text.substr(0, i + 1)));
      offsets.push_back(i);
    }
    choice["text"] = text;
    choice["logprobs"] = {{"tokens", tokens}, {"token_logprobs", values}, {"text_offset", offsets}};
  }
  return {200, json{{"choices", json::array({choice})}}.dump()};
}

}  // namespace kbrl::testing
