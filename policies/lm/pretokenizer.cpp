#include "pretokenizer.h"

#include <array>
#include <map>

#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include "unicode_categories.h"

namespace kbrl::lm {
namespace {

// llama.cpp's names (llama-vocab.cpp) of the pre-tokenizers implemented here, plus "llama3" and
// "gpt2". Only names whose other settings in llama.cpp (ignore_merges, add_bos) are reproduced by
// pretokenizer_ignores_merges and pretokenizer_adds_bos are listed.
const std::map<std::string, PreTokenizerKind>& names() {
  // clang-format off
  static const std::map<std::string, PreTokenizerKind> known = {
      {"default", PreTokenizerKind::llamacpp_default},
      {"gpt2", PreTokenizerKind::gpt2},           {"gpt-2", PreTokenizerKind::gpt2},
      {"phi-2", PreTokenizerKind::gpt2},          {"mpt", PreTokenizerKind::gpt2},
      {"olmo", PreTokenizerKind::gpt2},           {"smollm", PreTokenizerKind::smollm},
      {"starcoder", PreTokenizerKind::smollm},    {"refact", PreTokenizerKind::smollm},
      {"codeshell", PreTokenizerKind::smollm},    {"command-r", PreTokenizerKind::smollm},
      {"llama3", PreTokenizerKind::llama3},       {"llama-v3", PreTokenizerKind::llama3},
      {"llama-bpe", PreTokenizerKind::llama3},    {"falcon3", PreTokenizerKind::llama3},
      {"qwen2", PreTokenizerKind::qwen2},         {"deepseek-r1-qwen", PreTokenizerKind::qwen2},
      {"stablelm2", PreTokenizerKind::qwen2},     {"megrez", PreTokenizerKind::qwen2},
  };
  // clang-format on
  return known;
}

// Per code point bits: what the expressions ask of it. kAssigned is set for every code point of the
// text, so that 0 means "outside the piece" (llama.cpp's matchers read flags 0 there).
constexpr uint8_t kLetter = 1, kNumber = 2, kSpace = 4, kPunctuation = 8, kAssigned = 0x80;
constexpr uint32_t kNone = 0xFFFFFFFF;  // the code point "read" outside the piece

struct Text {
  std::vector<uint32_t> cps;
  std::vector<uint8_t> flags;
};

Text analyze(std::string_view utf8) {
  Text t{unicode::decode_utf8(utf8), {}};
  t.flags.resize(t.cps.size());
  for (size_t i = 0; i < t.cps.size(); ++i) {
    const uint32_t cp = t.cps[i];
    const unicode::Category c = unicode::category(cp);
    uint8_t f = kAssigned;
    if (c == unicode::Category::letter) f |= kLetter;
    if (c == unicode::Category::number) f |= kNumber;
    if (c == unicode::Category::punctuation) f |= kPunctuation;
    if (unicode::is_whitespace(cp)) f |= kSpace;
    t.flags[i] = f;
  }
  return t;
}

// The text cut so far: piece lengths in code points, in order, summing to the text's length. Each
// expression of a chain splits every piece of the previous one further (as llama.cpp's offsets).
using Pieces = std::vector<size_t>;

// One piece seen by a matcher: positions outside [begin, end) read as no code point, flags 0.
class Piece {
 public:
  Piece(const Text& t, size_t begin, size_t end, Pieces& out)
      : t_(t), begin_(begin), end_(end), prev_(begin), out_(out) {}
  size_t begin() const { return begin_; }
  size_t end() const { return end_; }
  uint32_t cp(size_t i) const { return i >= begin_ && i < end_ ? t_.cps[i] : kNone; }
  uint8_t flags(size_t i) const { return i >= begin_ && i < end_ ? t_.flags[i] : 0; }
  // Ends the current word at `end` (no word when empty); returns `end`.
  size_t cut(size_t end) {
    if (end > prev_) out_.push_back(end - prev_);
    prev_ = end;
    return end;
  }

 private:
  const Text& t_;
  size_t begin_, end_, prev_;
  Pieces& out_;
};

template <class Matcher>
Pieces split_each(const Text& t, const Pieces& pieces, Matcher match) {
  Pieces out;
  out.reserve(pieces.size() * 2);
  size_t begin = 0;
  for (size_t length : pieces) {
    Piece piece(t, begin, begin + length, out);
    match(piece);
    begin += length;
  }
  return out;
}

// 's|'t|'re|'ve|'m|'ll|'d at pos (case-insensitively when asked: the only code points whose
// lowercase is one of these ASCII letters are the ASCII capitals); returns the end, or 0.
size_t contraction_end(const Piece& p, size_t pos, bool any_case) {
  if (p.cp(pos) != '\'' || pos + 1 >= p.end()) return 0;
  const auto lower = [&](uint32_t c) { return any_case && c >= 'A' && c <= 'Z' ? c + 32 : c; };
  const uint32_t a = lower(p.cp(pos + 1));
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
  if (pos + 2 >= p.end()) return 0;
  const uint32_t b = lower(p.cp(pos + 2));
  const bool two = (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l');
  return two ? pos + 3 : 0;
}

// GPT-2's expression, as llama.cpp's matcher runs it: a run of spaces followed by more of the piece
// leaves its last space to the next word; at the piece's end it is one word.
void match_gpt2(Piece& p) {
  constexpr uint8_t kSLN = kSpace | kLetter | kNumber;
  for (size_t pos = p.begin(); pos < p.end();) {
    const uint32_t c = p.cp(pos);
    if (const size_t e = contraction_end(p, pos, false)) {
      pos = p.cut(e);
      continue;
    }
    const uint8_t f = c == ' ' ? p.flags(pos + 1) : p.flags(pos);  // after an optional space
    if (f & (kLetter | kNumber)) {  //  ?\p{L}+ and  ?\p{N}+
      const uint8_t kind = f & kLetter ? kLetter : kNumber;
      pos += c == ' ';
      while (p.flags(pos) & kind) ++pos;
      p.cut(pos);
      continue;
    }
    if (!(f & kSLN) && f != 0) {  //  ?[^\s\p{L}\p{N}]+
      pos += c == ' ';
      while (!(p.flags(pos) & kSLN) && p.flags(pos) != 0) ++pos;
      p.cut(pos);
      continue;
    }
    size_t spaces = 0;
    while (p.flags(pos + spaces) & kSpace) ++spaces;
    if (spaces > 1 && p.cp(pos + spaces) != kNone) {  // \s+(?!\S)
      p.cut(pos += spaces - 1);
    } else if (spaces > 0) {  // \s+
      p.cut(pos += spaces);
    } else {
      p.cut(++pos);
    }
  }
}

// Llama 3's expression (digits: at most 3 per word) and Qwen2's (1 per word), as llama.cpp runs them.
void match_llama3(Piece& p, size_t max_digits) {
  constexpr uint8_t kSLN = kSpace | kLetter | kNumber;
  const auto newline = [](uint32_t c) { return c == '\r' || c == '\n'; };
  for (size_t pos = p.begin(); pos < p.end();) {
    const uint32_t c = p.cp(pos);
    const uint8_t f = p.flags(pos);
    if (const size_t e = contraction_end(p, pos, true)) {
      pos = p.cut(e);
      continue;
    }
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (!newline(c) && !(f & kNumber) && ((f & kLetter) || (p.flags(pos + 1) & kLetter))) {
      ++pos;
      while (p.flags(pos) & kLetter) ++pos;
      p.cut(pos);
      continue;
    }
    if (f & kNumber) {  // \p{N}{1,max_digits}
      size_t start = pos;
      while (p.flags(pos) & kNumber) {
        if (++pos - start >= max_digits) start = p.cut(pos);
      }
      p.cut(pos);
      continue;
    }
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    const uint8_t f2 = c == ' ' ? p.flags(pos + 1) : f;
    if (!(f2 & kSLN) && f != 0) {
      pos += c == ' ';
      while (!(p.flags(pos) & kSLN) && p.flags(pos) != 0) ++pos;
      while (newline(p.cp(pos))) ++pos;
      p.cut(pos);
      continue;
    }
    size_t spaces = 0, after_last_newline = 0;
    for (; p.flags(pos + spaces) & kSpace; ++spaces) {
      if (newline(p.cp(pos + spaces))) after_last_newline = pos + spaces + 1;
    }
    if (after_last_newline > 0) {  // \s*[\r\n]+
      p.cut(pos = after_last_newline);
    } else if (spaces > 1 && p.cp(pos + spaces) != kNone) {  // \s+(?!\S)
      p.cut(pos += spaces - 1);
    } else if (spaces > 0) {  // \s+
      p.cut(pos += spaces);
    } else {
      p.cut(++pos);
    }
  }
}

// An expression llama.cpp runs through std::regex: the matches of `match_length` (the length of a
// match starting at a position, 0 for none; leftmost first, not overlapping) become words, and so do
// the stretches between them.
template <class MatchLength>
void match_isolated(Piece& p, MatchLength match_length) {
  for (size_t pos = p.begin(); pos < p.end();) {
    const size_t n = match_length(p, pos);
    if (n == 0) {
      ++pos;
      continue;
    }
    p.cut(pos);
    pos = p.cut(pos + n);
  }
  p.cut(p.end());
}

size_t run_of(const Piece& p, size_t pos, uint8_t flag) {
  size_t n = 0;
  while (p.flags(pos + n) & flag) ++n;
  return n;
}

bool ascii_digit(uint32_t c) { return c >= '0' && c <= '9'; }

// [\p{P}\$\+<=>\^~\|]+
size_t punctuation_run(const Piece& p, size_t pos) {
  size_t n = 0;
  for (;; ++n) {
    const uint32_t c = p.cp(pos + n);
    const bool extra =
        c == '$' || c == '+' || c == '<' || c == '=' || c == '>' || c == '^' || c == '~' || c == '|';
    if (!(p.flags(pos + n) & kPunctuation) && !extra) return n;
  }
}

}  // namespace

PreTokenizerKind pretokenizer_kind(const std::string& pre) {
  const auto it = names().find(pre);
  KBRL_CHECK_INPUT(it != names().end(),
                   "the tokenizer's pre-tokenizer '{}' is not one kbrl implements (known: {}); use a "
                   "model whose tokenizer.ggml.pre is one of these",
                   pre, known_pretokenizers());
  return it->second;
}

std::string known_pretokenizers() {
  std::string s;
  for (const auto& [name, kind] : names()) s += (s.empty() ? "" : ", ") + name;
  return s;
}

std::string pretokenizer_name_from_hf(const nlohmann::json& pre_tokenizer) {
  // The Split expressions of Llama 3's and Qwen2's tokenizer.json, as written there.
  static const std::string kLlama3 =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
      "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  static const std::string kQwen2 =
      "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
      "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
  const auto type = [](const nlohmann::json& j) { return j.is_object() ? j.value("type", "") : ""; };
  const auto byte_level = [&](const nlohmann::json& j, bool regex) {
    return type(j) == "ByteLevel" && !j.value("add_prefix_space", false) &&
           j.value("use_regex", true) == regex;
  };
  const auto split_regex = [&](const nlohmann::json& j) -> std::string {
    if (type(j) != "Split" || !j.contains("pattern") || !j["pattern"].is_object()) return "";
    return j["pattern"].value("Regex", "");
  };
  if (byte_level(pre_tokenizer, true)) return "gpt2";
  if (type(pre_tokenizer) == "Sequence" && pre_tokenizer.contains("pretokenizers") &&
      pre_tokenizer["pretokenizers"].is_array() && pre_tokenizer["pretokenizers"].size() == 2) {
    const nlohmann::json& first = pre_tokenizer["pretokenizers"][0];
    const nlohmann::json& second = pre_tokenizer["pretokenizers"][1];
    const bool digits = (type(first) == "Digits" && first.value("individual_digits", false)) ||
                        split_regex(first) == "\\p{N}";
    if (digits && byte_level(second, true)) return "smollm";
    if (split_regex(first) == kLlama3 && byte_level(second, false)) return "llama3";
    if (split_regex(first) == kQwen2 && byte_level(second, false)) return "qwen2";
  }
  throw InputError(
      "tokenizer.json: the pre_tokenizer is none of those kbrl implements (ByteLevel; "
      "Digits then ByteLevel as SmolLM2's; Split with Llama 3's or Qwen2's expression "
      "then ByteLevel): " +
      pre_tokenizer.dump().substr(0, 400));
}

bool pretokenizer_ignores_merges(PreTokenizerKind kind) { return kind == PreTokenizerKind::llama3; }
bool pretokenizer_adds_bos(PreTokenizerKind kind) { return kind == PreTokenizerKind::llama3; }

std::vector<std::string> pretokenize(PreTokenizerKind kind, std::string_view text) {
  const Text t = analyze(text);
  Pieces pieces = {t.cps.size()};
  const auto gpt2 = [&] { pieces = split_each(t, pieces, match_gpt2); };
  switch (kind) {
    case PreTokenizerKind::gpt2:
      gpt2();
      break;
    case PreTokenizerKind::smollm:
      pieces = split_each(t, pieces, [](Piece& p) {
        match_isolated(
            p, [](const Piece& q, size_t pos) -> size_t { return (q.flags(pos) & kNumber) ? 1 : 0; });
      });
      gpt2();
      break;
    case PreTokenizerKind::llama3:
      pieces = split_each(t, pieces, [](Piece& p) { match_llama3(p, 3); });
      break;
    case PreTokenizerKind::qwen2:
      pieces = split_each(t, pieces, [](Piece& p) { match_llama3(p, 1); });
      break;
    case PreTokenizerKind::llamacpp_default:
      pieces = split_each(t, pieces, [](Piece& p) { match_isolated(p, punctuation_run); });
      gpt2();
      pieces = split_each(t, pieces, [](Piece& p) {
        match_isolated(p, [](const Piece& q, size_t pos) { return run_of(q, pos, kNumber); });
      });
      pieces = split_each(t, pieces, [](Piece& p) {
        match_isolated(p, [](const Piece& q, size_t pos) -> size_t {
          const bool three =
              ascii_digit(q.cp(pos)) && ascii_digit(q.cp(pos + 1)) && ascii_digit(q.cp(pos + 2));
          return three ? 3 : 0;
        });
      });
      break;
  }
  std::vector<std::string> words;
  words.reserve(pieces.size());
  size_t begin = 0;
  for (size_t length : pieces) {
    std::string word;
    for (size_t i = begin; i < begin + length; ++i) unicode::append_utf8(word, t.cps[i]);
    words.push_back(std::move(word));
    begin += length;
  }
  return words;
}

namespace {

struct ByteLevelTables {
  std::array<std::string, 256> chars;  // byte -> UTF-8 of its code point
  std::array<int, 512> bytes{};  // code point -> byte, -1 when none (mapped code points < 0x144)
  ByteLevelTables() {
    bytes.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const uint32_t cp = printable ? b : next++;
      unicode::append_utf8(chars[b], cp);
      bytes[cp] = b;
    }
  }
};

const ByteLevelTables& byte_level() {
  static const ByteLevelTables tables;
  return tables;
}

}  // namespace

const std::string& byte_level_char(unsigned char byte) { return byte_level().chars[byte]; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) out += byte_level().chars[static_cast<unsigned char>(b)];
  return out;
}

std::string byte_level_decode(std::string_view mapped) {
  std::string out;
  out.reserve(mapped.size());
  for (uint32_t cp : unicode::decode_utf8(mapped)) {
    if (cp < byte_level().bytes.size() && byte_level().bytes[cp] >= 0) {
      out += static_cast<char>(byte_level().bytes[cp]);
    } else {
      unicode::append_utf8(out, cp);
    }
  }
  return out;
}

}  // namespace kbrl::lm
