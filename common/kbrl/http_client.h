#pragma once
// A small HTTP/1.1 client over libcurl for the endpoint policy (and later the evaluator's client):
// JSON POST and GET with timeouts, retries with exponential backoff on refused connections, 5xx and
// 429 (honouring Retry-After), and a limit on concurrent requests shared by every thread using one
// client. Headers given by the caller (an API key) are sent, never logged or written anywhere.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <kbrl/error.h>

namespace kbrl {

struct HttpOptions {
  double timeout_seconds = 600;        // a whole request, response included
  double connect_timeout_seconds = 10;
  int retries = 4;                     // further tries after the first, on retryable failures
  double backoff_seconds = 0.5;        // first wait; doubled each try (jittered), at most 30 s
  int max_concurrent = 8;              // requests in flight at once over this client
  size_t max_response_bytes = 64 << 20;
};

struct HttpResponse {
  long status = 0;  // the HTTP status
  std::string body;
  int tries = 1;    // attempts it took
};

/// Thrown when no HTTP response arrived (refused, timed out, DNS, TLS) after every retry, or the
/// response was larger than allowed. The message names the URL (without credentials), the cause,
/// the number of tries and what to check.
class HttpError : public Error {
 public:
  using Error::Error;
};

class HttpClient {
 public:
  explicit HttpClient(HttpOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  /// POSTs `json_body` (Content-Type: application/json) with extra `headers` ("Name: value").
  /// Retries refused connections, timeouts, 5xx and 429; returns the final response whatever its
  /// status (the caller turns 4xx into its own error). Throws HttpError when nothing answered.
  HttpResponse post_json(const std::string& url, const std::string& json_body,
                         const std::vector<std::string>& headers = {});
  HttpResponse get(const std::string& url, const std::vector<std::string>& headers = {});

  const HttpOptions& options() const { return options_; }

 private:
  struct Impl;
  HttpOptions options_;
  std::unique_ptr<Impl> impl_;
};

/// Runs fn(0..count-1) on up to `max_concurrent` threads (the requests of a client in flight at
/// once); stops starting new calls after a failure and rethrows the failure of the lowest index.
void for_each_request(size_t count, int max_concurrent, const std::function<void(size_t)>& fn);

}  // namespace kbrl
