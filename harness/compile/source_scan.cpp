#include "source_scan.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kbrl {
namespace {

constexpr std::array<std::string_view, 13> kAllowedIncludes{
    "cuda_fp16.h",     "cuda_bf16.h",     "cuda_fp8.h",       "mma.h",
    "math_constants.h", "cuda_runtime.h", "vector_types.h",   "cuda_pipeline.h",
    "cuda_pipeline_primitives.h", "cuda_awbarrier.h", "cooperative_groups.h",
    "cooperative_groups/reduce.h", "cooperative_groups/memcpy_async.h",
};

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' ||
                        s.front() == '\f' || s.front() == '\v'))
    s.remove_prefix(1);
  return s;
}

bool identifier_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Where the raw string literal whose opening quote is at `quote` ends (one past its closing quote),
/// or npos when the quote does not open one: R, u8R, uR, UR or LR right before it, not the tail of
/// a longer identifier, then a delimiter of at most 16 characters and '('.
size_t raw_string_end(std::string_view text, size_t quote) {
  if (quote == 0 || text[quote - 1] != 'R') return std::string_view::npos;
  size_t start = quote - 1;  // the prefix's first character
  for (std::string_view prefix : {"u8", "u", "U", "L"}) {
    if (start >= prefix.size() && text.substr(start - prefix.size(), prefix.size()) == prefix) {
      start -= prefix.size();
      break;
    }
  }
  if (start > 0 && identifier_char(text[start - 1])) return std::string_view::npos;
  const size_t open = text.find('(', quote + 1);
  if (open == std::string_view::npos || open - quote - 1 > 16) return std::string_view::npos;
  const std::string close = ")" + std::string(text.substr(quote + 1, open - quote - 1)) + "\"";
  const size_t end = text.find(close, open + 1);
  return end == std::string_view::npos ? text.size() : end + close.size();
}

/// Whether the quote at `at` is a digit separator (1'000, 0x1'F): it follows a character of a
/// number token, that is, a token that starts with a digit.
bool digit_separator(std::string_view text, size_t at) {
  size_t start = at;
  while (start > 0 && (identifier_char(text[start - 1]) || text[start - 1] == '\'' || text[start - 1] == '.'))
    --start;
  return start < at && std::isdigit(static_cast<unsigned char>(text[start]));
}

}  // namespace

std::span<const std::string_view> allowed_includes() { return kAllowedIncludes; }

std::string strip_comments(std::string_view source) {
  // Join splices first: "#inc\<newline>lude" is one directive to the preprocessor.
  std::string joined;
  joined.reserve(source.size());
  int pending_newlines = 0;
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\\' && i + 1 < source.size() && source[i + 1] == '\n') {
      ++pending_newlines;
      ++i;
      continue;
    }
    if (source[i] == '\\' && i + 2 < source.size() && source[i + 1] == '\r' && source[i + 2] == '\n') {
      ++pending_newlines;
      i += 2;
      continue;
    }
    joined += source[i];
    if (source[i] == '\n') {
      joined.append(static_cast<size_t>(pending_newlines), '\n');
      pending_newlines = 0;
    }
  }
  std::string out;
  out.reserve(joined.size());
  enum { code, line_comment, block_comment, string, character } state = code;
  for (size_t i = 0; i < joined.size(); ++i) {
    const char c = joined[i];
    const char next = i + 1 < joined.size() ? joined[i + 1] : '\0';
    switch (state) {
      case code:
        if (c == '/' && next == '/') {
          state = line_comment, out += "  ", ++i;
        } else if (c == '/' && next == '*') {
          state = block_comment, out += "  ", ++i;
        } else if (const size_t end = c == '"' ? raw_string_end(joined, i) : std::string::npos;
                   end != std::string::npos) {
          // A raw string: no escapes, no comments, its lines are not directives.
          out += c;
          for (size_t k = i + 1; k < end; ++k) out += joined[k] == '\n' ? '\n' : ' ';
          i = end - 1;
        } else {
          if (c == '"') state = string;
          if (c == '\'' && !digit_separator(joined, i)) state = character;
          out += c;
        }
        break;
      case line_comment:
        if (c == '\n') state = code;
        out += c == '\n' ? '\n' : ' ';
        break;
      case block_comment:
        if (c == '*' && next == '/') {
          state = code, out += "  ", ++i;
        } else {
          out += c == '\n' ? '\n' : ' ';
        }
        break;
      case string:
      case character:
        out += c;
        if (c == '\\' && next != '\0' && next != '\n') {
          out += next, ++i;
        } else if ((state == string && c == '"') || (state == character && c == '\'') || c == '\n') {
          state = code;
        }
        break;
    }
  }
  return out;
}

std::optional<std::string> check_source(std::string_view source) {
  if (source.size() > kMaxSourceBytes)
    return fmt::format("source is {} bytes, over the limit of {} bytes (1 MiB)", source.size(),
                       kMaxSourceBytes);
  if (source.find('\0') != std::string_view::npos) return "source contains a NUL byte";
  const std::string code = strip_comments(source);
  size_t offset = 0;
  for (int line_number = 1; offset < code.size(); ++line_number) {
    const size_t end = std::min(code.find('\n', offset), code.size());
    std::string_view line = trim_left(std::string_view(code).substr(offset, end - offset));
    offset = end + 1;
    if (line.substr(0, 1) == "#") {
      line.remove_prefix(1);
    } else if (line.substr(0, 2) == "%:") {  // the digraph of '#'
      line.remove_prefix(2);
    } else {
      continue;
    }
    line = trim_left(line);
    size_t word_end = 0;
    while (word_end < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[word_end])) || line[word_end] == '_'))
      ++word_end;
    const std::string_view directive = line.substr(0, word_end);
    if (directive != "include" && directive != "include_next" && directive != "import" &&
        directive != "embed")
      continue;
    const std::string_view target = trim_left(line.substr(word_end));
    const std::string allowed = fmt::format("{}", fmt::join(kAllowedIncludes, ", "));
    if (directive != "include")
      return fmt::format("line {}: #{} is not allowed (only #include of: {})", line_number,
                         directive, allowed);
    const char open = target.empty() ? '\0' : target.front();
    const char close = open == '<' ? '>' : '"';
    const size_t close_pos = target.find(close, 1);
    if ((open != '<' && open != '"') || close_pos == std::string_view::npos)
      return fmt::format("line {}: #include {} is not allowed: only a literal <header> or "
                         "\"header\" from the allowed list ({})",
                         line_number, target, allowed);
    const std::string_view header = target.substr(1, close_pos - 1);
    if (std::find(kAllowedIncludes.begin(), kAllowedIncludes.end(), header) == kAllowedIncludes.end())
      return fmt::format("line {}: #include {} is not allowed (allowed: {})", line_number,
                         target.substr(0, close_pos + 1), allowed);
  }
  return std::nullopt;
}

}  // namespace kbrl
