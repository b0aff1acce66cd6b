#pragma once
// The endpoint policy (docs/design.md, Policies): a language model behind an OpenAI-compatible server
// (vLLM, SGLang, llama.cpp's llama-server) writes the action as text. Each sample is one request
// with its own seed (derived from the call's seed and the sample's index), so a sample does not
// depend on how many others are drawn or in what order they finish. Per-token log-probs are the
// model's own (temperature 1, before any sampling filter), as the servers report them; they give
// the sequence log-prob, mean log-prob and surprisal that selection and the probes use.
//
// Server conventions handled:
// - sampling: /v1/chat/completions (`logprobs: true`) or /v1/completions (`logprobs: 1`); for pure
//   temperature sampling llama.cpp also gets `top_k: 0, min_p: 0` (its defaults filter).
// - scoring a given text: vLLM and SGLang return prompt log-probs (`echo` + `logprobs` on
//   /v1/completions; `prompt_logprobs`); llama.cpp has none, so a text is scored by forced
//   decoding: its token ids from `/tokenize`, a grammar that admits exactly those tokens,
//   temperature 0, and the log-probs of the tokens it is forced through.
// - an API key from the environment variable `key_env` (default KBRL_API_KEY, else
//   OPENAI_API_KEY) as a bearer token; never logged, never written.
// - llama.cpp: requests also send `post_sampling_probs: false` (log-probs of the softmax of the raw
//   logits, server-context.cpp populate_token_probs) and `cache_prompt: false` (a reused prompt
//   cache changes the logits, so the same seed would not give the same sample). It omits the
//   log-prob of a token that ends inside a multi-byte UTF-8 character (process_token), in
//   sampling and scoring alike. vLLM reports the model's own log-probs with its default
//   --logprobs-mode raw_logprobs; with ServerKind::vllm requests ask for token ids
//   (`return_tokens_as_token_ids`).
//   llama.cpp ignores `echo` (it answers as if it were absent), so the scoring method follows the
//   server kind, not the server's reaction. vLLM chat text is scored from `prompt_logprobs` of the
//   conversation with the text as the assistant's unfinished answer (`continue_final_message`),
//   its start found with POST /tokenize.
// Every finished response is appended to `response_log` (JSONL, when set; appended and flushed a
// line at a time) under a key of its request (a hash of the URL without credentials, the model
// and the request body; the API key travels in a header and is in neither), and a request found
// there is answered from it: a run that stops (server down, killed) loses nothing it received and
// a rerun resumes, auto-detection included.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <kbrl/enum_names.h>

#include <kbrl/http_client.h>
#include "policy.h"
#include <kernels/prompt.h>

namespace kbrl {

enum class EndpointApi { chat, completions };
/// Whose conventions to use for scoring text and sampling extras. `auto` asks the server once
/// (llama.cpp answers GET /props; vLLM and SGLang do not).
enum class ServerKind { auto_detect, openai, vllm, sglang, llamacpp };
template <>
struct EnumNames<EndpointApi> {
  static constexpr std::string_view what = "endpoint API";
  static constexpr EnumEntry<EndpointApi> entries[] = {{EndpointApi::chat, "chat"},
                                                       {EndpointApi::completions, "completions"}};
};
template <>
struct EnumNames<ServerKind> {
  static constexpr std::string_view what = "server kind";
  static constexpr EnumEntry<ServerKind> entries[] = {{ServerKind::auto_detect, "auto"},
                                                      {ServerKind::openai, "openai"},
                                                      {ServerKind::vllm, "vllm"},
                                                      {ServerKind::sglang, "sglang"},
                                                      {ServerKind::llamacpp, "llamacpp"}};
};
std::string_view to_string(EndpointApi);
std::string_view to_string(ServerKind);

struct EndpointOptions {
  std::string url;    // the server's base URL, e.g. http://127.0.0.1:8080 (a trailing /v1 is fine)
  std::string model;  // the served model (or adapter) name; "" = the server's only model
  EndpointApi api = EndpointApi::chat;
  ServerKind server = ServerKind::auto_detect;
  int max_tokens = 1024;
  double top_p = 1.0;
  std::vector<std::string> stop;
  std::string key_env;  // "" = KBRL_API_KEY, else OPENAI_API_KEY
  HttpOptions http;
  PromptOptions prompt;
  std::filesystem::path response_log;  // "" = none
};

/// Parses a policy spec: `endpoint:<url>[,key=value...]` with keys model, api (chat|completions),
/// server (auto|openai|vllm|sglang|llamacpp), max_tokens, top_p, stop (repeatable), key_env,
/// concurrency, timeout (seconds), retries, style (body|file), shots, system (reasoning|none),
/// log (the response log's file). In values, `\,` is a comma, `\\` a backslash, `\n` and `\t`
/// a newline and a tab (e.g. `stop=\n\n`). Throws InputError naming the bad part and the valid
/// keys.
EndpointOptions parse_endpoint_spec(std::string_view spec);

/// The seed of sample `index` of a sample() call with `seed`: the (index+1)-th output of the
/// splitmix64 stream seeded with `seed`, reduced to [0, 2^31 - 1) (llama.cpp takes 32-bit seeds
/// and reads 0xFFFFFFFF as "random").
uint32_t endpoint_sample_seed(uint64_t seed, int index);

class EndpointPolicy final : public Policy {
 public:
  explicit EndpointPolicy(EndpointOptions options);
  ~EndpointPolicy() override;

  /// "endpoint:<model>" (or "endpoint:<host:port>" when no model is named).
  std::string name() const override;

  /// `n` text samples, sample i drawn with seed endpoint_sample_seed(seed, i) in a request of its
  /// own (at most HttpOptions::max_concurrent at once). temperature 0 is greedy: one request, its
  /// answer repeated n times. Log-probs are one per token the server reports, the end-of-sequence
  /// token included where it reports one (llama.cpp does when the model stops by itself).
  /// Throws HttpError when the server cannot be reached after the retries, InputError for an
  /// unknown model or a request the server rejects (4xx, its message quoted), Error for a response
  /// without log-probs or that is not valid JSON. Responses that arrived before a failure are in
  /// the response log.
  std::vector<Sample> sample(const TaskSpec& task, int n, double temperature, uint64_t seed) override;

  /// Knob tokens mean nothing to a language model: throws InputError pointing at score_text.
  std::vector<std::vector<double>> logprob(const TaskSpec& task, const std::vector<std::vector<int>>& tokens,
                                           double temperature = 1.0) override;

  /// Per-token log-probs of `texts` as answers to the task's prompt under the served model, the
  /// same quantity sample() reports. llama.cpp (forced decoding): the text's tokens (as /tokenize
  /// splits it) and then the end-of-sequence token the grammar forces, so re-scoring a sample that
  /// stopped by itself reproduces its log-probs; a sample cut by max_tokens gets one more (its
  /// end). vLLM/SGLang (prompt log-probs): the text's tokens only. A sampled text whose tokens are
  /// not /tokenize's split of it scores differently (a different token sequence).
  std::vector<std::vector<double>> score_text(const TaskSpec& task, const std::vector<std::string>& texts) override;

  const EndpointOptions& options() const { return options_; }
  /// The server kind in use (after auto-detection).
  ServerKind server_kind();

 private:
  struct Impl;
  EndpointOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl
