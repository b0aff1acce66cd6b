// read_gguf_model and read_model_file (model_file.h).
#include <kbrl/error.h>

#include "gguf.h"
#include "model_file.h"

namespace kbrl::lm {
namespace {

// GGUF's `llama` q/k rows are (head, i, j) for HF's (head, j, i), j in {0, 1}, i < head_dim / 2
// (the converter's permutation for llama.cpp's interleaved rotary embedding). Undo it.
std::vector<float> unpermute_rows(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t heads) {
  const int64_t head_dim = rows / heads, half = head_dim / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t from = h * head_dim + i * 2 + j, to = h * head_dim + j * half + i;
        std::copy_n(w.begin() + from * cols, cols, out.begin() + to * cols);
      }
  return out;
}

}  // namespace

ModelFile read_gguf_model(const std::filesystem::path& file) {
  const GgufFile g(file);
  ModelFile m;
  LlamaConfig& c = m.config;
  c.architecture = g.string("general.architecture");
  const std::string& a = c.architecture;
  KBRL_CHECK_INPUT(a == "llama" || a == "qwen2",
                   "{}: architecture '{}' is not supported (kbrl runs llama and qwen2 models)", file.string(), a);
  c.layers = g.integer(a + ".block_count");
  c.hidden = g.integer(a + ".embedding_length");
  c.intermediate = g.integer(a + ".feed_forward_length");
  c.heads = g.integer(a + ".attention.head_count");
  c.kv_heads = g.integer(a + ".attention.head_count_kv", c.heads);
  KBRL_CHECK_INPUT(c.layers > 0 && c.hidden > 0 && c.heads > 0 && c.kv_heads > 0 && c.heads % c.kv_heads == 0,
                   "{}: inconsistent sizes ({} layers, hidden {}, {} heads, {} kv heads)", file.string(), c.layers,
                   c.hidden, c.heads, c.kv_heads);
  c.head_dim = g.integer(a + ".attention.key_length", c.hidden / c.heads);
  c.context_length = g.integer(a + ".context_length", 2048);
  c.rope_theta = g.number(a + ".rope.freq_base", 10000.0);
  c.rms_eps = g.number(a + ".attention.layer_norm_rms_epsilon", 1e-5);
  const std::string scaling = g.string(a + ".rope.scaling.type", "none");
  KBRL_CHECK_INPUT(scaling == "none" && g.find_tensor("rope_freqs.weight") == nullptr,
                   "{}: rotary scaling ({}) is not supported", file.string(),
                   scaling == "none" ? "rope_freqs.weight" : scaling);
  c.attention_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.tied_embeddings = g.find_tensor("output.weight") == nullptr;

  std::string types;
  auto take = [&](const std::string& gguf_name, const std::string& hf_name) {
    const GgufTensorInfo* t = g.find_tensor(gguf_name);
    KBRL_CHECK_INPUT(t != nullptr, "{}: the model has no tensor {}", file.string(), gguf_name);
    if (types.find(gguf_type_name(t->type)) == std::string::npos) types += (types.empty() ? "" : ", ") + gguf_type_name(t->type);
    WeightArray w;
    w.shape.assign(t->dims.rbegin(), t->dims.rend());
    w.values = g.dequantize(*t);
    m.weights[hf_name] = std::move(w);
  };
  take("token_embd.weight", "model.embed_tokens.weight");
  c.vocab_size = m.weights["model.embed_tokens.weight"].shape[0];
  take("output_norm.weight", "model.norm.weight");
  if (!c.tied_embeddings) take("output.weight", "lm_head.weight");
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string b = fmt::format("blk.{}.", l), h = fmt::format("model.layers.{}.", l);
    take(b + "attn_norm.weight", h + "input_layernorm.weight");
    take(b + "ffn_norm.weight", h + "post_attention_layernorm.weight");
    take(b + "attn_q.weight", h + "self_attn.q_proj.weight");
    take(b + "attn_k.weight", h + "self_attn.k_proj.weight");
    take(b + "attn_v.weight", h + "self_attn.v_proj.weight");
    take(b + "attn_output.weight", h + "self_attn.o_proj.weight");
    take(b + "ffn_gate.weight", h + "mlp.gate_proj.weight");
    take(b + "ffn_up.weight", h + "mlp.up_proj.weight");
    take(b + "ffn_down.weight", h + "mlp.down_proj.weight");
    if (c.attention_bias) {
      take(b + "attn_q.bias", h + "self_attn.q_proj.bias");
      take(b + "attn_k.bias", h + "self_attn.k_proj.bias");
      take(b + "attn_v.bias", h + "self_attn.v_proj.bias");
    }
    if (a == "llama") {
      for (auto [proj, heads] : {std::pair{"q", c.heads}, std::pair{"k", c.kv_heads}}) {
        for (const char* kind : {"weight", "bias"}) {
          auto it = m.weights.find(h + "self_attn." + proj + "_proj." + kind);
          if (it == m.weights.end()) continue;
          const int64_t rows = it->second.shape[0];
          const int64_t cols = it->second.shape.size() > 1 ? it->second.shape[1] : 1;
          it->second.values = unpermute_rows(it->second.values, rows, cols, heads);
        }
      }
    }
  }
  check_model_shapes(m, file.string());
  m.tokenizer = tokenizer_data_from_gguf(g);
  m.chat = chat_template_from_jinja(g.string("tokenizer.chat_template", ""));
  m.name = g.string("general.name", file.stem().string());
  m.source = fmt::format("{} (GGUF, {} {}, tensors {})", file.string(), a, g.string("general.size_label", ""), types);
  return m;
}

}  // namespace kbrl::lm
