#include "request_parts.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "api.h"

namespace kbrl::serving {

/// Splits "/path?a=1&b=2" into the path and its parameters (no percent-decoding: none of ours
/// needs it).
std::pair<std::string, std::map<std::string, std::string>> split_target(std::string_view target) {
  std::map<std::string, std::string> params;
  const size_t q = target.find('?');
  const std::string path(target.substr(0, q));
  if (q == std::string_view::npos) return {path, params};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (!pair.empty()) params[std::string(pair.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return {path, params};
}

void check_params(const std::map<std::string, std::string>& params, std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : params)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw ApiException(bad_request(fmt::format("unknown query parameter '{}'", name), name));
}

bool parse_flag(const std::map<std::string, std::string>& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return false;
  if (it->second == "1") return true;
  if (it->second == "0") return false;
  throw ApiException(bad_request(fmt::format("{} must be 0 or 1, not '{}'", name, it->second), name));
}

bool is_hex_id(std::string_view id) {
  return !id.empty() && id.size() <= 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<int> parse_task_id(std::string_view text) {
  if (text.empty() || text.size() > 6) return std::nullopt;
  int id = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id;
}

namespace {

/// Constant-time comparison of the bearer token.
bool same_secret(std::string_view a, std::string_view b) {
  if (b.empty()) return false;
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % b.size()]);
  return diff == 0;
}

}  // namespace

bool bearer_matches(std::string_view header, std::string_view token) {
  constexpr std::string_view scheme = "bearer";
  if (header.size() <= scheme.size() || header[scheme.size()] != ' ') return false;
  for (size_t i = 0; i < scheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return false;
  std::string_view credential = header.substr(scheme.size());
  while (!credential.empty() && credential.front() == ' ') credential.remove_prefix(1);
  return same_secret(credential, token);
}

}  // namespace kbrl::serving
