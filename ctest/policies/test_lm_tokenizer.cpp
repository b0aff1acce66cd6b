// The byte-level BPE tokenizer without a model file: the pre-tokenizers' splits, GPT-2's byte
// mapping, BPE merge order, special tokens written in the text, invalid UTF-8, decoding, and the
// Hugging Face tokenizer.json reader, all on a hand-made vocabulary. Every expected split below was
// worked out by hand from the pre-tokenizer's regular expression (as llama.cpp's matchers run it;
// the derivation is in the comment beside each); the llm test test_lm_tokenizer_llm checks the
// whole against llama.cpp on SmolLM2's real vocabulary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <policies/lm/pretokenizer.h>
#include <policies/lm/tokenizer.h>

#include <kbrl/error.h>

namespace kbrl::lm {
namespace {

using Words = std::vector<std::string>;

TEST(LmPretokenizer, SmolLM) {
  const auto split = [](std::string_view s) { return pretokenize(PreTokenizerKind::smollm, s); };
  EXPECT_EQ(split("Hello world"), (Words{"Hello", " world"}));
  // Every digit alone first (\p{N}); GPT-2's expression then cuts "x=" into a letter run and a
  // punctuation run.
  EXPECT_EQ(split("x=12345;"), (Words{"x", "=", "1", "2", "3", "4", "5", ";"}));
  // 's is a contraction; of the 2 spaces before "done" (\s+(?!\S)) the last goes with the word; of
  // "\n\n  " before "ok" likewise.
  EXPECT_EQ(split("it's  done\n\n  ok"), (Words{"it", "'s", " ", " done", "\n\n ", " ok"}));
  // The space before a digit ends its piece ("a "), where it is a word of its own.
  EXPECT_EQ(split("a 1"), (Words{"a", " ", "1"}));
  // White space at the end of the text is one word (nothing follows for (?!\S) to spare).
  EXPECT_EQ(split("x   "), (Words{"x", "   "}));
  // Letters of any script are \p{L}; GPT-2's contractions are lowercase only: 'T is "'" then "T".
  EXPECT_EQ(split("héllo мир don'T"), (Words{"héllo", " мир", " don", "'", "T"}));
  // Non-ASCII digits are \p{N} too (Arabic-Indic three, superscript two).
  EXPECT_EQ(split("a٣²b"), (Words{"a", "٣", "²", "b"}));
  EXPECT_EQ(split(""), Words{});
}

TEST(LmPretokenizer, Llama3) {
  const auto split = [](std::string_view s) { return pretokenize(PreTokenizerKind::llama3, s); };
  // Digits in runs of at most 3 (\p{N}{1,3}); "=" and ";" are  ?[^\s\p{L}\p{N}]+.
  EXPECT_EQ(split("x=12345;"), (Words{"x", "=", "123", "45", ";"}));
  // Contractions in any case: "'T" is one word.
  EXPECT_EQ(split("don'T"), (Words{"don", "'T"}));
  // "  hello": 2 spaces then a letter: \s+(?!\S) takes 1, [^\r\n\p{L}\p{N}]?\p{L}+ takes " hello";
  // "\n\n  x": \s*[\r\n]+ takes up to the last newline, then " " and " x" as before.
  EXPECT_EQ(split("  hello\n\n  x"), (Words{" ", " hello", "\n\n", " ", " x"}));
  // Punctuation takes the newlines after it ([\r\n]*).
  EXPECT_EQ(split("a...\n\nb"), (Words{"a", "...\n\n", "b"}));
  // One non-letter, non-digit, non-newline character may lead a letter run.
  EXPECT_EQ(split("(hello)"), (Words{"(hello", ")"}));
  EXPECT_EQ(split("I'M 1234567"), (Words{"I", "'M", " ", "123", "456", "7"}));
}

TEST(LmPretokenizer, Gpt2Qwen2AndLlamaCppDefault) {
  EXPECT_EQ(pretokenize(PreTokenizerKind::gpt2, "x=12345; 123abc"),
            (Words{"x", "=", "12345", ";", " 123", "abc"}));
  EXPECT_EQ(pretokenize(PreTokenizerKind::qwen2, "x=12345"), (Words{"x", "=", "1", "2", "3", "4", "5"}));
  // llama.cpp's "default" chain: [\p{P}$+<=>^~|]+ isolates "+=" and ";"; GPT-2's expression keeps
  // " 1234567"; \p{N}+ cuts off the space; [0-9]{3} cuts the digits in threes from the left.
  EXPECT_EQ(pretokenize(PreTokenizerKind::llamacpp_default, "a+=b; 1234567"),
            (Words{"a", "+=", "b", ";", " ", "123", "456", "7"}));
}

TEST(LmPretokenizer, NamesAndInvalidUtf8) {
  EXPECT_EQ(pretokenizer_kind("smollm"), PreTokenizerKind::smollm);
  EXPECT_EQ(pretokenizer_kind("llama-bpe"), PreTokenizerKind::llama3);
  EXPECT_EQ(pretokenizer_kind("qwen2"), PreTokenizerKind::qwen2);
  EXPECT_THROW(pretokenizer_kind("tekken"), InputError);
  // Each byte that starts no well-formed sequence becomes U+FFFD (EF BF BD), as in llama.cpp; an
  // overlong form is read as its code point ("\xC1\x81" is 'A').
  EXPECT_EQ(pretokenize(PreTokenizerKind::gpt2, "a\xff\xC3"), (Words{"a", "\xEF\xBF\xBD\xEF\xBF\xBD"}));
  EXPECT_EQ(pretokenize(PreTokenizerKind::gpt2, "\xC1\x81"), (Words{"A"}));
}

TEST(LmPretokenizer, ByteLevelMapping) {
  // GPT-2's table: printable bytes map to themselves; the others, in byte order, to U+0100 on.
  EXPECT_EQ(byte_level_encode(" "), "Ġ");  // 0x20, the 33rd unprintable byte: U+0120
  EXPECT_EQ(byte_level_encode("\n"), "Ċ");  // 0x0A: U+010A
  EXPECT_EQ(byte_level_encode(std::string(1, '\0')), "Ā");
  EXPECT_EQ(byte_level_encode("\xAD"), "Ń");  // after 0x00..0x20 and 0x7F..0xA0: U+0143
  EXPECT_EQ(byte_level_encode("a\xFF"), "aÿ");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(byte_level_decode(byte_level_encode(all)), all);
}

// A vocabulary of the 256 byte characters (id = byte), a few merged tokens, and special tokens.
TokenizerData tiny(const std::string& pre = "smollm") {
  TokenizerData d;
  for (int b = 0; b < 256; ++b) d.tokens.push_back(byte_level_char(static_cast<unsigned char>(b)));
  d.token_types.assign(256, 1);
  const auto add = [&](const std::string& text, int type) {
    d.tokens.push_back(text);
    d.token_types.push_back(type);
    return static_cast<int>(d.tokens.size() - 1);
  };
  for (const char* t : {"lo", "low", "er", "Ġlow", "lower", "Ġlower", "bc", "ab", "aa", "xyz"})
    add(t, 1);
  d.merges = {"l o", "lo w", "e r", "Ġ low", "low er", "Ġlow er", "b c", "a b", "a a", "x y"};
  d.bos = add("<|im_start|>", 3);
  d.eos = add("<|im_end|>", 3);
  add("<|im", 3);
  add("<tool>", 4);
  d.eot = d.eos;
  d.pre = pre;
  return d;
}

TEST(LmTokenizer, BpeMergesByRank) {
  const Tokenizer tok(tiny());
  const auto id = [&](const std::string& text) {
    for (int i = 0; i < tok.vocab_size(); ++i) {
      if (tok.piece(i) == text) return i;
    }
    return -1;
  };
  EXPECT_EQ(tok.encode("lower"), (std::vector<int>{id("lower")}));
  EXPECT_EQ(tok.encode(" lower"), (std::vector<int>{id(" lower")}));
  EXPECT_EQ(tok.encode("lowest"), (std::vector<int>{id("low"), 'e', 's', 't'}));
  // "b c" ranks before "a b": abc is a + bc, not ab + c.
  EXPECT_EQ(tok.encode("abc"), (std::vector<int>{'a', id("bc")}));
  // Equal ranks merge leftmost first.
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int>{id("aa"), 'a'}));
  // The merge "x y" makes "xy", which is no token: it ends as its bytes' tokens (llama.cpp's
  // fallback), and "xyz", a token no merge makes, is not reached.
  EXPECT_EQ(tok.encode("xyz"), (std::vector<int>{'x', 'y', 'z'}));
  // Llama 3 takes a word that is a token whole (llama.cpp's ignore_merges).
  EXPECT_EQ(Tokenizer(tiny("llama3")).encode("xyz"), (std::vector<int>{id("xyz")}));
  // Invalid bytes become U+FFFD's three bytes.
  EXPECT_EQ(tok.encode("a\xff"), (std::vector<int>{'a', 0xEF, 0xBF, 0xBD}));
}

TEST(LmTokenizer, SpecialTokensAndDecode) {
  const Tokenizer tok(tiny());
  const int start = tok.special_id("<|im_start|>"), end = tok.special_id("<|im_end|>");
  const int im = tok.special_id("<|im"), tool = tok.special_id("<tool>");
  ASSERT_GE(start, 256);
  EXPECT_EQ(tok.bos(), start);
  EXPECT_TRUE(tok.is_end(end));
  EXPECT_FALSE(tok.is_end('a'));
  EXPECT_EQ(tok.special_id("lower"), -1);
  // Longest first: "<|im_end|>" is not "<|im" + text.
  EXPECT_EQ(tok.encode("x<|im_end|>y<|im"), (std::vector<int>{'x', end, 'y', im}));
  EXPECT_EQ(tok.encode("<|im_start|><tool>"), (std::vector<int>{start, tool}));
  // Without parse_special control tokens are text; user-defined ones are still cut out.
  const auto plain = tok.encode("<|im_end|><tool>", false, false);
  EXPECT_EQ(plain.size(), 11u);  // the 10 bytes of "<|im_end|>" (no merges apply) and <tool>
  EXPECT_EQ(plain.back(), tool);
  // add_special prepends BOS only when the model asks for it.
  EXPECT_EQ(tok.encode("a", true), (std::vector<int>{'a'}));
  TokenizerData with_bos = tiny();
  with_bos.add_bos = true;
  EXPECT_EQ(Tokenizer(with_bos).encode("a", true), (std::vector<int>{start, 'a'}));
  // Decoding: control tokens give their text only when asked.
  EXPECT_EQ(tok.decode({start, 'h', 'i', end}), "<|im_start|>hi<|im_end|>");
  EXPECT_EQ(tok.decode({start, 'h', 'i', end}, false), "hi");
  EXPECT_EQ(tok.decode({tool}, false), "<tool>");
  for (const std::string s :
       {"lower lowest  \n\t x", "café 中文 😀 Привет", "a<|im_end|>b", "\r\n\r\n   1234"}) {
    EXPECT_EQ(tok.decode(tok.encode(s)), s);
  }
  EXPECT_THROW(tok.piece(tok.vocab_size()), InputError);
  TokenizerData bad = tiny();
  bad.pre = "tekken";
  EXPECT_THROW(Tokenizer{bad}, InputError);
}

TEST(LmTokenizer, HuggingFaceJson) {
  using nlohmann::json;
  const TokenizerData d = tiny();
  json vocab = json::object();
  for (int i = 0; i < 266; ++i) vocab[d.tokens[i]] = i;
  json merges = json::array();
  for (const std::string& m : d.merges)
    merges.push_back(json::array({m.substr(0, m.find(' ')), m.substr(m.find(' ') + 1)}));
  json tj = {
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
      {"added_tokens", json::array({{{"id", 266}, {"content", "<|im_start|>"}, {"special", true}},
                                    {{"id", 267}, {"content", "<|im_end|>"}, {"special", true}},
                                    {{"id", 268}, {"content", "<|im"}, {"special", true}},
                                    {{"id", 269}, {"content", "<tool>"}, {"special", false}}})},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Digits"}, {"individual_digits", true}},
                      {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}})}}}};
  const json config = {{"bos_token", "<|im_start|>"}, {"eos_token", {{"content", "<|im_end|>"}}}};
  const TokenizerData j = tokenizer_data_from_json(tj.dump(), config.dump());
  EXPECT_EQ(j.tokens, d.tokens);
  EXPECT_EQ(j.token_types, d.token_types);
  EXPECT_EQ(j.merges, d.merges);
  EXPECT_EQ(j.pre, "smollm");
  EXPECT_EQ(j.bos, 266);
  EXPECT_EQ(j.eos, 267);
  EXPECT_EQ(j.eot, 267);
  EXPECT_FALSE(j.add_bos);
  EXPECT_EQ(Tokenizer(j).encode("x<|im_end|> lower 12"), Tokenizer(d).encode("x<|im_end|> lower 12"));
  // Llama 3's Split expression, then ByteLevel without its own regex.
  tj["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers",
       json::array({{{"type", "Split"},
                     {"behavior", "Isolated"},
                     {"pattern",
                      {{"Regex",
                        "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
                        "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
                        "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}}}},
                    {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  const TokenizerData l = tokenizer_data_from_json(tj.dump(), "");
  EXPECT_EQ(l.pre, "llama3");
  EXPECT_TRUE(l.add_bos);  // llama.cpp's default for Llama 3 when nothing says otherwise
  EXPECT_EQ(l.bos, -1);
  tj["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_THROW(tokenizer_data_from_json(tj.dump(), ""), InputError);
  tj["model"]["type"] = "WordPiece";
  EXPECT_THROW(tokenizer_data_from_json(tj.dump(), ""), InputError);
  EXPECT_THROW(tokenizer_data_from_json("{not json", ""), InputError);
}

}  // namespace
}  // namespace kbrl::lm
