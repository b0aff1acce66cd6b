// The endpoint wire's conventions (endpoint_wire.h): a server's error message and status as kbrl
// errors, a body that is not JSON, stable hashes, URLs with their secrets redacted, a base URL, the
// authorization headers.
#include "endpoint_wire.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <kbrl/error.h>

namespace kbrl::endpoint_wire {

using nlohmann::json;

std::string server_message(const std::string& body) {
  std::string message;
  const json j = json::parse(body, nullptr, false);
  if (j.is_object()) {
    if (auto e = j.find("error"); e != j.end()) {
      if (e->is_object() && e->contains("message") && (*e)["message"].is_string())
        message = (*e)["message"].get<std::string>();
      else if (e->is_string()) message = e->get<std::string>();
    }
    if (message.empty() && j.contains("message") && j["message"].is_string()) message = j["message"].get<std::string>();
    if (message.empty() && j.contains("detail"))
      message = j["detail"].is_string() ? j["detail"].get<std::string>() : j["detail"].dump();
  }
  if (message.empty()) message = body;
  if (message.size() > 500) message = message.substr(0, 500) + "...";
  return message;
}

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string models_url(const std::string& url) {
  const size_t v1 = url.find("/v1/");
  if (v1 != std::string::npos) return url.substr(0, v1) + "/v1/models";
  return "URL/v1/models";
}

}  // namespace

void throw_status(const HttpResponse& response, const std::string& url, const std::string& model) {
  const std::string message = server_message(response.body);
  const std::string m = lower(message);
  const long s = response.status;
  const bool about_model = m.find("model") != std::string::npos &&
                           (s == 404 || m.find("not exist") != std::string::npos ||
                            m.find("not found") != std::string::npos || m.find("unknown") != std::string::npos);
  if (s >= 400 && s < 500 && s != 429 && about_model)
    throw InputError(fmt::format(
        "the server at {} does not serve the model '{}' (HTTP {}: \"{}\"); list the served models with GET {} "
        "and fix model= in --policy endpoint:URL,model=NAME",
        url, model, s, message, models_url(url)));
  if (s == 404)
    throw InputError(fmt::format("the server has no {} (HTTP 404: \"{}\"); check the URL and api=chat|completions "
                                 "in --policy endpoint:URL",
                                 url, message));
  if (s == 401 || s == 403)
    throw InputError(fmt::format("the server at {} refused the request (HTTP {}: \"{}\"); set the API key in the "
                                 "environment variable named by key_env= (default KBRL_API_KEY, else "
                                 "OPENAI_API_KEY)",
                                 url, s, message));
  if (s >= 400 && s < 500 && s != 429)
    throw InputError(fmt::format("the server at {} rejected the request (HTTP {}: \"{}\"); fix the settings in "
                                 "--policy endpoint:URL,... (model, max_tokens, stop, top_p)",
                                 url, s, message));
  throw Error(fmt::format("the server at {} failed (HTTP {}) after {} {}: \"{}\"; see the server's log{}", url, s,
                          response.tries, response.tries == 1 ? "try" : "tries", message,
                          s == 429 ? ", or lower concurrency= in --policy" : ""));
}

json parse_body(const HttpResponse& response, const std::string& url) {
  try {
    return json::parse(response.body);
  } catch (const json::parse_error& e) {
    throw Error(fmt::format("the response from {} is not valid JSON ({} bytes{}): {}; it was neither used nor "
                            "logged: check the server (or a proxy in between) and rerun",
                            url, response.body.size(),
                            response.body.empty() ? ", empty" : (e.id == 101 ? ", cut short?" : ""), e.what()));
  }
}

std::string stable_hash(std::string_view data) {
  // Two FNV-1a 64-bit passes with different offset bases, each finished with splitmix64's mixer.
  auto fnv = [&](uint64_t h) {
    for (unsigned char c : data) {
      h ^= c;
      h *= 0x100000001B3ULL;
    }
    h ^= data.size();
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ULL;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBULL;
    return h ^ (h >> 31);
  };
  return fmt::format("{:016x}{:016x}", fnv(0xCBF29CE484222325ULL), fnv(0x84222325CBF29CE4ULL));
}

std::string redact(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t start = scheme == std::string::npos ? 0 : scheme + 3;
  const size_t end = std::min(url.find('/', start), url.size());
  const size_t at = url.rfind('@', end);
  return at == std::string::npos || at < start ? url : url.substr(0, start) + url.substr(at + 1);
}

std::string base_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/v1")) url.resize(url.size() - 3);
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::vector<std::string> auth_headers(const EndpointOptions& options) {
  const char* key = nullptr;
  if (!options.key_env.empty()) {
    key = std::getenv(options.key_env.c_str());
    KBRL_CHECK_INPUT(key && *key, "endpoint: key_env={} names an environment variable that is not set (it "
                     "should hold the API key)", options.key_env);
  } else {
    key = std::getenv("KBRL_API_KEY");
    if (!key || !*key) key = std::getenv("OPENAI_API_KEY");
  }
  if (key && *key) return {std::string("Authorization: Bearer ") + key};
  return {};
}

}  // namespace kbrl::endpoint_wire
