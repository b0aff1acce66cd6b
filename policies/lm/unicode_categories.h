#pragma once
// Unicode facts the pre-tokenizers need (internal to kbrl_lm_files): each code point's general
// category (its major class: letter, number, punctuation, ...) and the White_Space property, from
// tables generated once with Python (see unicode_categories.cpp), and UTF-8 decoding the way
// llama.cpp decodes it, so that the words the pre-tokenizer cuts are the ones llama.cpp cuts.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl::lm::unicode {

/// The major class of a code point's general category (\p{L}, \p{N}, ... in regular expressions);
/// unassigned code points (Cn) have their own value.
enum class Category : uint8_t {
  other,
  letter,
  number,
  punctuation,
  symbol,
  mark,
  separator,
  unassigned
};

Category category(uint32_t cp);
/// The White_Space property (\s of Python's and Rust's regex): \t..\r, space, U+0085, U+00A0, ...
bool is_whitespace(uint32_t cp);

/// The code points of `text` as llama.cpp's unicode_cpts_from_utf8 reads them: a lead byte with
/// its continuation bytes is one code point (overlong forms and surrogates included, as llama.cpp
/// accepts them); every other byte (a stray continuation byte, a truncated sequence's lead, 0xF8..
/// 0xFF) becomes U+FFFD on its own. A 4-byte form above U+10FFFF, on which llama.cpp throws, is
/// treated as invalid bytes too.
std::vector<uint32_t> decode_utf8(std::string_view text);
/// Appends the UTF-8 encoding of `cp` (at most U+10FFFF).
void append_utf8(std::string& out, uint32_t cp);

}  // namespace kbrl::lm::unicode
