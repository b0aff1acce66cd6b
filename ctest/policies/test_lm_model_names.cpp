// model_file.h's named architectures (the random models' presets) and its one spelling of Hugging
// Face's weight names.
#include <gtest/gtest.h>

#include <policies/lm/model_file.h>

namespace kbrl::lm {
namespace {

TEST(ModelFile, NamedShapesAndHuggingFaceNames) {
  const std::optional<LlamaConfig> smol = llama_preset("smollm2-135m");
  ASSERT_TRUE(smol.has_value());
  EXPECT_EQ(smol->layers, 30);
  EXPECT_EQ(smol->hidden, 576);
  EXPECT_EQ(smol->head_dim, 64);
  EXPECT_EQ(smol->kv_heads, 3);
  EXPECT_EQ(smol->vocab_size, 49152);
  const std::optional<LlamaConfig> qwen = llama_preset("qwen2.5-1.5b");
  ASSERT_TRUE(qwen.has_value());
  EXPECT_EQ(qwen->head_dim, 128);
  EXPECT_TRUE(qwen->attention_bias);
  EXPECT_FALSE(llama_preset("gpt2").has_value());
  EXPECT_NE(llama_preset_names().find("qwen2.5-0.5b"), std::string::npos);
  EXPECT_EQ(hf_projection_name(3, "gate"), "model.layers.3.mlp.gate_proj.weight");
  EXPECT_EQ(hf_projection_name(0, "q", "bias"), "model.layers.0.self_attn.q_proj.bias");
  EXPECT_EQ(hf_norm_name(2, false), "model.layers.2.post_attention_layernorm.weight");
  // Tied output: the embedding, 30 layers of 7 projections and 2 norms, the final norm.
  EXPECT_EQ(expected_weights(*smol).size(), 1u + 30u * 9u + 1u);
}

}  // namespace
}  // namespace kbrl::lm
