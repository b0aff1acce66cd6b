#pragma once
// Writing tiny Hugging Face model folders for test_lm_files: safetensors files (F32, F16, BF16,
// or raw header text for hostile cases), the config.json and tensors of a 2-layer hidden-8 Llama,
// and a minimal byte-level BPE tokenizer.json with SmolLM2's chat template in its
// tokenizer_config.json.
#include <bit>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

namespace kbrl::lm::hf_testing {

namespace fs = std::filesystem;

struct Tensor {
  std::string name;
  std::string dtype;  // F32, F16, BF16 (others written as zero bytes of their size)
  std::vector<int64_t> shape;
  std::vector<float> values;
};

/// float -> binary16 bits for values the test chose to be exactly representable normals or zero.
inline uint16_t f16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  if ((bits & 0x7fffffffu) == 0) return static_cast<uint16_t>(sign);
  const int exponent = static_cast<int>((bits >> 23) & 0xff) - 127 + 15;
  EXPECT_TRUE(exponent > 0 && exponent < 31 && (bits & 0x1fffu) == 0) << value;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exponent) << 10) |
                               ((bits >> 13) & 0x3ffu));
}

inline uint16_t bf16_bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  EXPECT_EQ(bits & 0xffffu, 0u) << value << " is not a bfloat16";
  return static_cast<uint16_t>(bits >> 16);
}

inline std::string encoded(const Tensor& tensor) {
  std::string bytes;
  for (float value : tensor.values) {
    if (tensor.dtype == "F32") {
      bytes.append(reinterpret_cast<const char*>(&value), 4);
    } else if (tensor.dtype == "F16" || tensor.dtype == "BF16") {
      const uint16_t bits = tensor.dtype == "F16" ? f16_bits(value) : bf16_bits(value);
      bytes.append(reinterpret_cast<const char*>(&bits), 2);
    } else {
      bytes.append(8, '\0');  // I64 and the like
    }
  }
  return bytes;
}

inline void write_file(const fs::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << file;
}

/// A safetensors file from its header text and data; `header_length` overrides the length field.
inline void write_raw_safetensors(const fs::path& file, const std::string& header,
                                  const std::string& data,
                                  std::optional<uint64_t> header_length = std::nullopt) {
  const uint64_t length = header_length.value_or(header.size());
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  write_file(file, bytes + header + data);
}

inline void write_safetensors(const fs::path& file, const std::vector<Tensor>& tensors) {
  std::vector<std::string> entries = {R"("__metadata__":{"format":"pt"})"};
  std::string data;
  for (const Tensor& tensor : tensors) {
    const std::string bytes = encoded(tensor);
    entries.push_back(fmt::format(R"("{}":{{"dtype":"{}","shape":[{}],"data_offsets":[{},{}]}})",
                                  tensor.name, tensor.dtype, fmt::join(tensor.shape, ","),
                                  data.size(), data.size() + bytes.size()));
    data += bytes;
  }
  write_raw_safetensors(file, "{" + fmt::format("{}", fmt::join(entries, ",")) + "}", data);
}

// The tiny model: vocab 8, hidden 8, intermediate 12, 2 layers, 2 heads of 4, 1 kv head.
constexpr int64_t kVocab = 8, kHidden = 8, kInter = 12, kLayers = 2, kQRows = 8, kKvRows = 4;

/// Tensors of the tiny model; the dtypes cycle F32, F16, BF16 and every value is a multiple of
/// 1/8 in [-2, 2), exactly representable in all three.
inline std::vector<Tensor> tiny_tensors(bool lm_head, bool qkv_bias, int64_t kv_rows = kKvRows) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"model.embed_tokens.weight", {kVocab, kHidden}}, {"model.norm.weight", {kHidden}}};
  for (int layer = 0; layer < kLayers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    shapes.push_back({p + "self_attn.q_proj.weight", {kQRows, kHidden}});
    shapes.push_back({p + "self_attn.k_proj.weight", {kv_rows, kHidden}});
    shapes.push_back({p + "self_attn.v_proj.weight", {kv_rows, kHidden}});
    shapes.push_back({p + "self_attn.o_proj.weight", {kHidden, kQRows}});
    if (qkv_bias) {
      shapes.push_back({p + "self_attn.q_proj.bias", {kQRows}});
      shapes.push_back({p + "self_attn.k_proj.bias", {kv_rows}});
      shapes.push_back({p + "self_attn.v_proj.bias", {kv_rows}});
    }
    shapes.push_back({p + "mlp.gate_proj.weight", {kInter, kHidden}});
    shapes.push_back({p + "mlp.up_proj.weight", {kInter, kHidden}});
    shapes.push_back({p + "mlp.down_proj.weight", {kHidden, kInter}});
    shapes.push_back({p + "input_layernorm.weight", {kHidden}});
    shapes.push_back({p + "post_attention_layernorm.weight", {kHidden}});
    shapes.push_back({p + "self_attn.rotary_emb.inv_freq", {2}});  // extra: ignored
  }
  if (lm_head) shapes.push_back({"lm_head.weight", {kVocab, kHidden}});
  static const char* kDtypes[] = {"F32", "F16", "BF16"};
  std::vector<Tensor> tensors;
  for (size_t t = 0; t < shapes.size(); ++t) {
    Tensor tensor{shapes[t].first, kDtypes[t % 3], shapes[t].second, {}};
    int64_t count = 1;
    for (int64_t dim : tensor.shape) count *= dim;
    for (int64_t i = 0; i < count; ++i) {
      tensor.values.push_back(static_cast<float>((i * 7 + static_cast<int64_t>(t) * 5) % 32 - 16) /
                              8.0f);
    }
    tensors.push_back(tensor);
  }
  return tensors;
}

/// config.json of the tiny model; `changes` sets keys (a JSON literal) or removes them ("").
inline std::string tiny_config(const std::map<std::string, std::string>& changes = {}) {
  std::map<std::string, std::string> keys = {
      {"architectures", R"(["LlamaForCausalLM"])"}, {"model_type", R"("llama")"},
      {"vocab_size", "8"}, {"hidden_size", "8"}, {"intermediate_size", "12"},
      {"num_hidden_layers", "2"}, {"num_attention_heads", "2"}, {"num_key_value_heads", "1"},
      {"max_position_embeddings", "512"}, {"rope_theta", "100000.0"}, {"rms_norm_eps", "1e-05"},
      {"hidden_act", R"("silu")"}, {"rope_scaling", "null"}, {"attention_bias", "false"},
      {"tie_word_embeddings", "false"}, {"torch_dtype", R"("bfloat16")"}};
  for (const auto& [key, value] : changes) {
    if (value.empty()) {
      keys.erase(key);
    } else {
      keys[key] = value;
    }
  }
  std::vector<std::string> entries;
  for (const auto& [key, value] : keys) entries.push_back(fmt::format("\"{}\": {}", key, value));
  return "{" + fmt::format("{}", fmt::join(entries, ",\n")) + "}";
}

// A minimal byte-level BPE tokenizer.json ("Ġ" is the byte-to-unicode form of a space).
inline const char* const kTokenizerJson = R"({
  "version": "1.0",
  "added_tokens": [
    {"id": 0, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 1, "content": "<|im_start|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
    {"id": 2, "content": "<|im_end|>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true}
  ],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": {"<|endoftext|>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "a": 3, "b": 4,
                      "ab": 5, "\u0120": 6, "\u0120ab": 7},
            "merges": ["a b", "\u0120 ab"]}
})";

// tokenizer_config.json with SmolLM2's chat template (escaped as JSON).
inline const char* const kTokenizerConfigJson = R"({
  "add_prefix_space": false, "bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
  "chat_template": "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
  "model_max_length": 512, "tokenizer_class": "GPT2Tokenizer"
})";

}  // namespace kbrl::lm::hf_testing
