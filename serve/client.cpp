#include "client.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <atomic>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include <kbrl/error.h>
#include <harness/evaluator.h>  // count_harness_errors
#include <harness/record/json_text.h>
#include <kbrl/http_client.h>

namespace kbrl::serving {
namespace {

using Json = nlohmann::json;

/// The server's error object, or a description of a body that is not one.
std::string describe_error(const HttpResponse& response, bool* retryable) {
  const Json body = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    const Json& e = body["error"];
    *retryable = e.value("retryable", false);
    std::string text = fmt::format("{} {}: {}", response.status, e.value("code", "?"), e.value("message", ""));
    if (e.contains("field")) text += fmt::format(" (field {})", e["field"].get<std::string>());
    return text;
  }
  *retryable = response.status == 429 || response.status >= 500;  // e.g. a proxy's 502 when a server is gone
  return fmt::format("HTTP {} with a body that is not a kbrl error: {}", response.status,
                     response.body.substr(0, 200));
}

}  // namespace

std::string read_token_file(const std::string& path) {
  if (path.empty()) return {};
  std::ifstream in(path, std::ios::binary);
  KBRL_CHECK_INPUT(in.good(), "cannot read the token file '{}'", path);
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  KBRL_CHECK_INPUT(token.size() >= 16, "the token in '{}' is {} characters: use at least 16 (e.g. openssl rand -hex 32)",
                   path, token.size());
  return token;
}

std::vector<std::string> parse_server_urls(const std::string& text) {
  std::vector<std::string> urls;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string url = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!url.empty() && url.back() == '/') url.pop_back();
    KBRL_CHECK_INPUT(url.starts_with("http://") && url.size() > 7,
                     "'{}' is not a kbrl serve URL: give http://host:port (several separated by commas)", url);
    urls.push_back(std::move(url));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KBRL_CHECK_INPUT(!urls.empty(), "no server URL given");
  return urls;
}

struct Client::Impl {
  ClientOptions options;
  std::unique_ptr<HttpClient> http;
  std::atomic<size_t> next{0};  // the URL the next request starts with (spread over the list)
  std::atomic<int> retries{0};

  std::vector<std::string> headers() const {
    std::vector<std::string> h;
    if (!options.token.empty()) h.push_back("Authorization: Bearer " + options.token);
    if (!options.client_name.empty()) h.push_back("X-Kbrl-Client: " + options.client_name);
    return h;
  }

  /// One request with retries over the URLs; returns the 2xx body as JSON.
  Json request(const std::string& path, const std::string* body) {
    const size_t first = next++;
    double wait = options.backoff_seconds;
    std::vector<std::string> failures;
    for (int attempt = 0; attempt < options.attempts; ++attempt) {
      const std::string& base = options.urls[(first + attempt) % options.urls.size()];
      std::string failure;
      try {
        const HttpResponse response =
            body ? http->post_json(base + path, *body, headers()) : http->get(base + path, headers());
        if (response.status >= 200 && response.status < 300) {
          Json j = Json::parse(response.body, nullptr, /*allow_exceptions=*/false);
          if (!j.is_discarded()) return j;
          failure = fmt::format("{}: a 2xx answer that is not JSON", base);
        } else {
          bool retryable = false;
          const std::string what = describe_error(response, &retryable);
          if (!retryable) throw InputError(fmt::format("kbrl serve at {} refused the request: {}", base, what));
          failure = fmt::format("{}: {}", base, what);
        }
      } catch (const HttpError& e) {
        failure = e.what();  // refused, timed out, reset: try the next URL
      }
      failures.push_back(std::move(failure));
      ++retries;
      if (attempt + 1 < options.attempts) {
        std::this_thread::sleep_for(std::chrono::duration<double>(wait));
        wait = std::min(wait * 2, 5.0);
      }
    }
    throw Error(fmt::format("no kbrl server answered {} after {} tries over {} URL(s); last: {}", path,
                            options.attempts, options.urls.size(), failures.empty() ? "" : failures.back()));
  }
};

Client::Client(ClientOptions options) : impl_(std::make_unique<Impl>()) {
  KBRL_CHECK_INPUT(!options.urls.empty(), "a kbrl serve client needs at least one URL");
  KBRL_CHECK_INPUT(options.attempts >= 1, "attempts must be at least 1");
  impl_->options = std::move(options);
  HttpOptions http;
  http.timeout_seconds = impl_->options.timeout_seconds;
  http.connect_timeout_seconds = 5;
  http.retries = 0;  // retried here, over the URLs
  http.max_concurrent = 64;
  http.max_response_bytes = 1u << 30;
  impl_->http = std::make_unique<HttpClient>(http);
}

Client::~Client() = default;

std::vector<EvalRecord> Client::evaluate(const nlohmann::json& items) {
  KBRL_CHECK_INPUT(items.is_array() && !items.empty(), "evaluate needs a non-empty array of items");
  Json doc = {{"items", items}};
  keep_exact_bytes(doc);  // a model's output need not be UTF-8: its exact bytes travel as base64
  const std::string body = doc.dump();
  const Json answer = impl_->request("/v1/evaluate", &body);
  KBRL_CHECK_INPUT(answer.contains("records") && answer["records"].is_array() &&
                       answer["records"].size() == items.size(),
                   "the server answered {} records for {} items", answer.value("records", Json::array()).size(),
                   items.size());
  std::vector<EvalRecord> records;
  records.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Json& r = answer["records"][i];
    // An item the server could not read (its place holds the error): a bug of the caller's items.
    KBRL_CHECK_INPUT(!r.contains("error"), "the server could not read item {}: {}", i,
                     r["error"].value("message", r["error"].dump()));
    records.push_back(record_from_json(r));
  }
  count_harness_errors(std::count_if(records.begin(), records.end(),
                                     [](const EvalRecord& r) { return r.outcome == Outcome::harness_error; }));
  return records;
}

nlohmann::json Client::get(const std::string& path) { return impl_->request(path, nullptr); }

int Client::retries() const { return impl_->retries; }

}  // namespace kbrl::serving
