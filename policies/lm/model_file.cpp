// What both model readers share (model_file.h): the weights a decoder of a configuration needs, the
// check of a read model against them, and the choice of reader.
#include <kbrl/error.h>

#include "model_file.h"

namespace kbrl::lm {

std::vector<std::pair<std::string, std::vector<int64_t>>> expected_weights(const LlamaConfig& c) {
  const int64_t q_rows = c.heads * c.head_dim;
  const int64_t kv_rows = c.kv_heads * c.head_dim;
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, c.hidden}});
  for (int64_t layer = 0; layer < c.layers; ++layer) {
    const std::string p = fmt::format("model.layers.{}.", layer);
    out.push_back({p + "self_attn.q_proj.weight", {q_rows, c.hidden}});
    out.push_back({p + "self_attn.k_proj.weight", {kv_rows, c.hidden}});
    out.push_back({p + "self_attn.v_proj.weight", {kv_rows, c.hidden}});
    out.push_back({p + "self_attn.o_proj.weight", {c.hidden, q_rows}});
    if (c.attention_bias) {
      out.push_back({p + "self_attn.q_proj.bias", {q_rows}});
      out.push_back({p + "self_attn.k_proj.bias", {kv_rows}});
      out.push_back({p + "self_attn.v_proj.bias", {kv_rows}});
    }
    out.push_back({p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}});
    out.push_back({p + "mlp.up_proj.weight", {c.intermediate, c.hidden}});
    out.push_back({p + "mlp.down_proj.weight", {c.hidden, c.intermediate}});
    out.push_back({p + "input_layernorm.weight", {c.hidden}});
    out.push_back({p + "post_attention_layernorm.weight", {c.hidden}});
  }
  out.push_back({"model.norm.weight", {c.hidden}});
  if (!c.tied_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, c.hidden}});
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
