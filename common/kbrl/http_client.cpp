#include "http_client.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include <curl/curl.h>
#include <kbrl/splitmix64.h>

namespace kbrl {
namespace {

// curl_global_init is not thread-safe: once per process, before any handle.
void global_init() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      throw Error("libcurl: curl_global_init failed");
  });
}

// The URL as error messages may show it: without "user:password@".
std::string redact_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t end = url.find_first_of("/?#", start);
  const size_t at = url.rfind('@', end == std::string::npos ? url.size() : end);
  if (at == std::string::npos || at < start) return url;
  return url.substr(0, start) + url.substr(at + 1);
}

struct Transfer {
  std::string body;
  size_t limit = 0;
  bool too_large = false;
  std::optional<double> retry_after;  // seconds, from a Retry-After header
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  if (t->body.size() + n > t->limit) {
    t->too_large = true;
    return 0;  // makes curl fail the transfer with CURLE_WRITE_ERROR
  }
  t->body.append(data, n);
  return n;
}

// Retry-After: delay-seconds or an HTTP date.
std::optional<double> parse_retry_after(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::strtod(std::string(value).c_str(), nullptr);
  const time_t when = curl_getdate(std::string(value).c_str(), nullptr);
  if (when < 0) return std::nullopt;
  return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * count;
  std::string_view line(data, n);
  // A new response (after a redirect or 100-continue) starts over.
  if (line.starts_with("HTTP/")) t->retry_after.reset();
  constexpr std::string_view name = "retry-after:";
  if (line.size() > name.size()) {
    bool match = true;
    for (size_t i = 0; i < name.size() && match; ++i)
      match = std::tolower(static_cast<unsigned char>(line[i])) == name[i];
    if (match) t->retry_after = parse_retry_after(line.substr(name.size()));
  }
  return n;
}

bool retryable(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_PARTIAL_FILE:
      return true;
    default:
      return false;
  }
}

bool retryable(long status) { return status == 429 || (status >= 500 && status <= 599); }

}  // namespace

struct HttpClient::Impl {
  std::mutex mutex;
  std::condition_variable cv;
  int in_flight = 0;
  std::atomic<uint64_t> jitter_state{0};

  // Holds one of max_concurrent places while alive.
  class Slot {
   public:
    Slot(Impl& impl, int limit) : impl_(impl) {
      std::unique_lock lock(impl_.mutex);
      impl_.cv.wait(lock, [&] { return impl_.in_flight < limit; });
      ++impl_.in_flight;
    }
    ~Slot() {
      {
        std::lock_guard lock(impl_.mutex);
        --impl_.in_flight;
      }
      impl_.cv.notify_one();
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;

   private:
    Impl& impl_;
  };

  HttpResponse request(const HttpOptions& options, const char* method, const std::string& url,
                       const std::string* body, const std::vector<std::string>& headers);

  // A uniform factor in [0.5, 1.5) for backoff jitter (thread-safe, no shared generator state).
  double jitter() {
    uint64_t s = jitter_state.fetch_add(0x9E3779B97F4A7C15ULL);
    return 0.5 + splitmix64_uniform01(s);
  }
};

HttpClient::HttpClient(HttpOptions options) : options_(options), impl_(std::make_unique<Impl>()) {
  KBRL_CHECK_INPUT(options_.timeout_seconds > 0, "HTTP timeout must be positive, got {}", options_.timeout_seconds);
  KBRL_CHECK_INPUT(options_.connect_timeout_seconds > 0, "HTTP connect timeout must be positive, got {}",
                   options_.connect_timeout_seconds);
  KBRL_CHECK_INPUT(options_.retries >= 0, "HTTP retries must be >= 0, got {}", options_.retries);
  KBRL_CHECK_INPUT(options_.backoff_seconds >= 0, "HTTP backoff must be >= 0, got {}", options_.backoff_seconds);
  KBRL_CHECK_INPUT(options_.max_concurrent >= 1, "HTTP concurrency must be >= 1, got {}", options_.max_concurrent);
  global_init();
  impl_->jitter_state = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                        reinterpret_cast<uintptr_t>(this);
}

HttpClient::~HttpClient() = default;

namespace {

struct Attempt {
  CURLcode code = CURLE_OK;
  std::string error;  // curl's message when code != OK
  Transfer transfer;
  long status = 0;
};

Attempt perform(const HttpOptions& options, const std::string& url, const std::string* body,
                const std::vector<std::string>& headers) {
  Attempt a;
  a.transfer.limit = options.max_response_bytes;
  CURL* curl = curl_easy_init();
  if (!curl) throw Error("libcurl: curl_easy_init failed");
  curl_slist* list = nullptr;
  for (const auto& h : headers) list = curl_slist_append(list, h.c_str());
  if (body) list = curl_slist_append(list, "Content-Type: application/json");
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip for large bodies
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::ceil(options.timeout_seconds * 1000)));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(std::ceil(options.connect_timeout_seconds * 1000)));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a.transfer);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &a.transfer);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, "");  // whatever curl can decode
  if (body) {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  }
  a.code = curl_easy_perform(curl);
  if (a.code == CURLE_OK) {
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a.status);
  } else {
    a.error = error[0] ? error : curl_easy_strerror(a.code);
    while (!a.error.empty() && a.error.back() == '\n') a.error.pop_back();
  }
  curl_slist_free_all(list);
  curl_easy_cleanup(curl);
  return a;
}

}  // namespace

HttpResponse HttpClient::Impl::request(const HttpOptions& options, const char* method, const std::string& url,
                                       const std::string* body, const std::vector<std::string>& headers) {
  Impl& impl = *this;
  const int tries = options.retries + 1;
  std::string last_cause;
  for (int attempt = 1; attempt <= tries; ++attempt) {
    Attempt a;
    {
      Slot slot(impl, options.max_concurrent);
      a = perform(options, url, body, headers);
    }
    if (a.transfer.too_large)
      throw HttpError(fmt::format("{} {}: the response is larger than the limit of {} bytes; raise "
                                  "HttpOptions::max_response_bytes or ask for fewer tokens",
                                  method, redact_url(url), options.max_response_bytes));
    std::optional<double> wait_hint;
    if (a.code == CURLE_OK) {
      if (!retryable(a.status) || attempt == tries)
        return HttpResponse{a.status, std::move(a.transfer.body), attempt};
      last_cause = fmt::format("HTTP {}", a.status);
      wait_hint = a.transfer.retry_after;
    } else {
      const std::string what = curl_easy_strerror(a.code);
      last_cause = a.error.find(what) == std::string::npos ? fmt::format("{} ({})", a.error, what) : a.error;
      if (!retryable(a.code) || attempt == tries) {
        throw HttpError(fmt::format(
            "no response from {} {} after {} {}: {}; check that the server is running and reachable "
            "at that address",
            method, redact_url(url), attempt, attempt == 1 ? "try" : "tries", last_cause));
      }
    }
    // Exponential backoff with jitter, at most 30 s; a Retry-After header wins (at most 300 s).
    double wait = std::min(30.0, options.backoff_seconds * std::pow(2.0, attempt - 1) * impl.jitter());
    if (wait_hint) wait = std::min(300.0, std::max(wait, *wait_hint));
    std::this_thread::sleep_for(std::chrono::duration<double>(wait));
  }
  throw InternalError("HttpClient: retry loop fell through");
}

HttpResponse HttpClient::post_json(const std::string& url, const std::string& json_body,
                                   const std::vector<std::string>& headers) {
  return impl_->request(options_, "POST", url, &json_body, headers);
}

HttpResponse HttpClient::get(const std::string& url, const std::vector<std::string>& headers) {
  return impl_->request(options_, "GET", url, nullptr, headers);
}

void for_each_request(size_t count, int max_concurrent, const std::function<void(size_t)>& fn) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (size_t i; !failed && (i = next++) < count;) {
      try {
        fn(i);
      } catch (...) {
        errors[i] = std::current_exception();
        failed = true;
      }
    }
  };
  const size_t n = std::min(count, static_cast<size_t>(std::max(1, max_concurrent)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace kbrl
