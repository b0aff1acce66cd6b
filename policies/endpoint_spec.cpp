// The endpoint policy's names and its --policy spec (endpoint_policy.h).
#include <charconv>
#include <cmath>
#include <cstdlib>

#include <kbrl/splitmix64.h>

#include "endpoint_policy.h"
#include "spec_fields.h"

namespace kbrl {

std::string_view to_string(EndpointApi api) { return enum_name(api); }
std::string_view to_string(ServerKind kind) { return enum_name(kind); }

uint32_t endpoint_sample_seed(uint64_t seed, int index) {
  KBRL_CHECK_INPUT(index >= 0, "sample index must be >= 0, got {}", index);
  // The (index+1)-th output of the splitmix64 stream seeded with `seed`, in [0, 2^31 - 1).
  uint64_t state = seed + static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ULL;
  return static_cast<uint32_t>(splitmix64(state) % 0x7FFFFFFFULL);
}

namespace {

constexpr std::string_view kKeys =
    "model, api, server, max_tokens, top_p, stop, key_env, concurrency, timeout, retries, style, shots, system, log";

}  // namespace

EndpointOptions parse_endpoint_spec(std::string_view spec) {
  constexpr std::string_view prefix = "endpoint:";
  KBRL_CHECK_INPUT(spec.starts_with(prefix),
                   "policy spec '{}' does not start with 'endpoint:' (endpoint:<url>[,key=value...]; keys: {})", spec,
                   kKeys);
  const auto fields = split_spec_fields(spec.substr(prefix.size()), spec);
  EndpointOptions o;
  o.url = fields[0];
  KBRL_CHECK_INPUT(o.url.starts_with("http://") || o.url.starts_with("https://"),
                   "policy spec '{}': the URL '{}' must start with http:// or https:// "
                   "(endpoint:<url>[,key=value...]; keys: {})",
                   spec, o.url, kKeys);
  KBRL_CHECK_INPUT(o.url.find_first_of(" \t\n") == std::string::npos, "policy spec '{}': the URL has whitespace",
                   spec);
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string& f = fields[i];
    const size_t eq = f.find('=');
    KBRL_CHECK_INPUT(eq != std::string::npos && eq > 0,
                     "policy spec '{}': '{}' is not key=value (valid keys: {})", spec, f, kKeys);
    const std::string key = f.substr(0, eq);
    const std::string value = f.substr(eq + 1);
    if (key == "model") {
      o.model = value;
    } else if (key == "api") {
      const auto api = find_enum<EndpointApi>(value);
      KBRL_CHECK_INPUT(api, "policy spec: api={} is not one of {}", value, enum_names_list<EndpointApi>());
      o.api = *api;
    } else if (key == "server") {
      const auto server = find_enum<ServerKind>(value);
      KBRL_CHECK_INPUT(server, "policy spec: server={} is not one of {}", value, enum_names_list<ServerKind>());
      o.server = *server;
    } else if (key == "max_tokens") {
      o.max_tokens = parse_spec_int(key, value, 1, 1 << 24);
    } else if (key == "top_p") {
      o.top_p = parse_spec_double(key, value, 0.0, 1.0, true);
    } else if (key == "stop") {
      KBRL_CHECK_INPUT(!value.empty(), "policy spec: stop= needs a non-empty string");
      o.stop.push_back(value);
    } else if (key == "key_env") {
      KBRL_CHECK_INPUT(!value.empty() && value.find_first_of("= \t") == std::string::npos,
                       "policy spec: key_env={} is not an environment variable name", value);
      o.key_env = value;
    } else if (key == "concurrency") {
      o.http.max_concurrent = parse_spec_int(key, value, 1, 4096);
    } else if (key == "timeout") {
      o.http.timeout_seconds = parse_spec_double(key, value, 0.0, 86400.0, true);
    } else if (key == "retries") {
      o.http.retries = parse_spec_int(key, value, 0, 100);
    } else if (set_prompt_key(o.prompt, key, value)) {
      // style, shots or system: set
    } else if (key == "log") {
      KBRL_CHECK_INPUT(!value.empty(), "policy spec: log= needs a file name");
      o.response_log = value;
    } else {
      throw InputError(fmt::format("policy spec '{}': unknown key '{}' (valid keys: {})", spec, key, kKeys));
    }
  }
  return o;
}

}  // namespace kbrl
