#pragma once
// Minimal CSV (RFC 4180) quoting and line splitting, shared by every CSV kbrl reads or writes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <kbrl/utf8.h>

namespace kbrl::csv {

/// The field as written in a CSV line: quoted (with doubled quotes) when it holds , " or a newline.
inline std::string field(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

/// Multi-line text (a model's answer, code) as one line: backslash, newline, carriage return and
/// tab written as \\, \n, \r and \t, so that each CSV row stays one line and diffs cleanly; a byte
/// that is not part of well-formed UTF-8 (a byte-level model may cut a character) as \xHH, so that
/// the file is UTF-8 text every CSV reader takes and the exact bytes read back.
inline std::string escape_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto b = static_cast<uint8_t>(text[i++]);
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 15];
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    switch (const char c = text[i++]) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out;
}

/// The inverse of escape_text (an unknown escape is kept as it is).
inline std::string unescape_text(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    switch (const char n = text[++i]) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\\': out += '\\'; break;
      case 'x':
        if (i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
          out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default: out += '\\'; out += n;
    }
  }
  return out;
}

/// Splits one CSV line (no embedded newlines) into its fields, undoing the quoting.
inline std::vector<std::string> split_line(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace kbrl::csv
