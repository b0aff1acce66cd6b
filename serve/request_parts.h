#pragma once
// The parts of an HTTP request `kbrl serve` reads: the target's path and query parameters, ids in
// paths, and the bearer token of the Authorization header. Errors are ApiExceptions (400).
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace kbrl::serving {

/// Splits "/path?a=1&b=2" into the path and its parameters (no percent-decoding: none of ours
/// needs it).
std::pair<std::string, std::map<std::string, std::string>> split_target(std::string_view target);
/// Throws 400 bad_request for a parameter not in `known`.
void check_params(const std::map<std::string, std::string>& params, std::initializer_list<std::string_view> known);
/// A 0/1 parameter (absent: false); throws 400 for another value.
bool parse_flag(const std::map<std::string, std::string>& params, const std::string& name);
/// 1 to 32 lowercase hex digits.
bool is_hex_id(std::string_view id);
/// A task id of at most 6 digits.
std::optional<int> parse_task_id(std::string_view text);

/// Whether an Authorization header carries `token` as a bearer credential: the scheme word in any
/// case ("Bearer", "bearer": RFC 7235, 2.1), one or more spaces, then the token, compared in
/// constant time. An empty token matches nothing.
bool bearer_matches(std::string_view header, std::string_view token);

}  // namespace kbrl::serving
