#pragma once
// The byte-level BPE tokenizer of GPT-2-style vocabularies (SmolLM2, Llama 3, Qwen2, ...), read from
// a GGUF file's metadata (tokenizer.ggml.*) or a Hugging Face tokenizer.json. It gives exactly the
// token ids llama.cpp gives (checked against llama-server's /tokenize by the llm test
// test_lm_tokenizer_llm): the pre-tokenizer's regular expressions per `tokenizer.ggml.pre`
// (implemented by hand over Unicode code point categories, not std::regex), then BPE merges by
// rank over the byte-to-unicode mapped pieces; special (control / user-defined) tokens written in
// the text are matched first when `parse_special` is set. No libtorch here.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kbrl::lm {

class GgufFile;

/// What a tokenizer is built from.
struct TokenizerData {
  std::vector<std::string> tokens;  // the vocabulary, id order, in byte-to-unicode form
  std::vector<int32_t> token_types;  // llama.cpp's: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  std::vector<std::string> merges;   // "a b", rank order
  std::string pre = "default";       // the pre-tokenizer: smollm, llama3 (llama-bpe), qwen2, gpt2, default, ...
  int bos = -1;
  int eos = -1;
  int eot = -1;  // end of turn (e.g. <|im_end|>, <|eot_id|>); -1 when none
  bool add_bos = false;
};

/// From tokenizer.ggml.* metadata. InputError when the model is not "gpt2" (byte-level BPE) or the
/// pre-tokenizer is not one this implementation knows (naming it and the known ones).
TokenizerData tokenizer_data_from_gguf(const GgufFile& file);
/// From a Hugging Face tokenizer.json (model.type BPE with a ByteLevel pre-tokenizer) and, when
/// given, tokenizer_config.json (bos/eos, add_bos). InputError for anything else.
TokenizerData tokenizer_data_from_json(const std::string& tokenizer_json, const std::string& tokenizer_config_json);

class Tokenizer {
 public:
  explicit Tokenizer(TokenizerData data);
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  /// Token ids of `text` (UTF-8; invalid bytes are tokenized as bytes, as llama.cpp does).
  /// `add_special`: prepend BOS when the model asks for it (add_bos). `parse_special`: special
  /// tokens written in the text (e.g. "<|im_start|>") become their ids; else they are plain text.
  std::vector<int> encode(std::string_view text, bool add_special = false, bool parse_special = true) const;
  /// The bytes of the tokens (special tokens as their text when `special`, else nothing).
  std::string decode(const std::vector<int>& ids, bool special = true) const;
  /// One token's bytes.
  std::string piece(int id, bool special = true) const;

  int vocab_size() const;
  int bos() const;
  int eos() const;
  int eot() const;
  /// Is the id an end of generation (eos or eot)?
  bool is_end(int id) const;
  /// The id of an exact special token's text, or -1.
  int special_id(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl::lm
