// `kbrl model`: what kbrl reads in a language-model file, and its float32 copy.
//   kbrl model info FILE          architecture, sizes, tensor types, tokenizer, chat template
//   kbrl model f32 FILE --out F   a GGUF of the same model with every tensor dequantized to float32
//                                 (llama.cpp then computes in float32: the parity test's oracle)
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <kbrl/error.h>

#include "commands.h"
#include <policies/lm/gguf.h>
#include <policies/lm/model_file.h>

namespace kbrl::cli {

void add_model_command(CLI::App& app) {
  auto* model = app.add_subcommand("model", "A language-model file as kbrl reads it (lm:<model> policies)");
  model->require_subcommand(1);

  auto info_path = std::make_shared<std::string>();
  auto* info = model->add_subcommand("info", "Architecture, sizes, tensor types, tokenizer and chat template");
  info->add_option("model", *info_path, "a .gguf file or a Hugging Face folder (config.json, *.safetensors)")
      ->required();
  info->callback([info_path] {
    const lm::ModelFile m = lm::read_model_file(*info_path);
    const lm::LlamaConfig& c = m.config;
    int64_t params = 0;
    for (const auto& [name, w] : m.weights) params += static_cast<int64_t>(w.values.size());
    std::cout << fmt::format("model         {}\n", m.name)
              << fmt::format("read from     {}\n", m.source)
              << fmt::format("architecture  {}: {} layers, hidden {}, feed-forward {}, {} heads ({} key/value), "
                             "head dim {}\n",
                             c.architecture, c.layers, c.hidden, c.intermediate, c.heads, c.kv_heads, c.head_dim)
              << fmt::format("              context {}, rope theta {}, rms eps {}, {} embeddings{}\n",
                             c.context_length, c.rope_theta, c.rms_eps, c.tied_embeddings ? "tied" : "untied",
                             c.attention_bias ? ", q/k/v biases" : "")
              << fmt::format("parameters    {} ({:.1f} M)\n", params, params / 1e6)
              << fmt::format("tokenizer     {} tokens, {} merges, pre-tokenizer {}, bos {}, eos {}, eot {}\n",
                             m.tokenizer.tokens.size(), m.tokenizer.merges.size(), m.tokenizer.pre, m.tokenizer.bos,
                             m.tokenizer.eos, m.tokenizer.eot)
              << fmt::format("chat template {}\n", m.chat.family == lm::ChatFamily::chatml   ? "chatml"
                                                   : m.chat.family == lm::ChatFamily::llama3 ? "llama3"
                                                                                             : "plain (none)");
  });

  auto f32_in = std::make_shared<std::string>(), f32_out = std::make_shared<std::string>();
  auto* f32 = model->add_subcommand("f32", "Write the GGUF file with every tensor dequantized to float32");
  f32->add_option("model", *f32_in, "a .gguf file")->required();
  f32->add_option("--out", *f32_out, "the float32 GGUF to write")->required();
  f32->callback([f32_in, f32_out] {
    KBRL_CHECK_INPUT(*f32_out != *f32_in, "--out must differ from the input file");
    lm::write_gguf_f32(lm::GgufFile(*f32_in), *f32_out);
    std::cout << "wrote " << *f32_out << "\n";
  });
}

}  // namespace kbrl::cli
