// The fields of a --policy spec (spec_fields.h).
#include "spec_fields.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include <kbrl/error.h>

namespace kbrl {

std::vector<std::string> split_spec_fields(std::string_view s, std::string_view spec) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      KBRL_CHECK_INPUT(i + 1 < s.size(), "policy spec '{}' ends with a lone backslash", spec);
      const char n = s[++i];
      switch (n) {
        case ',': out.back() += ','; break;
        case '\\': out.back() += '\\'; break;
        case 'n': out.back() += '\n'; break;
        case 't': out.back() += '\t'; break;
        default:
          throw InputError(fmt::format("policy spec '{}': unknown escape '\\{}' (use \\, \\\\ \\n \\t)", spec, n));
      }
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

int parse_spec_int(std::string_view key, const std::string& value, int min, int max) {
  int v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  KBRL_CHECK_INPUT(ec == std::errc() && end == value.data() + value.size() && v >= min && v <= max,
                   "policy spec: {}={} is not an integer in {}..{}", key, value, min, max);
  return v;
}

double parse_spec_double(std::string_view key, const std::string& value, double min, double max, bool min_open) {
  char* end = nullptr;
  const double v = value.empty() ? 0.0 : std::strtod(value.c_str(), &end);
  const bool ok = !value.empty() && end == value.c_str() + value.size() && std::isfinite(v) &&
                  (min_open ? v > min : v >= min) && v <= max;
  KBRL_CHECK_INPUT(ok, "policy spec: {}={} is not a number in {}{}, {}]", key, value, min_open ? "(" : "[", min, max);
  return v;
}

bool set_prompt_key(PromptOptions& prompt, std::string_view key, const std::string& value) {
  if (key == "style") {
    prompt.style = parse_text_style(value);
  } else if (key == "shots") {
    prompt.shots = parse_spec_int(key, value, 0, kMaxPromptShots);
  } else if (key == "system") {
    prompt.system = parse_system_prompt(value);
  } else {
    return false;
  }
  return true;
}

}  // namespace kbrl
