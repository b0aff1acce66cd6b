#include "compile_flags.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>

#include <fmt/format.h>

namespace kbrl {
namespace {

/// "-ftz=true" -> {"ftz", "true"}; the leading dashes (one or two) are dropped.
std::pair<std::string, std::string> name_and_value(std::string_view option) {
  if (option.substr(0, 2) == "--") {
    option.remove_prefix(2);
  } else if (option.substr(0, 1) == "-") {
    option.remove_prefix(1);
  }
  const size_t eq = option.find('=');
  if (eq == std::string_view::npos) return {std::string(option), ""};
  return {std::string(option.substr(0, eq)), std::string(option.substr(eq + 1))};
}

}  // namespace

CanonicalOptions canonical_options(const std::vector<std::string>& options) {
  CanonicalOptions out;
  std::map<std::string, std::pair<std::string, std::string>> seen;  // name -> (value, as written)
  for (const auto& option : options) {
    if (option.empty() || option.front() != '-') {
      out.error = fmt::format("compile option '{}' is not allowed (allowed: {})", option,
                              kAllowedOptionsText);
      return out;
    }
    auto [name, value] = name_and_value(option);
    if (name == "generate-line-info") name = "lineinfo";
    std::string canonical;
    if ((name == "use_fast_math" || name == "extra-device-vectorization") && value.empty()) {
      canonical = "--" + name;
    } else if (name == "lineinfo" && value.empty() && option.find('=') == std::string::npos) {
      canonical = "-lineinfo";
    } else if (name == "ftz" || name == "prec-div" || name == "prec-sqrt" || name == "fmad") {
      if (value != "true" && value != "false") {
        out.error = fmt::format("compile option '{}' needs =true or =false", option);
        return out;
      }
      canonical = fmt::format("-{}={}", name, value);
    } else if (name == "maxrregcount") {
      int count = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), count);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size() || count < 16 ||
          count > 255) {
        out.error = fmt::format("compile option '{}' needs a register count in 16..255", option);
        return out;
      }
      canonical = fmt::format("-maxrregcount={}", count);
    } else {
      out.error = fmt::format("compile option '{}' is not allowed (allowed: {})", option,
                              kAllowedOptionsText);
      return out;
    }
    auto [it, inserted] = seen.emplace(name, std::pair{value, option});
    if (!inserted && it->second.first != value) {
      out.error = fmt::format("conflicting compile options '{}' and '{}'", it->second.second, option);
      return out;
    }
    if (inserted) out.options.push_back(canonical);
  }
  std::sort(out.options.begin(), out.options.end());
  return out;
}

}  // namespace kbrl
