#pragma once
// Well-formed UTF-8 (Unicode 15, table 3-7): what JSON and CSV readers accept. A candidate, a
// compile log or a model's byte-level answer may hold any bytes; these say where they are not text.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kbrl {

/// The length of the well-formed UTF-8 sequence at text[i], 0 when none starts there (a stray
/// continuation byte, an overlong form, a surrogate, a code point past U+10FFFF, a cut sequence).
inline size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) -> unsigned { return i + k < text.size() ? static_cast<uint8_t>(text[i + k]) : 0x100u; };
  const unsigned b0 = byte(0);
  if (b0 < 0x80) return 1;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  size_t n = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlong forms
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return 0;
  }
  if (byte(1) < lo || byte(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  return n;
}

/// True when `text` is well-formed UTF-8.
inline bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

/// `text` with every byte of an ill-formed sequence replaced by U+FFFD; valid text is returned as is.
inline std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace kbrl
