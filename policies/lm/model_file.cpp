// What both model readers share (model_file.h): the weights a decoder of a configuration needs, the
// check of a read model against them, and the choice of reader.
#include <kbrl/error.h>

#include "model_file.h"

namespace kbrl::lm {

std::string hf_projection_name(int64_t layer, std::string_view projection, std::string_view part) {
  const bool attention = projection == "q" || projection == "k" || projection == "v" || projection == "o";
  return fmt::format("model.layers.{}.{}{}_proj.{}", layer, attention ? "self_attn." : "mlp.", projection, part);
}

std::string hf_norm_name(int64_t layer, bool attention) {
  return fmt::format("model.layers.{}.{}_layernorm.weight", layer, attention ? "input" : "post_attention");
}

namespace {

LlamaConfig shape(std::string arch, int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads,
                  int64_t intermediate, int64_t vocab, double theta, double eps, bool bias) {
  LlamaConfig c;
  c.architecture = std::move(arch);
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.intermediate = intermediate;
  c.vocab_size = vocab;
  c.rope_theta = theta;
  c.rms_eps = eps;
  c.attention_bias = bias;
  c.tied_embeddings = true;
  c.context_length = 8192;
  return c;
}

const std::vector<std::pair<std::string_view, LlamaConfig>>& presets() {
  static const std::vector<std::pair<std::string_view, LlamaConfig>> p = {
      {"smollm2-135m", shape("llama", 30, 576, 9, 3, 1536, 49152, 100000.0, 1e-5, false)},
      {"qwen2.5-0.5b", shape("qwen2", 24, 896, 14, 2, 4864, 151936, 1000000.0, 1e-6, true)},
      {"qwen2.5-1.5b", shape("qwen2", 28, 1536, 12, 2, 8960, 151936, 1000000.0, 1e-6, true)},
  };
  return p;
}

}  // namespace

std::optional<LlamaConfig> llama_preset(std::string_view name) {
  for (const auto& [n, c] : presets())
    if (n == name) return c;
  return std::nullopt;
}

std::string llama_preset_names() {
  std::string out;
  for (const auto& [n, c] : presets()) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> expected_weights(const LlamaConfig& c) {
  const int64_t q_rows = c.heads * c.head_dim;
  const int64_t kv_rows = c.kv_heads * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  out.push_back({std::string(kHfEmbedding), {c.vocab_size, c.hidden}});
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    const auto proj = [&](std::string_view name, std::string_view part = "weight") {
      return hf_projection_name(layer, name, part);
    };
    out.push_back({proj("q"), {q_rows, c.hidden}});
    out.push_back({proj("k"), {kv_rows, c.hidden}});
    out.push_back({proj("v"), {kv_rows, c.hidden}});
    out.push_back({proj("o"), {c.hidden, q_rows}});
    if (c.attention_bias) {
      out.push_back({proj("q", "bias"), {q_rows}});
      out.push_back({proj("k", "bias"), {kv_rows}});
      out.push_back({proj("v", "bias"), {kv_rows}});
    }
    out.push_back({proj("gate"), {c.intermediate, c.hidden}});
    out.push_back({proj("up"), {c.intermediate, c.hidden}});
    out.push_back({proj("down"), {c.hidden, c.intermediate}});
    out.push_back({hf_norm_name(layer, true), {c.hidden}});
    out.push_back({hf_norm_name(layer, false), {c.hidden}});
  }
  out.push_back({std::string(kHfFinalNorm), {c.hidden}});
  if (!c.tied_embeddings) out.push_back({std::string(kHfOutput), {c.vocab_size, c.hidden}});
  return out;
}

void check_model_shapes(const ModelFile& m, const std::string& where) {
  for (const auto& [name, shape] : expected_weights(m.config)) {
    auto it = m.weights.find(name);
    KBRL_CHECK_INPUT(it != m.weights.end(), "{}: the model has no weight {}", where, name);
    KBRL_CHECK_INPUT(it->second.shape == shape, "{}: weight {} has shape [{}], expected [{}]", where, name,
                     fmt::join(it->second.shape, ", "), fmt::join(shape, ", "));
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    KBRL_CHECK_INPUT(static_cast<int64_t>(it->second.values.size()) == n, "{}: weight {} has {} values for shape [{}]",
                     where, name, it->second.values.size(), fmt::join(shape, ", "));
  }
}

ModelFile read_model_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return read_hf_model(path);
  KBRL_CHECK_INPUT(std::filesystem::is_regular_file(path, ec),
                   "model {} does not exist: give a .gguf file or a Hugging Face folder holding config.json",
                   path.string());
  return read_gguf_model(path);
}

}  // namespace kbrl::lm
