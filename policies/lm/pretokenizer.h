#pragma once
// The pre-tokenizers of byte-level BPE vocabularies (internal to kbrl_lm_files): they cut text into
// the words BPE then merges within, exactly as llama.cpp's unicode_regex_split does for the
// tokenizer.ggml.pre values it maps to the same regular expressions. The expressions are
// implemented by hand over code points and their Unicode categories (no std::regex): llama.cpp
// itself runs hand-written matchers for them, whose corner cases (a run of spaces at the end of a
// piece, code points that are neither letter, number nor space) decide the ids.
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kbrl::lm {

enum class PreTokenizerKind {
  gpt2,  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  smollm,  // each \p{N} alone, then gpt2 (SmolLM, StarCoder, Refact, CodeShell, Command-R)
  llama3,  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
           // ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  qwen2,  // llama3's with \p{N} (single digits) for \p{N}{1,3}
  llamacpp_default,  // llama.cpp's "default": [\p{P}$+<=>^~|]+, then gpt2, then \p{N}+, then [0-9]{3}
};

/// The kind of a tokenizer.ggml.pre name (llama.cpp's names: "smollm", "llama-bpe", "qwen2", "gpt-2",
/// "default", ...; "llama3" and "gpt2" too). InputError naming it and the known names otherwise.
PreTokenizerKind pretokenizer_kind(const std::string& pre);
/// The names pretokenizer_kind knows, comma-separated (for messages).
std::string known_pretokenizers();
/// The pretokenizer_kind name of a Hugging Face tokenizer.json's "pre_tokenizer": ByteLevel with its
/// own regex (gpt2); Digits(individual_digits) or Split(\p{N}) then ByteLevel (smollm); Split with
/// Llama 3's or Qwen2's expression then ByteLevel without regex (llama3, qwen2). InputError naming
/// what was found otherwise.
std::string pretokenizer_name_from_hf(const nlohmann::json& pre_tokenizer);
/// Does llama.cpp take a word that is itself a token whole, without merging (its ignore_merges)?
bool pretokenizer_ignores_merges(PreTokenizerKind kind);
/// Does llama.cpp prepend BOS for this pre-tokenizer when the file does not say (add_bos_token)?
bool pretokenizer_adds_bos(PreTokenizerKind kind);

/// The words of `text`, in order, as UTF-8; their concatenation is `text` after llama.cpp's UTF-8
/// reading (an invalid byte becomes U+FFFD, see unicode::decode_utf8).
std::vector<std::string> pretokenize(PreTokenizerKind kind, std::string_view text);

/// GPT-2's byte-to-unicode mapping (the ByteLevel step): every byte becomes one printable code point
/// (bytes 0x21..0x7E, 0xA1..0xAC, 0xAE..0xFF themselves, the others U+0100 onwards in byte order),
/// so that vocabulary entries are printable text. Returns the UTF-8 of the mapped code points.
std::string byte_level_encode(std::string_view bytes);
/// The UTF-8 of the code point `byte` maps to.
const std::string& byte_level_char(unsigned char byte);
/// The inverse: the bytes of mapped text. A code point outside the mapping is kept as its UTF-8.
std::string byte_level_decode(std::string_view mapped);

}  // namespace kbrl::lm
