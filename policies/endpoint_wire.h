#pragma once
// The endpoint policy's (endpoint_policy.h) and the endpoint judge's (experiments/judge.h) wire:
// the JSON they send to and read from OpenAI-compatible servers, the URL and key conventions, and
// how they turn the servers' failures into kbrl errors. No I/O here, so the shapes are testable on
// their own.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "endpoint_policy.h"
#include <kbrl/http_client.h>
#include <kernels/prompt.h>

namespace kbrl::endpoint_wire {

/// The path of a generation request: "/v1/chat/completions" or "/v1/completions".
std::string_view generation_path(EndpointApi api);

/// What one generation request asks for.
struct Generate {
  double temperature = 1.0;
  double top_p = 1.0;
  int max_tokens = 1;
  uint32_t seed = 0;
  std::vector<std::string> stop;
  std::string grammar;  // llama.cpp only: a GBNF grammar (forced decoding); "" = none
};

/// The request body: the prompt (chat messages or the prompt text), the sampling settings, per-token
/// log-probs of the generated tokens and, for llama.cpp, the settings that make its sampling pure
/// temperature sampling (no top-k/min-p/penalties), report the model's own log-probs
/// (post_sampling_probs false) and keep it reproducible (cache_prompt false).
nlohmann::json generation_body(const EndpointOptions& options, ServerKind kind, const Prompt& prompt,
                               const Generate& generate);

/// The chat messages of a prompt (the system message only when there is one).
nlohmann::json chat_messages(const Prompt& prompt);

/// One generated answer as the server reported it.
struct Generation {
  std::string text;
  std::vector<int> tokens;       // token ids when every entry carries one, else empty
  std::vector<double> logprobs;  // one per reported token; null (log 0) reads as -infinity
  std::string finish_reason;
};

/// Reads choices[0] of a chat or completions response in the llama.cpp (`logprobs.content[]`
/// with ids), OpenAI/vLLM chat (`logprobs.content[]`) or vLLM completions (`logprobs.tokens`,
/// `token_logprobs`) shape. Throws Error when the shape is not one of these, and an Error that says
/// how to enable them when the log-probs are missing.
Generation parse_generation(const nlohmann::json& response, const std::string& where);

/// A GBNF grammar that admits exactly `ids`, in order (llama.cpp's `<[id]>` token syntax).
std::string forced_grammar(const std::vector<int>& ids);

/// Token ids of a llama.cpp or vLLM /tokenize response (`tokens`). Throws Error otherwise.
std::vector<int> parse_tokenize(const nlohmann::json& response, const std::string& where);

/// vLLM/SGLang: /v1/completions with `echo` returns the prompt's log-probs; this body scores
/// `text` after the prompt text (one generated token, ignored).
nlohmann::json echo_body(const EndpointOptions& options, const Prompt& prompt, std::string_view text);
/// The log-probs of the tokens that start inside `text` (after `prompt_text`) in an echo response
/// (`logprobs.token_logprobs` with `text_offset`, in characters as vLLM counts them).
std::vector<double> parse_echo(const nlohmann::json& response, std::string_view prompt_text,
                               std::string_view text, const std::string& where);

/// vLLM chat scoring: the conversation with `text` as the assistant's unfinished answer, asking
/// for the prompt's log-probs (`prompt_logprobs`), and the /tokenize bodies that find where the
/// answer starts and its token ids.
nlohmann::json chat_score_body(const EndpointOptions& options, const Prompt& prompt, std::string_view text);
nlohmann::json chat_tokenize_body(const EndpointOptions& options, const Prompt& prompt,
                                  const std::string* text);
/// The log-probs of prompt positions [start, start + ids.size()) of a `prompt_logprobs` response.
std::vector<double> parse_prompt_logprobs(const nlohmann::json& response, size_t start,
                                          const std::vector<int>& ids, const std::string& where);

/// The server's error message in any of the usual shapes ({"error": {"message"}}, {"message"},
/// {"error": "..."}, {"detail"}), else the start of the body.
std::string server_message(const std::string& body);

/// Turns a response that is not 200 into the error endpoint_policy.h promises: 404 naming the
/// model -> InputError (unknown model, see GET /v1/models), other 4xx -> InputError quoting the
/// server, the rest -> Error. `url` is the request's URL, `model` the configured model name.
[[noreturn]] void throw_status(const HttpResponse& response, const std::string& url, const std::string& model);

/// Parses a 200 response's body; Error (naming the URL, the size and the parse error) when it is
/// not complete, valid JSON.
nlohmann::json parse_body(const HttpResponse& response, const std::string& url);

/// `url` without "user:password@" (what messages and log keys may show).
std::string redact(const std::string& url);
/// The server's root: no trailing slash, no trailing /v1.
std::string base_url(std::string url);
/// The Authorization header of the API key: from the environment variable `key_env` (InputError
/// when it is named and not set), else KBRL_API_KEY, else OPENAI_API_KEY; none without a key.
std::vector<std::string> auth_headers(const EndpointOptions& options);

/// A stable 128-bit hash (hex), the response log's key: the same on every platform and run.
std::string stable_hash(std::string_view data);

}  // namespace kbrl::endpoint_wire
