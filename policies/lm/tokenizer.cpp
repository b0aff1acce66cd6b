#include "tokenizer.h"

#include <algorithm>
#include <array>
#include <queue>
#include <unordered_map>

#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include "gguf.h"
#include "pretokenizer.h"

namespace kbrl::lm {
namespace {

// llama.cpp's token types (tokenizer.ggml.token_type).
constexpr int32_t kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;

// Texts llama.cpp treats as end-of-generation; when such a token is not control-typed in a GGUF file
// llama.cpp makes it one (llama-vocab.cpp, "control-looking token"), which decides whether the
// text "<|im_end|>" is split out as the token.
bool eog_looking(const std::string& text) {
  static const char* const kTexts[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",   "<|endoftext|>",
      "<|eom_id|>", "<EOT>",      "_<EOT>",  "<|end_of_text|>", "<end_of_utterance>"};
  return std::find(std::begin(kTexts), std::end(kTexts), text) != std::end(kTexts);
}

int find_token(const std::vector<std::string>& tokens, const std::string& text) {
  const auto it = std::find(tokens.begin(), tokens.end(), text);
  return it == tokens.end() ? -1 : static_cast<int>(it - tokens.begin());
}

// The end-of-turn token when the file names none: ChatML's or Llama 3's.
int guess_eot(const std::vector<std::string>& tokens) {
  const int im_end = find_token(tokens, "<|im_end|>");
  return im_end >= 0 ? im_end : find_token(tokens, "<|eot_id|>");
}

}  // namespace

TokenizerData tokenizer_data_from_gguf(const GgufFile& file) {
  const std::string where = file.path().string();
  const std::string model = file.string("tokenizer.ggml.model");
  KBRL_CHECK_INPUT(model == "gpt2",
                   "{}: tokenizer.ggml.model is '{}'; kbrl reads byte-level BPE tokenizers only "
                   "('gpt2': SmolLM2, Llama 3, Qwen2); use such a model",
                   where, model);
  TokenizerData d;
  d.tokens = file.strings("tokenizer.ggml.tokens");
  if (file.has("tokenizer.ggml.token_type")) {
    for (int64_t t : file.integers("tokenizer.ggml.token_type"))
      d.token_types.push_back(static_cast<int32_t>(t));
    KBRL_CHECK_INPUT(d.token_types.size() == d.tokens.size(),
                     "{}: tokenizer.ggml.token_type has {} entries for {} tokens", where,
                     d.token_types.size(), d.tokens.size());
  } else {
    d.token_types.assign(d.tokens.size(), kNormal);
  }
  d.merges = file.strings("tokenizer.ggml.merges");
  d.pre = file.string("tokenizer.ggml.pre", "default");
  PreTokenizerKind kind{};
  try {
    kind = pretokenizer_kind(d.pre);
  } catch (const InputError& e) {
    throw InputError(where + ": " + e.what());
  }
  d.bos = static_cast<int>(file.integer("tokenizer.ggml.bos_token_id", -1));
  d.eos = static_cast<int>(file.integer("tokenizer.ggml.eos_token_id", -1));
  d.eot = file.has("tokenizer.ggml.eot_token_id")
              ? static_cast<int>(file.integer("tokenizer.ggml.eot_token_id"))
              : guess_eot(d.tokens);
  // llama.cpp's default when the file does not say depends on the pre-tokenizer (Llama 3: BOS).
  d.add_bos = file.boolean("tokenizer.ggml.add_bos_token", pretokenizer_adds_bos(kind));
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    if (eog_looking(d.tokens[i])) d.token_types[i] = kControl;
  }
  return d;
}

TokenizerData tokenizer_data_from_json(const std::string& tokenizer_json,
                                       const std::string& tokenizer_config_json) {
  using nlohmann::json;
  json tj, cj;
  try {
    tj = json::parse(tokenizer_json);
    if (!tokenizer_config_json.empty()) cj = json::parse(tokenizer_config_json);
  } catch (const json::exception& e) {
    throw InputError(std::string("tokenizer.json / tokenizer_config.json is not valid JSON: ") +
                     e.what());
  }
  KBRL_CHECK_INPUT(
      tj.is_object() && tj.contains("model") && tj["model"].value("type", "") == "BPE",
      "tokenizer.json: model.type is not \"BPE\"; kbrl reads byte-level BPE tokenizers only");
  const json& model = tj["model"];
  KBRL_CHECK_INPUT(model.contains("vocab") && model["vocab"].is_object() && model.contains("merges"),
                   "tokenizer.json: model.vocab (an object) or model.merges is missing");
  TokenizerData d;
  const auto put = [&](int64_t id, const std::string& text, int32_t type) {
    KBRL_CHECK_INPUT(id >= 0 && id < (1 << 24), "tokenizer.json: token '{}' has id {}", text, id);
    if (static_cast<size_t>(id) >= d.tokens.size()) {
      // Ids no entry names stay placeholders, as llama.cpp's converter writes them.
      for (size_t i = d.tokens.size(); i <= static_cast<size_t>(id); ++i)
        d.tokens.push_back("[PAD" + std::to_string(i) + "]");
      d.token_types.resize(d.tokens.size(), kUnused);
    }
    d.tokens[id] = text;
    d.token_types[id] = type;
  };
  for (const auto& [text, id] : model["vocab"].items()) put(id.get<int64_t>(), text, kNormal);
  if (tj.contains("added_tokens") && tj["added_tokens"].is_array()) {
    for (const json& t : tj["added_tokens"]) {
      put(t.at("id").get<int64_t>(), t.at("content").get<std::string>(),
          t.value("special", false) ? kControl : kUserDefined);
    }
  }
  for (const json& m : model["merges"]) {
    if (m.is_string()) {
      d.merges.push_back(m.get<std::string>());
    } else {
      KBRL_CHECK_INPUT(m.is_array() && m.size() == 2,
                       "tokenizer.json: a merge is neither \"a b\" nor [\"a\", \"b\"]: {}", m.dump());
      d.merges.push_back(m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
  }
  d.pre = pretokenizer_name_from_hf(tj.contains("pre_tokenizer") ? tj["pre_tokenizer"] : json());
  const auto special_text = [&](const char* key) -> std::string {
    if (!cj.is_object() || !cj.contains(key)) return "";
    const json& v = cj[key];
    return v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", "") : "";
  };
  d.bos = special_text("bos_token").empty() ? -1 : find_token(d.tokens, special_text("bos_token"));
  d.eos = special_text("eos_token").empty() ? -1 : find_token(d.tokens, special_text("eos_token"));
  d.eot = guess_eot(d.tokens);
  const bool add_bos_default = pretokenizer_adds_bos(pretokenizer_kind(d.pre));
  d.add_bos = cj.is_object() && cj.contains("add_bos_token") && cj["add_bos_token"].is_boolean()
                  ? cj["add_bos_token"].get<bool>()
                  : add_bos_default;
  return d;
}

struct Tokenizer::Impl {
  TokenizerData data;
  PreTokenizerKind kind{};
  bool ignore_merges = false;
  std::unordered_map<std::string, int> id_of;  // token text -> id (the last of duplicates, as llama.cpp)
  // BPE runs over symbols: a token's id, or from vocab_size on, a merge's part or result that is no
  // token (a malformed vocabulary: such a symbol ends as the tokens of its single bytes, as in
  // llama.cpp).
  std::unordered_map<std::string, int> extra_of;
  std::vector<std::string> extra_text;
  std::unordered_map<uint64_t, std::pair<int, int>> merges;  // (left, right) -> (rank, merged symbol)
  std::array<int, 256> byte_symbol{};  // the symbol of each byte's mapped character
  std::vector<int> specials;  // control, user-defined and unknown tokens, longest text first
  std::unordered_map<std::string, int> special_of;
  std::vector<std::string> pieces;  // each token's bytes; control and unknown tokens: their text

  int symbol(const std::string& text) {
    if (const auto it = id_of.find(text); it != id_of.end()) return it->second;
    const auto [it, added] =
        extra_of.try_emplace(text, static_cast<int>(data.tokens.size() + extra_text.size()));
    if (added) extra_text.push_back(text);
    return it->second;
  }
  static uint64_t key(int left, int right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  bool is_special_type(int id) const {
    const int32_t t = data.token_types[id];
    return t == kControl || t == kUserDefined || t == kUnknown;
  }
  void bpe(const std::string& word, std::vector<int>& out) const;
};

// Merges the word's bytes by rank, lowest first and leftmost among equals (llama.cpp's order).
void Tokenizer::Impl::bpe(const std::string& word, std::vector<int>& out) const {
  if (ignore_merges) {
    if (const auto it = id_of.find(byte_level_encode(word)); it != id_of.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int id, prev, next;
  };
  struct Pair {
    int rank, left, right, left_id, right_id;
    bool operator<(const Pair& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  const int n = static_cast<int>(word.size());
  std::vector<Symbol> s(n);
  for (int i = 0; i < n; ++i)
    s[i] = {byte_symbol[static_cast<unsigned char>(word[i])], i - 1, i + 1 < n ? i + 1 : -1};
  std::priority_queue<Pair> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const auto it = merges.find(key(s[left].id, s[right].id));
    if (it != merges.end()) queue.push({it->second.first, left, right, s[left].id, s[right].id});
  };
  for (int i = 1; i < n; ++i) consider(i - 1, i);
  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& l = s[p.left];
    Symbol& r = s[p.right];
    if (l.id != p.left_id || r.id != p.right_id || l.next != p.right) continue;  // outdated
    l.id = merges.at(key(p.left_id, p.right_id)).second;
    l.next = r.next;
    if (r.next >= 0) s[r.next].prev = p.left;
    r.id = -1;
    consider(l.prev, p.left);
    consider(p.left, l.next);
  }
  const int vocab = static_cast<int>(data.tokens.size());
  for (int i = n > 0 ? 0 : -1; i >= 0; i = s[i].next) {
    if (s[i].id < vocab) {
      out.push_back(s[i].id);
      continue;
    }
    for (char c : extra_text[s[i].id - vocab]) {
      if (const auto it = id_of.find(std::string(1, c)); it != id_of.end()) out.push_back(it->second);
    }
  }
}

Tokenizer::Tokenizer(TokenizerData data) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  KBRL_CHECK_INPUT(!data.tokens.empty(), "the tokenizer has no tokens");
  if (data.token_types.empty()) data.token_types.assign(data.tokens.size(), kNormal);
  KBRL_CHECK_INPUT(data.token_types.size() == data.tokens.size(),
                   "the tokenizer has {} token types for {} tokens", data.token_types.size(),
                   data.tokens.size());
  const int vocab = static_cast<int>(data.tokens.size());
  for (int id : {data.bos, data.eos, data.eot}) {
    KBRL_CHECK_INPUT(id >= -1 && id < vocab,
                     "the tokenizer's bos/eos/eot id {} is outside its {} tokens", id, vocab);
  }
  m.kind = pretokenizer_kind(data.pre);
  m.ignore_merges = pretokenizer_ignores_merges(m.kind);
  for (int id = 0; id < vocab; ++id) {
    std::string& text = data.tokens[id];
    if (text.empty()) text = "[EMPTY_" + std::to_string(id) + "]";  // llama.cpp's name for it
    m.id_of[text] = id;
  }
  m.data = std::move(data);
  for (int b = 0; b < 256; ++b)
    m.byte_symbol[b] = m.symbol(byte_level_char(static_cast<unsigned char>(b)));
  for (size_t rank = 0; rank < m.data.merges.size(); ++rank) {
    const std::string& merge = m.data.merges[rank];
    const size_t space = merge.find(' ', 1);
    KBRL_CHECK_INPUT(space != std::string::npos, "the tokenizer's merge {} ('{}') is not \"left right\"",
                     rank, merge);
    const std::string left = merge.substr(0, space), right = merge.substr(space + 1);
    const int l = m.symbol(left), r = m.symbol(right);
    // The first of duplicate merges counts, as in llama.cpp.
    m.merges.try_emplace(Impl::key(l, r), static_cast<int>(rank), m.symbol(left + right));
  }
  m.pieces.resize(vocab);
  for (int id = 0; id < vocab; ++id) {
    const std::string& text = m.data.tokens[id];
    const int32_t type = m.data.token_types[id];
    if (m.is_special_type(id)) {
      m.specials.push_back(id);
      m.special_of.try_emplace(text, id);
      m.pieces[id] = text;
    } else if (type == kNormal) {
      m.pieces[id] = byte_level_decode(text);
    } else if (type == kByte && text.size() == 6 && text.rfind("<0x", 0) == 0) {
      m.pieces[id] = std::string(1, static_cast<char>(std::stoi(text.substr(3, 2), nullptr, 16)));
    }  // unused and undefined tokens decode to nothing, as in llama.cpp
  }
  std::stable_sort(m.specials.begin(), m.specials.end(),
                   [&](int a, int b) { return m.data.tokens[a].size() > m.data.tokens[b].size(); });
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

std::vector<int> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& m = *impl_;
  // The text cut at special tokens written in it (llama.cpp's tokenizer_st_partition): one token at
  // a time, longest first, each found in the pieces of text the longer ones left. Without
  // parse_special only user-defined tokens are cut out, as llama.cpp (and Hugging Face) do.
  struct Fragment {
    int id;  // -1: text
    size_t begin, end;
  };
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  for (int special : m.specials) {
    const int32_t type = m.data.token_types[special];
    if (!parse_special && type != kUserDefined) continue;
    const std::string& t = m.data.tokens[special];
    std::vector<Fragment> next;
    next.reserve(fragments.size());
    for (const Fragment& f : fragments) {
      size_t at = f.begin;
      for (size_t hit;
           f.id < 0 && (hit = text.substr(0, f.end).find(t, at)) != std::string_view::npos;) {
        if (hit > at) next.push_back({-1, at, hit});
        next.push_back({special, hit, hit + t.size()});
        at = hit + t.size();
      }
      if (f.id >= 0) {
        next.push_back(f);
      } else if (at < f.end) {
        next.push_back({-1, at, f.end});
      }
    }
    fragments = std::move(next);
  }
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 2);
  if (add_special && m.data.add_bos && m.data.bos >= 0) ids.push_back(m.data.bos);
  for (const Fragment& f : fragments) {
    if (f.id >= 0) {
      ids.push_back(f.id);
      continue;
    }
    for (const std::string& word : pretokenize(m.kind, text.substr(f.begin, f.end - f.begin)))
      m.bpe(word, ids);
  }
  return ids;
}

std::string Tokenizer::piece(int id, bool special) const {
  const Impl& m = *impl_;
  KBRL_CHECK_INPUT(id >= 0 && id < vocab_size(), "token id {} is outside the vocabulary of {} tokens",
                   id, vocab_size());
  const int32_t type = m.data.token_types[id];
  if (!special && (type == kControl || type == kUnknown)) return "";
  return m.pieces[id];
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool special) const {
  std::string out;
  for (int id : ids) out += piece(id, special);
  return out;
}

int Tokenizer::vocab_size() const { return static_cast<int>(impl_->data.tokens.size()); }
int Tokenizer::bos() const { return impl_->data.bos; }
int Tokenizer::eos() const { return impl_->data.eos; }
int Tokenizer::eot() const { return impl_->data.eot; }
bool Tokenizer::is_end(int id) const { return id >= 0 && (id == eos() || id == eot()); }

int Tokenizer::special_id(std::string_view text) const {
  const auto it = impl_->special_of.find(std::string(text));
  return it == impl_->special_of.end() ? -1 : it->second;
}

}  // namespace kbrl::lm
