// The endpoint wire's bodies and answers (endpoint_wire.h): generation, tokenization, scoring by echo
// or by prompt log-probs. The servers' errors, URL and key conventions are in
// endpoint_wire_conventions.cpp.
#include "endpoint_wire.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <kbrl/error.h>

namespace kbrl::endpoint_wire {

using nlohmann::json;

std::string_view generation_path(EndpointApi api) {
  return api == EndpointApi::chat ? "/v1/chat/completions" : "/v1/completions";
}

json chat_messages(const Prompt& prompt) {
  json messages = json::array();
  if (!prompt.system.empty()) messages.push_back({{"role", "system"}, {"content", prompt.system}});
  messages.push_back({{"role", "user"}, {"content", prompt.user}});
  return messages;
}

json generation_body(const EndpointOptions& options, ServerKind kind, const Prompt& prompt,
                     const Generate& generate) {
  json b = json::object();
  if (!options.model.empty()) b["model"] = options.model;
  if (options.api == EndpointApi::chat) {
    b["messages"] = chat_messages(prompt);
    b["logprobs"] = true;
    b["top_logprobs"] = 1;  // llama.cpp reports nothing for 0 (n_probs = top_logprobs)
  } else {
    b["prompt"] = prompt.text();
    b["logprobs"] = 1;  // llama.cpp: an alias of n_probs
  }
  b["max_tokens"] = generate.max_tokens;
  b["temperature"] = generate.temperature;
  b["top_p"] = generate.top_p;
  b["seed"] = generate.seed;
  b["stream"] = false;
  if (!generate.stop.empty()) b["stop"] = generate.stop;
  if (kind == ServerKind::llamacpp) {
    // llama.cpp's defaults filter (top_k 40, min_p 0.05): pure temperature sampling needs them off.
    b["top_k"] = 0;
    b["min_p"] = 0.0;
    b["typical_p"] = 1.0;
    b["top_n_sigma"] = -1.0;
    b["xtc_probability"] = 0.0;
    b["repeat_penalty"] = 1.0;
    b["presence_penalty"] = 0.0;
    b["frequency_penalty"] = 0.0;
    b["dry_multiplier"] = 0.0;
    b["mirostat"] = 0;
    // The log-probs of the model's own distribution (softmax of the raw logits), not of the
    // filtered, temperature-scaled one.
    b["post_sampling_probs"] = false;
    // A reused prompt cache changes the logits: every request evaluates its prompt afresh.
    b["cache_prompt"] = false;
    if (!generate.grammar.empty()) b["grammar"] = generate.grammar;
  } else {
    KBRL_ASSERT(generate.grammar.empty(), "grammars are for llama.cpp only");
  }
  if (kind == ServerKind::vllm) b["return_tokens_as_token_ids"] = true;
  return b;
}

namespace {

double logprob_value(const json& v, const std::string& where) {
  if (v.is_null()) return -std::numeric_limits<double>::infinity();  // log 0 serialized as null
  if (!v.is_number()) throw Error(fmt::format("{}: a log-prob is not a number: {}", where, v.dump()));
  return v.get<double>();
}

// A token id from an entry's "id", or a "token_id:N" token string (vLLM's
// return_tokens_as_token_ids); -1 when there is none.
int token_id(const json& entry, const json* token) {
  if (entry.is_object()) {
    auto id = entry.find("id");
    if (id != entry.end() && id->is_number_integer()) return id->get<int>();
  }
  if (token && token->is_string()) {
    const std::string& s = token->get_ref<const std::string&>();
    constexpr std::string_view prefix = "token_id:";
    if (s.starts_with(prefix) && s.size() > prefix.size() &&
        std::all_of(s.begin() + prefix.size(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return std::stoi(s.substr(prefix.size()));
  }
  return -1;
}

[[noreturn]] void no_logprobs(const std::string& where) {
  throw Error(fmt::format(
      "{}: the response carries no per-token log-probs (choices[0].logprobs is missing or null), and "
      "the endpoint policy needs them. The request asked for them (chat: logprobs=true, top_logprobs=1; "
      "completions: logprobs=1): use a server that honours these fields (vLLM: start it with "
      "--max-logprobs 1 or more, the default is 20; llama.cpp's llama-server reports them; SGLang: "
      "return_logprob), or a proxy that passes them through",
      where));
}

size_t code_points(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

const json& first_choice(const json& r, const std::string& where) {
  if (!r.is_object()) throw Error(fmt::format("{}: the response is not a JSON object", where));
  auto choices = r.find("choices");
  if (choices == r.end() || !choices->is_array() || choices->empty())
    throw Error(fmt::format("{}: the response has no choices[0] (keys: {})", where,
                            fmt::join([&] {
                              std::vector<std::string> keys;
                              for (auto it = r.begin(); it != r.end(); ++it) keys.push_back(it.key());
                              return keys;
                            }(), ", ")));
  return (*choices)[0];
}

}  // namespace

Generation parse_generation(const json& r, const std::string& where) {
  const json& c = first_choice(r, where);
  Generation g;
  if (auto m = c.find("message"); m != c.end() && m->is_object()) {
    auto content = m->find("content");
    if (content != m->end() && content->is_string()) g.text = content->get<std::string>();
    else if (content != m->end() && !content->is_null())
      throw Error(fmt::format("{}: choices[0].message.content is not a string", where));
  } else if (auto t = c.find("text"); t != c.end() && t->is_string()) {
    g.text = t->get<std::string>();
  } else {
    throw Error(fmt::format("{}: choices[0] has neither message.content nor text", where));
  }
  if (auto f = c.find("finish_reason"); f != c.end() && f->is_string()) g.finish_reason = f->get<std::string>();

  auto lp = c.find("logprobs");
  if (lp == c.end() || lp->is_null()) {
    // llama.cpp sends null when nothing was generated.
    const json* usage = r.contains("usage") ? &r["usage"] : nullptr;
    if (usage && usage->is_object() && usage->value("completion_tokens", -1) == 0) return g;
    no_logprobs(where);
  }
  if (!lp->is_object()) throw Error(fmt::format("{}: choices[0].logprobs is not an object", where));
  bool all_ids = true;
  if (auto content = lp->find("content"); content != lp->end() && content->is_array()) {
    for (const auto& e : *content) {
      if (!e.is_object() || !e.contains("logprob"))
        throw Error(fmt::format("{}: an entry of choices[0].logprobs.content has no logprob", where));
      g.logprobs.push_back(logprob_value(e["logprob"], where));
      const int id = token_id(e, e.contains("token") ? &e["token"] : nullptr);
      all_ids = all_ids && id >= 0;
      g.tokens.push_back(id);
    }
  } else if (auto values = lp->find("token_logprobs"); values != lp->end() && values->is_array()) {
    const json* tokens = lp->contains("tokens") && (*lp)["tokens"].is_array() ? &(*lp)["tokens"] : nullptr;
    for (size_t i = 0; i < values->size(); ++i) {
      g.logprobs.push_back(logprob_value((*values)[i], where));
      const int id = tokens && i < tokens->size() ? token_id(json(), &(*tokens)[i]) : -1;
      all_ids = all_ids && id >= 0;
      g.tokens.push_back(id);
    }
  } else if (lp->contains("content") && (*lp)["content"].is_null()) {
    no_logprobs(where);
  } else {
    throw Error(fmt::format("{}: choices[0].logprobs has neither content[] nor token_logprobs[]: {:.200}", where,
                            lp->dump()));
  }
  if (!all_ids) g.tokens.clear();
  return g;
}

std::string forced_grammar(const std::vector<int>& ids) {
  if (ids.empty()) return "root ::= \"\"";
  std::string g = "root ::=";
  for (int id : ids) g += fmt::format(" <[{}]>", id);
  return g;
}

std::vector<int> parse_tokenize(const json& r, const std::string& where) {
  auto tokens = r.is_object() ? r.find("tokens") : r.end();
  if (!r.is_object() || tokens == r.end() || !tokens->is_array())
    throw Error(fmt::format("{}: the /tokenize response has no tokens[]", where));
  std::vector<int> ids;
  for (const auto& t : *tokens) {
    if (t.is_number_integer()) ids.push_back(t.get<int>());
    else if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) ids.push_back(t["id"].get<int>());
    else throw Error(fmt::format("{}: a token of the /tokenize response is not an id", where));
  }
  return ids;
}

json echo_body(const EndpointOptions& options, const Prompt& prompt, std::string_view text) {
  json b = json::object();
  if (!options.model.empty()) b["model"] = options.model;
  b["prompt"] = prompt.text() + std::string(text);
  b["max_tokens"] = 1;
  b["temperature"] = 0.0;
  b["logprobs"] = 1;
  b["echo"] = true;
  b["stream"] = false;
  return b;
}

std::vector<double> parse_echo(const json& r, std::string_view prompt_text, std::string_view text,
                               const std::string& where) {
  const json& c = first_choice(r, where);
  auto lp = c.find("logprobs");
  if (lp == c.end() || lp->is_null()) no_logprobs(where);
  if (!lp->is_object() || !lp->contains("token_logprobs") || !lp->contains("text_offset") ||
      !(*lp)["token_logprobs"].is_array() || !(*lp)["text_offset"].is_array() ||
      (*lp)["token_logprobs"].size() != (*lp)["text_offset"].size())
    throw Error(fmt::format("{}: the echo response has no matching logprobs.token_logprobs[] and text_offset[] "
                            "(scoring text this way needs vLLM or SGLang; llama.cpp is scored by forced decoding, "
                            "server=llamacpp)",
                            where));
  const size_t begin = code_points(prompt_text);
  const size_t end = begin + code_points(text);
  std::vector<double> out;
  const json& values = (*lp)["token_logprobs"];
  const json& offsets = (*lp)["text_offset"];
  for (size_t i = 0; i < values.size(); ++i) {
    if (!offsets[i].is_number_integer()) throw Error(fmt::format("{}: a text_offset is not an integer", where));
    const auto offset = offsets[i].get<int64_t>();
    if (offset >= static_cast<int64_t>(begin) && offset < static_cast<int64_t>(end))
      out.push_back(logprob_value(values[i], where));
  }
  return out;
}

json chat_score_body(const EndpointOptions& options, const Prompt& prompt, std::string_view text) {
  json b = json::object();
  if (!options.model.empty()) b["model"] = options.model;
  json messages = chat_messages(prompt);
  messages.push_back({{"role", "assistant"}, {"content", std::string(text)}});
  b["messages"] = std::move(messages);
  b["add_generation_prompt"] = false;
  b["continue_final_message"] = true;
  b["prompt_logprobs"] = 0;
  b["max_tokens"] = 1;
  b["temperature"] = 0.0;
  b["stream"] = false;
  return b;
}

json chat_tokenize_body(const EndpointOptions& options, const Prompt& prompt, const std::string* text) {
  json b = json::object();
  if (!options.model.empty()) b["model"] = options.model;
  json messages = chat_messages(prompt);
  if (text) messages.push_back({{"role", "assistant"}, {"content", *text}});
  b["messages"] = std::move(messages);
  b["add_generation_prompt"] = text == nullptr;
  b["continue_final_message"] = text != nullptr;
  return b;
}

std::vector<double> parse_prompt_logprobs(const json& r, size_t start, const std::vector<int>& ids,
                                          const std::string& where) {
  const json* pl = nullptr;
  if (r.is_object() && r.contains("prompt_logprobs")) pl = &r["prompt_logprobs"];
  else if (r.is_object() && r.contains("choices") && r["choices"].is_array() && !r["choices"].empty() &&
           r["choices"][0].is_object() && r["choices"][0].contains("prompt_logprobs"))
    pl = &r["choices"][0]["prompt_logprobs"];
  if (!pl || !pl->is_array())
    throw Error(fmt::format("{}: the response has no prompt_logprobs[] (vLLM's extension; scoring chat text needs "
                            "vLLM, or api=completions with echo)",
                            where));
  if (start + ids.size() > pl->size())
    throw Error(fmt::format("{}: prompt_logprobs has {} positions, the answer needs {}..{}", where, pl->size(),
                            start, start + ids.size()));
  std::vector<double> out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const json& e = (*pl)[start + i];
    const std::string key = std::to_string(ids[i]);
    if (!e.is_object() || !e.contains(key))
      throw Error(fmt::format("{}: prompt_logprobs[{}] has no entry for token {}", where, start + i, key));
    const json& v = e[key];
    out.push_back(logprob_value(v.is_object() ? v.value("logprob", json()) : v, where));
  }
  return out;
}

}  // namespace kbrl::endpoint_wire
