#pragma once
// The C++ client of `kbrl serve` (docs/serve.md): evaluates items on one server or several (a list
// of URLs, e.g. one per GPU node), retrying what the server marks retryable (queue full, draining,
// a lost worker) and moving to the next URL when one is unreachable, so a server that dies midway
// costs a retry, never an item. Used by `kbrl eval --server` and the experiments' --evaluator.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <harness/record/eval_record.h>

namespace kbrl::serving {

struct ClientOptions {
  std::vector<std::string> urls;  // "http://host:port", tried in turn
  std::string token;              // bearer token ("" = none)
  std::string client_name;        // X-Kbrl-Client: the fair-share identity ("" = the peer address)
  double timeout_seconds = 3600;  // one request, answer included
  int attempts = 12;              // tries of one request over all URLs
  double backoff_seconds = 0.2;   // first wait after a failed try; doubled each time, at most 5 s
};

/// The bearer token in `path` (its first line, trailing whitespace dropped; "" for an empty path).
/// InputError when the file cannot be read or the token is shorter than 16 characters.
std::string read_token_file(const std::string& path);

/// "URL[,URL...]" into the list (each must start with http://); InputError otherwise.
std::vector<std::string> parse_server_urls(const std::string& text);

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// POST /v1/evaluate: one record per item, in order. Throws InputError when a server rejects the
  /// request (4xx but 429: the items are wrong, with the server's message and field), Error when no
  /// try over every URL got an answer.
  std::vector<EvalRecord> evaluate(const nlohmann::json& items);
  /// GET `path` (e.g. "/v1/tasks") as JSON, with the same retries.
  nlohmann::json get(const std::string& path);

  /// Tries that failed and were retried so far (on this or another URL).
  int retries() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl::serving
