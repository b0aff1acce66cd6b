#pragma once
// Text helpers of the KernelBench importer (kernels/kernelbench_import.h): C++ and Python source
// read as text, with brackets matched and comments blanked.
#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl::kernelbench {

inline bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

inline std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

/// The source with comments and the contents of string and character literals blanked (same
/// length, so positions agree with the source).
inline std::string blank_comments(const std::string& s) {
  std::string out = s;
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 2, "//") == 0) {
      while (i < s.size() && s[i] != '\n') out[i++] = ' ';
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t end = s.find("*/", i + 2);
      const size_t stop = end == std::string::npos ? s.size() : end + 2;
      for (; i < stop; ++i)
        if (s[i] != '\n') out[i] = ' ';
    } else if (s[i] == '"' || s[i] == '\'') {
      const char q = s[i++];
      while (i < s.size() && s[i] != q && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size()) out[i++] = ' ';
        out[i++] = ' ';
      }
      ++i;
    } else {
      ++i;
    }
  }
  return out;
}

/// The position of the bracket matching the one at `open` in blanked text, or npos.
inline size_t matching(const std::string& s, size_t open) {
  const char o = s[open], c = o == '(' ? ')' : o == '{' ? '}' : o == '[' ? ']' : '>';
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == o) ++depth;
    if (s[i] == c && --depth == 0) return i;
  }
  return std::string::npos;
}

inline std::vector<std::string> split_top(std::string_view s, char sep = ',') {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (const char c : s) {
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == sep && depth == 0) {
      parts.push_back(trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!trim(current).empty()) parts.push_back(trim(current));
  return parts;
}

/// `name` as a whole word in `s`, from `from`: its position or npos.
inline size_t find_word(const std::string& s, std::string_view name, size_t from = 0) {
  for (size_t at = s.find(name, from); at != std::string::npos; at = s.find(name, at + 1)) {
    const bool before = at == 0 || !ident_char(s[at - 1]);
    const bool after = at + name.size() >= s.size() || !ident_char(s[at + name.size()]);
    if (before && after) return at;
  }
  return std::string::npos;
}

}  // namespace kbrl::kernelbench
