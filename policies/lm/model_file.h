#pragma once
// A Llama-family model as read from disk, before libtorch: the hyperparameters, the weights as
// float32 arrays under Hugging Face names, the tokenizer and the chat template. Two sources:
// a GGUF file (llama.cpp's; architectures llama and qwen2) and a Hugging Face folder
// (config.json, *.safetensors, tokenizer.json, tokenizer_config.json). GGUF stores the q and k
// projections of `llama` models with rows permuted for llama.cpp's interleaved rotary embedding;
// they are permuted back here, so every model runs Hugging Face's rotate-half rotary embedding.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "chat_template.h"
#include "tokenizer.h"

namespace kbrl::lm {

struct LlamaConfig {
  std::string architecture = "llama";  // llama | qwen2
  int64_t vocab_size = 0;
  int64_t hidden = 0;         // embedding length
  int64_t intermediate = 0;   // feed-forward length
  int64_t layers = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;       // hidden / heads unless the file says otherwise
  int64_t context_length = 2048;
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
  bool attention_bias = false;  // q, k, v biases (qwen2)
  bool tied_embeddings = true;  // no separate lm_head.weight
};

/// One weight: torch shape order (dims[0] outermost), row-major float32 values.
struct WeightArray {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

struct ModelFile {
  LlamaConfig config;
  /// Hugging Face names: model.embed_tokens.weight, model.layers.N.self_attn.{q,k,v,o}_proj.weight
  /// (and q/k/v .bias), model.layers.N.mlp.{gate,up,down}_proj.weight,
  /// model.layers.N.{input,post_attention}_layernorm.weight, model.norm.weight, lm_head.weight
  /// (absent when tied).
  std::map<std::string, WeightArray> weights;
  TokenizerData tokenizer;
  ChatTemplate chat;
  std::string name;  // general.name or the folder name
  std::string source;  // what was read: the file or folder, and its format and tensor types
};

/// A .gguf file or a Hugging Face folder (holding config.json). InputError naming the file and the
/// problem: missing, unsupported architecture or tensor type, a weight missing or of the wrong
/// shape.
ModelFile read_model_file(const std::filesystem::path& path);
ModelFile read_gguf_model(const std::filesystem::path& file);
ModelFile read_hf_model(const std::filesystem::path& folder);
/// Hugging Face's names of a decoder's weights (the one place they are spelled; the GGUF reader maps
/// GGUF's names onto them): layer `layer`'s projection (q, k, v, o, gate, up, down) and part
/// (weight, bias), and its norm before attention (`attention` true) or before the MLP.
std::string hf_projection_name(int64_t layer, std::string_view projection, std::string_view part = "weight");
std::string hf_norm_name(int64_t layer, bool attention);
inline constexpr std::string_view kHfEmbedding = "model.embed_tokens.weight", kHfFinalNorm = "model.norm.weight",
                                  kHfOutput = "lm_head.weight";

/// Named architectures' exact shapes (context 8192): smollm2-135m, qwen2.5-0.5b, qwen2.5-1.5b;
/// nullopt for another name.
std::optional<LlamaConfig> llama_preset(std::string_view name);
/// The preset names, comma-separated (for error messages).
std::string llama_preset_names();

/// Every weight a decoder of `config` needs, under Hugging Face names, with its torch shape.
std::vector<std::pair<std::string, std::vector<int64_t>>> expected_weights(const LlamaConfig& config);
/// InputError naming `where` and the weight when one is missing or of the wrong shape for `m.config`
/// (every reader ends with it).
void check_model_shapes(const ModelFile& m, const std::string& where);

}  // namespace kbrl::lm
