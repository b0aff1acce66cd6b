// The JSON configs of the learning runs (run_setup.h's "JSON configs"): a typed reader of flat
// objects whose errors name the source, the key and the legal range.
#include "run_setup.h"

#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>
#include <kbrl/error.h>

namespace kbrl {
namespace {

// ---- a typed reader of flat JSON objects ----

/// Reads keys of one JSON object, remembering which were consumed; finish() reports the rest.
class KeyReader {
 public:
  KeyReader(const nlohmann::json& j, std::string source, std::vector<std::string> valid)
      : j_(j), source_(std::move(source)), valid_(std::move(valid)) {
    std::sort(valid_.begin(), valid_.end());
    KBRL_CHECK_INPUT(j_.is_object(), "{}: the config must be a JSON object (got {})", source_,
                     j_.type_name());
    for (const auto& [key, value] : j_.items()) {
      KBRL_CHECK_INPUT(std::binary_search(valid_.begin(), valid_.end(), key),
                       "{}: unknown config key '{}'; valid keys: {}", source_, key,
                       fmt::join(valid_, ", "));
    }
  }

  [[noreturn]] void bad(const std::string& key, const std::string& what) const {
    throw InputError(fmt::format("{}: config key '{}' {} (got {}); valid keys: {}", source_, key, what,
                                 j_.at(key).dump(), fmt::join(valid_, ", ")));
  }

  void integer(const std::string& key, int& out, int min, int max = 1'000'000'000) const {
    if (!j_.contains(key)) return;
    const auto& v = j_.at(key);
    if (!v.is_number_integer()) bad(key, "must be an integer");
    const int64_t x = v.get<int64_t>();
    if (x < min || x > max)
      bad(key, max == 1'000'000'000 ? fmt::format("must be an integer >= {}", min)
                                    : fmt::format("must be an integer in [{}, {}]", min, max));
    out = static_cast<int>(x);
  }

  void seed(const std::string& key, uint64_t& out) const {
    if (!j_.contains(key)) return;
    const auto& v = j_.at(key);
    if (!v.is_number_integer() || (v.is_number_integer() && !v.is_number_unsigned() && v.get<int64_t>() < 0))
      bad(key, "must be a non-negative integer");
    out = v.get<uint64_t>();
  }

  /// A number in [min, max] (min excluded when `open_min`).
  void number(const std::string& key, double& out, double min, double max, bool open_min = false) const {
    if (!j_.contains(key)) return;
    const auto& v = j_.at(key);
    if (!v.is_number()) bad(key, "must be a number");
    const double x = v.get<double>();
    const bool ok = (open_min ? x > min : x >= min) && x <= max;
    if (!ok) {
      if (max == std::numeric_limits<double>::infinity())
        bad(key, fmt::format("must be a number {} {}", open_min ? ">" : ">=", min));
      bad(key, fmt::format("must be a number in {}{}, {}]", open_min ? "(" : "[", min, max));
    }
    out = x;
  }

  void boolean(const std::string& key, bool& out) const {
    if (!j_.contains(key)) return;
    const auto& v = j_.at(key);
    if (!v.is_boolean()) bad(key, "must be true or false");
    out = v.get<bool>();
  }

  void text(const std::string& key, std::string& out) const {
    if (!j_.contains(key)) return;
    const auto& v = j_.at(key);
    if (!v.is_string()) bad(key, "must be a string");
    out = v.get<std::string>();
    if (out.empty()) bad(key, "must not be empty");
  }

  /// A string parsed by `parse` (which throws InputError naming the legal values).
  template <class T, class Parse>
  void choice(const std::string& key, T& out, Parse parse) const {
    if (!j_.contains(key)) return;
    const auto& v = j_.at(key);
    if (!v.is_string()) bad(key, "must be a string");
    try {
      out = parse(v.get<std::string>());
    } catch (const InputError& e) {
      bad(key, fmt::format("has a bad value: {}", e.what()));
    }
  }

  /// "tasks" (array of ids) or "split" (a split's name), at most one; fills `out` when given.
  void tasks(std::vector<int>& out) const {
    const bool has_tasks = j_.contains("tasks"), has_split = j_.contains("split");
    if (has_tasks && has_split)
      throw InputError(fmt::format("{}: give 'tasks' or 'split', not both", source_));
    std::vector<int> ids;
    std::string split_name;
    if (has_tasks) {
      const auto& v = j_.at("tasks");
      if (!v.is_array() || v.empty()) bad("tasks", "must be a non-empty array of task ids");
      for (const auto& x : v) {
        if (!x.is_number_integer()) bad("tasks", "must be a non-empty array of task ids");
        ids.push_back(x.get<int>());
      }
    }
    if (has_split) text("split", split_name);
    if (!has_tasks && !has_split) return;
    try {
      out = select_tasks(ids, split_name);
    } catch (const InputError& e) {
      bad(has_tasks ? "tasks" : "split", fmt::format("has a bad value: {}", e.what()));
    }
  }

  void scale(Scale& out) const { choice("scale", out, [](const std::string& s) { return parse_scale(s); }); }

 private:
  const nlohmann::json& j_;
  std::string source_;
  std::vector<std::string> valid_;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

const std::vector<std::string> kTaskKeys = {"tasks", "split", "scale"};
const std::vector<std::string> kOptimizerKeys = {"learning_rate", "beta1", "beta2", "eps", "weight_decay",
                                                 "max_grad_norm"};
const std::vector<std::string> kLoraKeys = {"lora_rank", "lora_alpha"};
const std::vector<std::string> kGrpoKeys = {"normalize_std", "clip_epsilon", "aggregation", "kl_coef",
                                            "entropy_coef", "constant_length"};

std::vector<std::string> join_keys(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  std::sort(out.begin(), out.end());
  return out;
}

void read_optimizer(const KeyReader& r, OptimizerConfig& o) {
  r.number("learning_rate", o.learning_rate, 0, kInf, true);
  r.number("beta1", o.beta1, 0, 1);
  r.number("beta2", o.beta2, 0, 1);
  r.number("eps", o.eps, 0, kInf, true);
  r.number("weight_decay", o.weight_decay, 0, kInf);
  r.number("max_grad_norm", o.max_grad_norm, 0, kInf);
}

/// LoRA ranks above this are not low rank for any policy kbrl trains (the reports use 16).
constexpr int kMaxLoraRank = 256;

void read_lora(const KeyReader& r, LoraConfig& l) {
  r.integer("lora_rank", l.rank, 1, kMaxLoraRank);
  r.number("lora_alpha", l.alpha, 0, kInf, true);
}

void read_grpo(const KeyReader& r, GrpoSettings& g) {
  r.boolean("normalize_std", g.normalize_std);
  r.number("clip_epsilon", g.update.clip_epsilon, 0, 1, true);
  r.choice("aggregation", g.update.aggregation, [](const std::string& s) { return parse_aggregation(s); });
  r.number("kl_coef", g.update.kl_coef, 0, kInf);
  r.number("entropy_coef", g.update.entropy_coef, 0, kInf);
  r.number("constant_length", g.update.constant_length, 0, kInf, true);
}

}  // namespace

// ---- JSON configs ----

nlohmann::json read_json_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  KBRL_CHECK_INPUT(in.good(), "cannot read config file {}", file.string());
  nlohmann::json j;
  // A key given twice in one object is an error (JSON parsers silently keep one of them).
  std::vector<std::set<std::string>> keys;
  const nlohmann::json::parser_callback_t no_duplicates = [&](int, nlohmann::json::parse_event_t event,
                                                              nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) keys.emplace_back();
    if (event == E::object_end && !keys.empty()) keys.pop_back();
    if (event == E::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
      throw InputError(fmt::format("{}: key '{}' is given twice", file.string(), parsed.get<std::string>()));
    return true;
  };
  try {
    j = nlohmann::json::parse(in, no_duplicates, true, /*ignore_comments=*/true);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(fmt::format("{} is not valid JSON: {}", file.string(), e.what()));
  }
  KBRL_CHECK_INPUT(j.is_object(), "{}: the config must be a JSON object (got {})", file.string(), j.type_name());
  return j;
}

void set_config_value(nlohmann::json& config, const std::string& key, const std::string& value) {
  KBRL_CHECK_INPUT(!key.empty(), "an override needs a key (KEY=VALUE)");
  nlohmann::json v = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded()) v = value;
  config[key] = v;
}

std::vector<std::string> rlvr_config_keys() {
  return join_keys({kTaskKeys, kOptimizerKeys, kLoraKeys, kGrpoKeys,
                    {"tasks_per_batch", "group_size", "steps", "temperature", "lora", "checkpoint_every",
                     "seed", "run", "eval_every", "eval_k", "eval_seed"}});
}

std::vector<std::string> ttt_config_keys() {
  return join_keys({kTaskKeys, kOptimizerKeys, kLoraKeys, kGrpoKeys,
                    {"k", "steps", "temperature", "update", "teacher", "sdpo_beta", "patience", "seed",
                     "run", "fresh_k"}});
}

std::vector<std::string> sft_config_keys() {
  return join_keys({kOptimizerKeys, kLoraKeys, {"epochs", "batch_size", "temperature", "lora", "seed", "eval_every"}});
}

std::vector<std::string> sample_config_keys() {
  return join_keys({kTaskKeys, {"k", "temperature", "seed", "run"}});
}

RlvrConfig read_rlvr_config(const nlohmann::json& j, const std::string& source) {
  RlvrConfig c;
  const KeyReader r(j, source, rlvr_config_keys());
  r.tasks(c.tasks);
  r.scale(c.scale);
  r.integer("tasks_per_batch", c.tasks_per_batch, 1);
  r.integer("group_size", c.group_size, 2);
  r.integer("steps", c.steps, 0);
  r.number("temperature", c.temperature, 0, kInf, true);
  read_grpo(r, c.grpo);
  read_optimizer(r, c.optimizer);
  r.boolean("lora", c.lora);
  read_lora(r, c.lora_config);
  r.integer("checkpoint_every", c.checkpoint_every, 0);
  r.seed("seed", c.seed);
  r.text("run", c.run);
  r.integer("eval_every", c.eval_every, 0);
  r.integer("eval_k", c.eval_k, 1);
  r.seed("eval_seed", c.eval_seed);
  return c;
}

TttConfig read_ttt_config(const nlohmann::json& j, const std::string& source) {
  TttConfig c;
  const KeyReader r(j, source, ttt_config_keys());
  r.tasks(c.tasks);
  r.scale(c.scale);
  r.integer("k", c.k, 1);
  r.integer("steps", c.steps, 0);
  r.number("temperature", c.temperature, 0, kInf, true);
  r.choice("update", c.update, [](const std::string& s) { return parse_enum<TttUpdate>(s); });
  read_grpo(r, c.grpo);
  r.choice("teacher", c.teacher, [](const std::string& s) { return parse_sdpo_teacher(s); });
  r.number("sdpo_beta", c.sdpo_beta, 0, kInf, true);
  read_optimizer(r, c.optimizer);
  read_lora(r, c.lora_config);
  r.integer("patience", c.patience, 0);
  r.seed("seed", c.seed);
  r.text("run", c.run);
  r.integer("fresh_k", c.fresh_k, 0);
  KBRL_CHECK_INPUT(c.update != TttUpdate::grpo || c.k >= 2,
                   "{}: GRPO compares the samples of a group: k must be at least 2 for update grpo (got {})",
                   source, c.k);
  return c;
}

SftConfig read_sft_config(const nlohmann::json& j, const std::string& source) {
  SftConfig c;
  const KeyReader r(j, source, sft_config_keys());
  r.integer("epochs", c.epochs, 0);
  r.integer("batch_size", c.batch_size, 1);
  r.number("temperature", c.temperature, 0, kInf, true);
  read_optimizer(r, c.optimizer);
  r.boolean("lora", c.lora);
  read_lora(r, c.lora_config);
  r.seed("seed", c.seed);
  r.integer("eval_every", c.eval_every, 1);
  return c;
}

SampleConfig read_sample_config(const nlohmann::json& j, const std::string& source) {
  SampleConfig c;
  const KeyReader r(j, source, sample_config_keys());
  r.tasks(c.tasks);
  r.scale(c.scale);
  r.integer("k", c.k, 1);
  r.number("temperature", c.temperature, 0, kInf);
  r.seed("seed", c.seed);
  r.text("run", c.run);
  return c;
}

}  // namespace kbrl
