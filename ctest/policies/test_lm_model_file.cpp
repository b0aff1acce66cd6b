// Hugging Face model folders (read_hf_model) and the safetensors reader behind them: a tiny Llama
// folder written here (2 layers, hidden 8, F32/F16/BF16 tensors, a minimal tokenizer) read back
// value for value; tied and untied embeddings, sharded weights, Qwen2 biases; hostile files and
// configs refused with an InputError naming the file and the tensor or key. Also the exact
// float16/bfloat16 conversions of half.h.
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <kbrl/error.h>
#include <policies/lm/half.h>
#include <policies/lm/model_file.h>
#include <policies/lm/safetensors.h>

#include "hf_folder_testing.h"

namespace kbrl::lm {
namespace {

using namespace hf_testing;  // NOLINT(google-build-using-namespace): folder writers, fs alias

// ---- float16 / bfloat16 ----

TEST(HalfFloat, KnownF16BitPatterns) {
  // IEEE 754 binary16 values worked out by hand from the format (sign, 5-bit exponent with bias
  // 15, 10-bit mantissa).
  EXPECT_EQ(float_from_f16(0x3c00), 1.0f);
  EXPECT_EQ(float_from_f16(0xc000), -2.0f);
  EXPECT_EQ(float_from_f16(0x3555), 0.25f * (1.0f + 0x155 / 1024.0f));  // 0.333251953125
  EXPECT_EQ(float_from_f16(0x7bff), 65504.0f);                        // largest finite
  EXPECT_EQ(float_from_f16(0x0400), std::ldexp(1.0f, -14));           // smallest normal
  EXPECT_EQ(float_from_f16(0x0001), std::ldexp(1.0f, -24));           // smallest subnormal
  EXPECT_EQ(float_from_f16(0x03ff), std::ldexp(1023.0f, -24));        // largest subnormal
  EXPECT_EQ(float_from_f16(0x8201), -std::ldexp(513.0f, -24));
  EXPECT_EQ(float_from_f16(0x0000), 0.0f);
  EXPECT_FALSE(std::signbit(float_from_f16(0x0000)));
  EXPECT_TRUE(std::signbit(float_from_f16(0x8000)));
  EXPECT_EQ(float_from_f16(0x8000), 0.0f);
  EXPECT_EQ(float_from_f16(0x7c00), INFINITY);
  EXPECT_EQ(float_from_f16(0xfc00), -INFINITY);
  EXPECT_TRUE(std::isnan(float_from_f16(0x7e00)));
  EXPECT_TRUE(std::isnan(float_from_f16(0xfc01)));
}

#if defined(__FLT16_MANT_DIG__)
TEST(HalfFloat, AllF16ValuesMatchTheCompilersFloat16) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const _Float16 half = std::bit_cast<_Float16>(static_cast<uint16_t>(bits));
    const float expected = static_cast<float>(half);
    const float got = float_from_f16(static_cast<uint16_t>(bits));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(got)) << fmt::format("0x{:04x}", bits);
    } else {
      ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(expected))
          << fmt::format("0x{:04x}", bits);
    }
  }
}
#endif

TEST(HalfFloat, Bf16IsTheUpperHalfOfAFloat) {
  EXPECT_EQ(float_from_bf16(0x3f80), 1.0f);
  EXPECT_EQ(float_from_bf16(0xc049), -3.140625f);
  EXPECT_EQ(float_from_bf16(0x0001), std::ldexp(1.0f, -133));  // subnormal
  EXPECT_EQ(float_from_bf16(0x7f80), INFINITY);
  EXPECT_TRUE(std::signbit(float_from_bf16(0x8000)));
  EXPECT_TRUE(std::isnan(float_from_bf16(0x7fc0)));
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float got = float_from_bf16(static_cast<uint16_t>(bits));
    ASSERT_EQ(std::bit_cast<uint32_t>(got), bits << 16);
  }
}

class HfFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    folder_ = fs::temp_directory_path() /
              fmt::format("kbrl_test_lm_files_{}_{}", ::getpid(), info->name()) / "tiny-llama";
    fs::remove_all(folder_.parent_path());
    fs::create_directories(folder_);
    write("tokenizer.json", kTokenizerJson);
    write("tokenizer_config.json", kTokenizerConfigJson);
  }
  void TearDown() override { fs::remove_all(folder_.parent_path()); }

  void write(const std::string& name, const std::string& text) { write_file(folder_ / name, text); }

  /// A complete tiny folder: config + one model.safetensors.
  void write_model(const std::map<std::string, std::string>& config_changes = {},
                   bool lm_head = true, bool qkv_bias = false) {
    write("config.json", tiny_config(config_changes));
    tensors_ = tiny_tensors(lm_head, qkv_bias);
    write_safetensors(folder_ / "model.safetensors", tensors_);
  }

  /// read_hf_model must fail with an InputError whose message holds every one of `parts`.
  void expect_input_error(const std::vector<std::string>& parts) {
    try {
      read_hf_model(folder_);
      ADD_FAILURE() << "expected an InputError naming "
                    << fmt::format("{}", fmt::join(parts, ", "));
    } catch (const InputError& e) {
      const std::string message = e.what();
      for (const std::string& part : parts) {
        EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
      }
    }
  }

  void expect_weights_as_written(const ModelFile& model, bool skip_lm_head = false) {
    size_t checked = 0;
    for (const Tensor& tensor : tensors_) {
      if (tensor.name.find("inv_freq") != std::string::npos) {
        EXPECT_EQ(model.weights.count(tensor.name), 0u) << "extra tensor kept: " << tensor.name;
        continue;
      }
      if (skip_lm_head && tensor.name == "lm_head.weight") continue;
      const auto found = model.weights.find(tensor.name);
      ASSERT_NE(found, model.weights.end()) << tensor.name;
      EXPECT_EQ(found->second.shape, tensor.shape) << tensor.name;
      EXPECT_EQ(found->second.values, tensor.values) << tensor.name << " (" << tensor.dtype << ")";
      ++checked;
    }
    EXPECT_EQ(model.weights.size(), checked);
  }

  fs::path folder_;
  std::vector<Tensor> tensors_;
};

TEST_F(HfFolder, ReadsConfigWeightsTokenizerAndChatTemplate) {
  write_model();
  const ModelFile model = read_hf_model(folder_);
  const LlamaConfig& c = model.config;
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.vocab_size, kVocab);
  EXPECT_EQ(c.hidden, kHidden);
  EXPECT_EQ(c.intermediate, kInter);
  EXPECT_EQ(c.layers, kLayers);
  EXPECT_EQ(c.heads, 2);
  EXPECT_EQ(c.kv_heads, 1);
  EXPECT_EQ(c.head_dim, 4);
  EXPECT_EQ(c.context_length, 512);
  EXPECT_EQ(c.rope_theta, 100000.0);
  EXPECT_EQ(c.rms_eps, 1e-5);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.tied_embeddings);
  expect_weights_as_written(model);
  EXPECT_EQ(model.weights.size(), 1u + 9u * kLayers + 2u);  // embed, 9 per layer, norm, lm_head

  ASSERT_EQ(model.tokenizer.tokens.size(), 8u);
  EXPECT_EQ(model.tokenizer.tokens[5], "ab");
  EXPECT_EQ(model.tokenizer.bos, 1);
  EXPECT_EQ(model.tokenizer.eos, 2);
  EXPECT_EQ(model.chat.family, ChatFamily::chatml);
  EXPECT_EQ(model.chat.default_system,
            "You are a helpful AI assistant named SmolLM, trained by Hugging Face");
  EXPECT_EQ(model.name, "tiny-llama");
  for (const std::string part : {"tiny-llama", "config.json", "model.safetensors", "F32", "F16",
                                 "BF16", "tokenizer.json", "chatml"}) {
    EXPECT_NE(model.source.find(part), std::string::npos) << part << " not in: " << model.source;
  }
  // The folder's name also with a trailing separator.
  EXPECT_EQ(read_hf_model(folder_.string() + "/").name, "tiny-llama");
}

TEST_F(HfFolder, ConfigDefaults) {
  // Without num_key_value_heads every head has its own k and v (8 rows each of 2 heads of 4).
  write("config.json", tiny_config({{"num_key_value_heads", ""}, {"rope_theta", ""},
                                    {"rms_norm_eps", ""}, {"max_position_embeddings", ""}}));
  tensors_ = tiny_tensors(true, false, /*kv_rows=*/kQRows);
  write_safetensors(folder_ / "model.safetensors", tensors_);
  const ModelFile model = read_hf_model(folder_);
  EXPECT_EQ(model.config.kv_heads, 2);
  EXPECT_EQ(model.config.head_dim, 4);  // hidden / heads
  EXPECT_EQ(model.config.rope_theta, 10000.0);
  EXPECT_EQ(model.config.rms_eps, 1e-6);  // transformers' default
  EXPECT_EQ(model.config.context_length, 2048);
  expect_weights_as_written(model);

  // An explicit head_dim wins over hidden / heads: 4 heads of 2 (q rows 8), 2 kv heads (4 rows).
  write("config.json", tiny_config({{"num_attention_heads", "4"}, {"num_key_value_heads", "2"},
                                    {"head_dim", "2"}}));
  tensors_ = tiny_tensors(true, false);
  write_safetensors(folder_ / "model.safetensors", tensors_);
  EXPECT_EQ(read_hf_model(folder_).config.head_dim, 2);
  write("config.json", tiny_config({{"num_attention_heads", "4"}, {"head_dim", "1"}}));
  expect_input_error({"model.layers.0.self_attn.q_proj.weight", "[8, 8]", "expected [4, 8]"});
}

TEST_F(HfFolder, TiedWhenLmHeadIsAbsentAndConfigIsSilent) {
  write_model({{"tie_word_embeddings", ""}}, /*lm_head=*/false);
  const ModelFile model = read_hf_model(folder_);
  EXPECT_TRUE(model.config.tied_embeddings);
  EXPECT_EQ(model.weights.count("lm_head.weight"), 0u);
  expect_weights_as_written(model);
}

TEST_F(HfFolder, UntiedWhenLmHeadIsPresentAndConfigIsSilent) {
  write_model({{"tie_word_embeddings", ""}}, /*lm_head=*/true);
  const ModelFile model = read_hf_model(folder_);
  EXPECT_FALSE(model.config.tied_embeddings);
  expect_weights_as_written(model);
}

TEST_F(HfFolder, TiedConfigIgnoresAStoredLmHead) {
  write_model({{"tie_word_embeddings", "true"}}, /*lm_head=*/true);
  const ModelFile model = read_hf_model(folder_);
  EXPECT_TRUE(model.config.tied_embeddings);
  EXPECT_EQ(model.weights.count("lm_head.weight"), 0u);
  expect_weights_as_written(model, /*skip_lm_head=*/true);
}

TEST_F(HfFolder, UntiedConfigWithoutLmHeadIsAnError) {
  write_model({{"tie_word_embeddings", "false"}}, /*lm_head=*/false);
  expect_input_error({"lm_head.weight", "missing"});
}

TEST_F(HfFolder, Qwen2HasQkvBiases) {
  write_model({{"architectures", R"(["Qwen2ForCausalLM"])"}, {"attention_bias", ""}},
              /*lm_head=*/true, /*qkv_bias=*/true);
  const ModelFile model = read_hf_model(folder_);
  EXPECT_EQ(model.config.architecture, "qwen2");
  EXPECT_TRUE(model.config.attention_bias);
  EXPECT_EQ(model.weights.at("model.layers.1.self_attn.k_proj.bias").shape,
            std::vector<int64_t>{kKvRows});
  expect_weights_as_written(model);

  write_safetensors(folder_ / "model.safetensors", tiny_tensors(true, false));
  expect_input_error({"model.layers.0.self_attn.q_proj.bias", "missing"});
}

TEST_F(HfFolder, ShardedWeights) {
  write("config.json", tiny_config());
  tensors_ = tiny_tensors(true, false);
  const std::vector<Tensor> first(tensors_.begin(), tensors_.begin() + 10);
  const std::vector<Tensor> second(tensors_.begin() + 10, tensors_.end());
  write_safetensors(folder_ / "model-00001-of-00002.safetensors", first);
  write_safetensors(folder_ / "model-00002-of-00002.safetensors", second);
  std::vector<std::string> map;
  for (const Tensor& t : first) {
    map.push_back(fmt::format(R"("{}": "model-00001-of-00002.safetensors")", t.name));
  }
  for (const Tensor& t : second) {
    map.push_back(fmt::format(R"("{}": "model-00002-of-00002.safetensors")", t.name));
  }
  const std::string index = fmt::format(
      R"({{"metadata": {{"total_size": 1}}, "weight_map": {{{}}}}})", fmt::join(map, ", "));
  write("model.safetensors.index.json", index);
  const ModelFile model = read_hf_model(folder_);
  expect_weights_as_written(model);
  EXPECT_NE(model.source.find("2 shards"), std::string::npos) << model.source;

  // The index must not send the reader outside the folder, nor to a shard without the tensor.
  write("model.safetensors.index.json",
        R"({"weight_map": {"model.norm.weight": "../model-00001-of-00002.safetensors"}})");
  expect_input_error({"model.safetensors.index.json", "../model-00001-of-00002.safetensors"});
  write("model.safetensors.index.json",
        fmt::format(R"({{"weight_map": {{"{}": "model-00002-of-00002.safetensors"}}}})",
                    first[0].name));
  expect_input_error({"model.safetensors.index.json", first[0].name, "does not hold it"});
}

TEST_F(HfFolder, ChatTemplateFromANamedListOrAJinjaFile) {
  write_model();
  write("tokenizer_config.json", R"({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
      "chat_template": [{"name": "tool_use", "template": "x"},
                        {"name": "default",
                         "template": "<|start_header_id|>{{ m }}<|end_header_id|><|eot_id|>"}]})");
  EXPECT_EQ(read_hf_model(folder_).chat.family, ChatFamily::llama3);

  write("tokenizer_config.json", R"({"bos_token": "<|im_start|>", "eos_token": "<|im_end|>"})");
  EXPECT_EQ(read_hf_model(folder_).chat.family, ChatFamily::plain);
  write("chat_template.jinja", "{{ '<|im_start|>' + m + '<|im_end|>' }}");
  EXPECT_EQ(read_hf_model(folder_).chat.family, ChatFamily::chatml);
}

// ---- refused configs ----

TEST_F(HfFolder, RefusesUnsupportedConfigs) {
  write_model({{"rope_scaling", R"({"rope_type": "llama3", "factor": 32.0})"}});
  expect_input_error({"config.json", "rope_scaling", "not supported"});
  write("config.json", tiny_config({{"rope_scaling", R"({"type": "default"})"}}));
  EXPECT_NO_THROW(read_hf_model(folder_));
  write("config.json", tiny_config({{"architectures", R"(["MistralForCausalLM"])"}}));
  expect_input_error({"config.json", "MistralForCausalLM", "not supported"});
  write("config.json", tiny_config({{"hidden_size", ""}}));
  expect_input_error({"config.json", "hidden_size"});
  write("config.json", tiny_config({{"num_hidden_layers", "\"two\""}}));
  expect_input_error({"config.json", "num_hidden_layers", "positive integer"});
  write("config.json", tiny_config({{"attention_bias", "true"}}));
  expect_input_error({"config.json", "attention_bias"});
  write("config.json", "{\"architectures\": [");
  expect_input_error({"config.json", "not valid JSON"});
  fs::remove(folder_ / "config.json");
  expect_input_error({"no config.json"});
}

// ---- hostile safetensors files ----

TEST_F(HfFolder, HostileSafetensorsFiles) {
  write_model();
  const fs::path file = folder_ / "model.safetensors";
  const std::string ok_entry =
      R"("model.norm.weight":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight_bytes(8, '\0');

  write_file(file, "abc");
  expect_input_error({"model.safetensors", "too short"});
  write_raw_safetensors(file, "{" + ok_entry + "}", eight_bytes, /*header_length=*/1ull << 40);
  expect_input_error({"model.safetensors", "header length", "past the end"});
  write_raw_safetensors(file, "{" + ok_entry + "}", eight_bytes, /*header_length=*/~0ull);
  expect_input_error({"model.safetensors", "header length", "past the end"});
  write_raw_safetensors(file, "{\"model.norm.weight\": {\"dtype\"", eight_bytes);
  expect_input_error({"model.safetensors", "not JSON"});
  write_raw_safetensors(file, "{" + ok_entry + "}", "1234");
  expect_input_error({"model.safetensors", "model.norm.weight", "past the end"});
  write_raw_safetensors(
      file, R"({"model.norm.weight":{"dtype":"F32","shape":[2],"data_offsets":[8,4]}})",
      eight_bytes);
  expect_input_error({"model.safetensors", "model.norm.weight", "data_offsets"});
  write_raw_safetensors(
      file, R"({"model.norm.weight":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})",
      eight_bytes);
  expect_input_error({"model.safetensors", "model.norm.weight", "needs 12 bytes"});
  write_raw_safetensors(
      file,
      R"({"model.norm.weight":{"dtype":"F32","shape":[4294967296,4294967296,16],)"
      R"("data_offsets":[0,8]}})",
      eight_bytes);
  expect_input_error({"model.safetensors", "model.norm.weight", "too large"});
  write_raw_safetensors(
      file, R"({"model.norm.weight":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})",
      eight_bytes);
  expect_input_error({"model.safetensors", "model.norm.weight", "shape"});
  write_raw_safetensors(
      file, R"({"model.norm.weight":{"dtype":"Q4","shape":[2],"data_offsets":[0,8]}})",
      eight_bytes);
  expect_input_error({"model.safetensors", "model.norm.weight", "unknown dtype 'Q4'"});
  write_raw_safetensors(file, R"({"model.norm.weight":{"dtype":"F32","shape":[2]}})", eight_bytes);
  expect_input_error({"model.safetensors", "model.norm.weight", "data_offsets"});
  write_raw_safetensors(file, "[1, 2]", eight_bytes);
  expect_input_error({"model.safetensors", "not a JSON object"});
}

TEST_F(HfFolder, WrongShapeUnreadableDtypeOrMissingWeight) {
  write_model();
  std::vector<Tensor> tensors = tiny_tensors(true, false);
  auto find = [&](const std::string& name) -> Tensor& {
    for (Tensor& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::runtime_error(name);
  };
  const std::string up = "model.layers.1.mlp.up_proj.weight";
  find(up).shape = {kHidden, kInter};  // transposed: bytes match, the shape does not
  write_safetensors(folder_ / "model.safetensors", tensors);
  expect_input_error({"model.safetensors", up, "[8, 12]", "[12, 8]"});

  tensors = tiny_tensors(true, false);
  find("model.norm.weight").dtype = "I64";
  write_safetensors(folder_ / "model.safetensors", tensors);
  expect_input_error({"model.safetensors", "model.norm.weight", "I64"});

  tensors = tiny_tensors(true, false);
  std::erase_if(tensors,
                [](const Tensor& t) { return t.name == "model.layers.1.mlp.down_proj.weight"; });
  write_safetensors(folder_ / "model.safetensors", tensors);
  expect_input_error({"model.layers.1.mlp.down_proj.weight", "missing"});

  fs::remove(folder_ / "model.safetensors");
  expect_input_error({"no model.safetensors"});
}

TEST_F(HfFolder, SafetensorsReaderSkipsMetadataAndReadsEmptyTensors) {
  const fs::path file = folder_ / "extra.safetensors";
  write_safetensors(file, {{"empty", "F16", {0, 3}, {}}, {"one", "BF16", {1}, {-1.5f}}});
  const SafetensorsFile reader(file);
  EXPECT_EQ(reader.tensors().size(), 2u);
  EXPECT_FALSE(reader.has("__metadata__"));
  EXPECT_EQ(reader.read("empty").shape, (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(reader.read("empty").values.empty());
  EXPECT_EQ(reader.read("one").values, std::vector<float>{-1.5f});
  EXPECT_THROW(reader.read("absent"), InputError);
}

}  // namespace
}  // namespace kbrl::lm
