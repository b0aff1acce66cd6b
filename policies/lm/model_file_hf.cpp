// A Hugging Face model folder: config.json, model.safetensors (or the shards listed in
// model.safetensors.index.json), tokenizer.json, tokenizer_config.json and its chat template.
#include <policies/lm/model_file.h>

#include <kbrl/error.h>

#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "safetensors.h"

namespace kbrl::lm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  KBRL_CHECK_INPUT(in.good(), "{}: cannot open the file", file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

json read_json(const fs::path& file) {
  const std::string text = read_text(file);
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", file.string(), e.what()));
  }
}

/// A config key's value, or nullopt when it is absent or null (Hugging Face writes null for
/// "use the default").
const json* optional_key(const json& object, const std::string& key) {
  const auto found = object.find(key);
  return found == object.end() || found->is_null() ? nullptr : &*found;
}

int64_t positive_int(const json& config, const fs::path& file, const std::string& key,
                     std::optional<int64_t> fallback = std::nullopt) {
  const json* value = optional_key(config, key);
  if (value == nullptr) {
    KBRL_CHECK_INPUT(fallback.has_value(), "{}: no \"{}\"", file.string(), key);
    return *fallback;
  }
  KBRL_CHECK_INPUT(value->is_number_integer() && value->get<int64_t>() > 0,
                   "{}: \"{}\" is {}, not a positive integer", file.string(), key, value->dump());
  return value->get<int64_t>();
}

double positive_number(const json& config, const fs::path& file, const std::string& key,
                       double fallback) {
  const json* value = optional_key(config, key);
  if (value == nullptr) return fallback;
  KBRL_CHECK_INPUT(value->is_number() && value->get<double>() > 0, "{}: \"{}\" is {}, not a "
                   "positive number", file.string(), key, value->dump());
  return value->get<double>();
}

std::optional<bool> optional_bool(const json& config, const fs::path& file,
                                  const std::string& key) {
  const json* value = optional_key(config, key);
  if (value == nullptr) return std::nullopt;
  KBRL_CHECK_INPUT(value->is_boolean(), "{}: \"{}\" is {}, not true or false", file.string(), key,
                   value->dump());
  return value->get<bool>();
}

std::string architecture_of(const json& config, const fs::path& file) {
  std::string name;
  if (const json* list = optional_key(config, "architectures");
      list != nullptr && list->is_array() && !list->empty() && (*list)[0].is_string()) {
    name = (*list)[0].get<std::string>();
  } else if (const json* type = optional_key(config, "model_type");
             type != nullptr && type->is_string()) {
    name = type->get<std::string>();
  }
  if (name == "LlamaForCausalLM" || name == "llama") return "llama";
  if (name == "Qwen2ForCausalLM" || name == "qwen2") return "qwen2";
  throw InputError(fmt::format("{}: architecture '{}' is not supported: kbrl reads "
                               "LlamaForCausalLM and Qwen2ForCausalLM",
                               file.string(), name));
}

LlamaConfig read_config(const json& config, const fs::path& file) {
  KBRL_CHECK_INPUT(config.is_object(), "{}: not a JSON object", file.string());
  LlamaConfig c;
  c.architecture = architecture_of(config, file);
  c.vocab_size = positive_int(config, file, "vocab_size");
  c.hidden = positive_int(config, file, "hidden_size");
  c.intermediate = positive_int(config, file, "intermediate_size");
  c.layers = positive_int(config, file, "num_hidden_layers");
  c.heads = positive_int(config, file, "num_attention_heads");
  c.kv_heads = positive_int(config, file, "num_key_value_heads", c.heads);
  KBRL_CHECK_INPUT(optional_key(config, "head_dim") != nullptr || c.hidden % c.heads == 0,
                   "{}: hidden_size {} is not a multiple of num_attention_heads {} (and no "
                   "head_dim is given)", file.string(), c.hidden, c.heads);
  c.head_dim = positive_int(config, file, "head_dim", c.hidden / c.heads);
  KBRL_CHECK_INPUT(c.heads % c.kv_heads == 0, "{}: num_attention_heads {} is not a multiple of "
                   "num_key_value_heads {}", file.string(), c.heads, c.kv_heads);
  c.context_length = positive_int(config, file, "max_position_embeddings", c.context_length);
  c.rope_theta = positive_number(config, file, "rope_theta", 10000.0);
  c.rms_eps = positive_number(config, file, "rms_norm_eps", 1e-6);  // transformers' default

  if (const json* scaling = optional_key(config, "rope_scaling"); scaling != nullptr) {
    const json* type = scaling->is_object() ? optional_key(*scaling, "rope_type") : nullptr;
    if (type == nullptr && scaling->is_object()) type = optional_key(*scaling, "type");
    const bool plain = type != nullptr && type->is_string() &&
                       (*type == "default" || *type == "none");
    KBRL_CHECK_INPUT(plain, "{}: rope_scaling {} is not supported (kbrl runs the plain rotary "
                     "embedding only; use a model without rope_scaling)",
                     file.string(), scaling->dump());
  }
  if (const json* act = optional_key(config, "hidden_act"); act != nullptr) {
    KBRL_CHECK_INPUT(*act == "silu", "{}: hidden_act {} is not supported (kbrl runs silu)",
                     file.string(), act->dump());
  }
  KBRL_CHECK_INPUT(!optional_bool(config, file, "mlp_bias").value_or(false),
                   "{}: mlp_bias true is not supported (kbrl's MLP has no biases)", file.string());
  KBRL_CHECK_INPUT(!optional_bool(config, file, "use_sliding_window").value_or(false),
                   "{}: use_sliding_window true is not supported (kbrl attends to the whole "
                   "context)", file.string());
  if (c.architecture == "qwen2") {
    c.attention_bias = true;  // Qwen2's q, k and v projections always have biases
  } else {
    // Llama's attention_bias also puts a bias on o_proj, which kbrl's decoder does not have.
    KBRL_CHECK_INPUT(!optional_bool(config, file, "attention_bias").value_or(false),
                     "{}: attention_bias true is not supported for llama models (o_proj bias)",
                     file.string());
    c.attention_bias = false;
  }
  return c;
}

/// The safetensors files of a folder and which one holds each tensor.
struct WeightFiles {
  std::vector<std::unique_ptr<SafetensorsFile>> files;
  std::map<std::string, const SafetensorsFile*> where;
  std::string description;  // for ModelFile::source
};

WeightFiles open_weight_files(const fs::path& folder) {
  WeightFiles out;
  const fs::path single = folder / "model.safetensors";
  const fs::path index_file = folder / "model.safetensors.index.json";
  if (fs::exists(single)) {  // transformers, too, prefers the single file
    out.files.push_back(std::make_unique<SafetensorsFile>(single));
    for (const auto& [name, entry] : out.files[0]->tensors()) out.where[name] = out.files[0].get();
    out.description = "model.safetensors";
    return out;
  }
  KBRL_CHECK_INPUT(fs::exists(index_file), "{}: no model.safetensors or "
                   "model.safetensors.index.json (kbrl reads safetensors weights only)",
                   folder.string());
  const json index = read_json(index_file);
  const json* map = index.is_object() ? optional_key(index, "weight_map") : nullptr;
  KBRL_CHECK_INPUT(map != nullptr && map->is_object(), "{}: no \"weight_map\" object",
                   index_file.string());
  std::map<std::string, const SafetensorsFile*> shards;
  for (const auto& [name, shard] : map->items()) {
    KBRL_CHECK_INPUT(shard.is_string(), "{}: weight_map[\"{}\"] is not a file name",
                     index_file.string(), name);
    const std::string shard_name = shard.get<std::string>();
    // Shards live in the folder itself: refuse paths that would read elsewhere.
    KBRL_CHECK_INPUT(!shard_name.empty() && shard_name != "." && shard_name != ".." &&
                         shard_name.find_first_of("/\\") == std::string::npos,
                     "{}: weight_map[\"{}\"] names the file '{}', which is not a plain file name "
                     "in the folder", index_file.string(), name, shard_name);
    auto found = shards.find(shard_name);
    if (found == shards.end()) {
      out.files.push_back(std::make_unique<SafetensorsFile>(folder / shard_name));
      found = shards.emplace(shard_name, out.files.back().get()).first;
    }
    KBRL_CHECK_INPUT(found->second->has(name), "{}: weight_map puts tensor '{}' in {}, which "
                     "does not hold it", index_file.string(), name, shard_name);
    out.where[name] = found->second;
  }
  out.description = fmt::format("{} shards listed in model.safetensors.index.json", shards.size());
  return out;
}

/// The chat template text of tokenizer_config.json ("chat_template": a string, or a list of
/// {name, template} of which "default" is taken), else of chat_template.jinja (where newer
/// transformers versions save it), else "".
std::string chat_template_text(const fs::path& folder, const json* tokenizer_config) {
  const fs::path config_file = folder / "tokenizer_config.json";
  const json* tmpl = tokenizer_config && tokenizer_config->is_object()
                         ? optional_key(*tokenizer_config, "chat_template")
                         : nullptr;
  if (tmpl != nullptr && tmpl->is_string()) return tmpl->get<std::string>();
  if (tmpl != nullptr && tmpl->is_array()) {
    std::vector<std::string> names;
    for (const json& named : *tmpl) {
      const json* name = named.is_object() ? optional_key(named, "name") : nullptr;
      const json* text = named.is_object() ? optional_key(named, "template") : nullptr;
      if (name == nullptr || text == nullptr || !name->is_string() || !text->is_string()) continue;
      if (*name == "default") return text->get<std::string>();
      names.push_back(name->get<std::string>());
    }
    throw InputError(fmt::format("{}: chat_template lists no \"default\" template (names: {})",
                                 config_file.string(), fmt::join(names, ", ")));
  }
  KBRL_CHECK_INPUT(tmpl == nullptr, "{}: chat_template is neither a string nor a list",
                   config_file.string());
  const fs::path jinja_file = folder / "chat_template.jinja";
  return fs::exists(jinja_file) ? read_text(jinja_file) : "";
}

}  // namespace

ModelFile read_hf_model(const fs::path& folder) {
  KBRL_CHECK_INPUT(fs::is_directory(folder), "{}: not a folder", folder.string());
  const fs::path config_file = folder / "config.json";
  KBRL_CHECK_INPUT(fs::exists(config_file), "{}: no config.json (not a Hugging Face model folder)",
                   folder.string());
  ModelFile model;
  const json config = read_json(config_file);
  model.config = read_config(config, config_file);
  const WeightFiles weights = open_weight_files(folder);
  const bool has_lm_head = weights.where.count("lm_head.weight") != 0;
  // transformers' default is untied; folders without an lm_head are tied in practice, so the
  // file decides when config.json does not. A tied model's stored lm_head is ignored, as
  // transformers ties it to the embedding.
  model.config.tied_embeddings =
      optional_bool(config, config_file, "tie_word_embeddings").value_or(!has_lm_head);

  std::map<std::string, int> dtype_counts;
  for (const auto& [name, shape] : expected_weights(model.config)) {
    const auto found = weights.where.find(name);
    KBRL_CHECK_INPUT(found != weights.where.end(), "{}: weight '{}' is missing ({})",
                     folder.string(), name, weights.description);
    const SafetensorsFile& file = *found->second;
    const SafetensorsEntry& entry = file.tensors().at(name);
    KBRL_CHECK_INPUT(entry.shape == shape, "{}: tensor '{}' has shape [{}], expected [{}] from "
                     "config.json", file.path().string(), name, fmt::join(entry.shape, ", "),
                     fmt::join(shape, ", "));
    model.weights[name] = file.read(name);
    ++dtype_counts[entry.dtype];
  }

  const fs::path tokenizer_file = folder / "tokenizer.json";
  const fs::path tokenizer_config_file = folder / "tokenizer_config.json";
  KBRL_CHECK_INPUT(fs::exists(tokenizer_file), "{}: no tokenizer.json", folder.string());
  std::string tokenizer_config_text;
  std::optional<json> tokenizer_config;
  if (fs::exists(tokenizer_config_file)) {
    tokenizer_config_text = read_text(tokenizer_config_file);
    tokenizer_config = read_json(tokenizer_config_file);
  }
  try {
    model.tokenizer = tokenizer_data_from_json(read_text(tokenizer_file), tokenizer_config_text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", tokenizer_file.string(), e.what()));
  }
  try {
    model.chat = chat_template_from_jinja(
        chat_template_text(folder, tokenizer_config ? &*tokenizer_config : nullptr));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{} (chat template): {}", folder.string(), e.what()));
  }

  const fs::path normal = folder.lexically_normal();
  model.name = (normal.has_filename() ? normal : normal.parent_path()).filename().string();
  std::vector<std::string> counts;
  for (const auto& [dtype, count] : dtype_counts) {
    counts.push_back(fmt::format("{} {}", count, dtype));
  }
  static constexpr const char* kChatNames[] = {"plain", "chatml", "llama3"};
  model.source = fmt::format(
      "Hugging Face folder {}: config.json ({}, {} layers, hidden {}, {} embeddings), {} ({} "
      "weights read: {}), tokenizer.json{}, chat template {}",
      folder.string(), model.config.architecture, model.config.layers, model.config.hidden,
      model.config.tied_embeddings ? "tied" : "separate output", weights.description,
      model.weights.size(), fmt::join(counts, ", "),
      tokenizer_config ? " and tokenizer_config.json" : "",
      kChatNames[static_cast<int>(model.chat.family)]);
  return model;
}

}  // namespace kbrl::lm
