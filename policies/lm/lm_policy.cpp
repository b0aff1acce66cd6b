// LmPolicy (lm_policy.h): the spec, prompts, sampling and scoring, adapters and checkpoints. The
// optimizer step is in lm_policy_update.cpp.
#include <cmath>
#include <sstream>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <policies/spec_fields.h>

#include "lm_policy_impl.h"

namespace kbrl::lm {
namespace {

constexpr std::string_view kKeys =
    "device, dtype, cpu_weights, graphs, matvec_rows, attention_splits, fused, max_tokens, top_p, style, shots, system, targets, micro_batch, checkpoint, pool, "
    "adapter";
const std::vector<std::string> kTargets = {"q", "k", "v", "o", "gate", "up", "down"};

// "random:<layers>x<hidden>[:seed]": a Llama-shaped model with random weights and a byte-level
// tokenizer (for plumbing and throughput where no model file can travel). "random:<preset>[:seed]":
// a named architecture's exact shapes (llama_preset: smollm2-135m, qwen2.5-0.5b, qwen2.5-1.5b), the
// byte tokenizer padded with unused tokens to its vocabulary, for speed and memory figures.
LanguageModel random_model(const std::string& spec, const ModelOptions& options) {
  LlamaConfig c;
  unsigned long long seed = 0;
  TokenizerData t = byte_tokenizer_data();
  const std::string rest = spec.substr(std::string_view("random:").size());
  const std::string name = rest.substr(0, rest.find(':'));
  if (const std::optional<LlamaConfig> preset = llama_preset(name)) {
    const std::string tail = rest.substr(name.size());
    KBRL_CHECK_INPUT(tail.empty() || std::sscanf(tail.c_str(), ":%llu", &seed) == 1,
                     "random model '{}': expected random:{}[:seed]", spec, name);
    c = *preset;
    for (int64_t i = static_cast<int64_t>(t.tokens.size()); i < c.vocab_size; ++i) {
      t.tokens.push_back(fmt::format("<|unused_{}|>", i));
      t.token_types.push_back(5);
    }
  } else {
    int layers = 0, hidden = 0;
    const int got = std::sscanf(spec.c_str(), "random:%dx%d:%llu", &layers, &hidden, &seed);
    KBRL_CHECK_INPUT(got >= 2 && layers >= 1 && layers <= 64 && hidden >= 64 && hidden % 64 == 0 && hidden <= 8192,
                     "random model '{}': expected random:<layers>x<hidden>[:seed] (hidden a multiple of 64) or "
                     "random:<preset>[:seed] with a preset of {}",
                     spec, llama_preset_names());
    c.layers = layers;
    c.hidden = hidden;
    c.heads = hidden / 64;
    c.kv_heads = c.heads % 3 == 0 ? c.heads / 3 : c.heads;
    c.head_dim = 64;
    c.intermediate = (hidden * 8 / 3 + 63) / 64 * 64;
    c.tied_embeddings = false;  // see LlamaNet's random constructor
    c.vocab_size = static_cast<int64_t>(t.tokens.size());
    c.context_length = 8192;
  }
  ChatTemplate chat;
  chat.family = ChatFamily::chatml;
  return LanguageModel(c, std::move(t), chat, seed, options);
}

torch::Tensor kaiming_uniform(int64_t rows, int64_t cols, uint64_t seed, torch::Device device) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(cols));
  std::vector<float> v(static_cast<size_t>(rows * cols));
  uint64_t state = seed;
  for (float& x : v) x = static_cast<float>((2 * splitmix64_uniform01(state) - 1) * bound);
  return torch::from_blob(v.data(), {rows, cols}, torch::kFloat32).to(device).clone();
}

}  // namespace

bool is_lm_spec(std::string_view name) { return name.rfind("lm:", 0) == 0; }

LmOptions parse_lm_spec(std::string_view spec) {
  KBRL_CHECK_INPUT(is_lm_spec(spec), "policy spec '{}' does not start with 'lm:' (lm:<model>[,key=value...]; keys: {})",
                   spec, kKeys);
  const auto fields = split_spec_fields(spec.substr(3), spec);
  LmOptions o;
  o.model = fields[0];
  KBRL_CHECK_INPUT(!o.model.empty(), "policy spec '{}' names no model (lm:<model.gguf or HF folder>[,key=value...])",
                   spec);
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string& f = fields[i];
    const size_t eq = f.find('=');
    KBRL_CHECK_INPUT(eq != std::string::npos && eq > 0, "policy spec '{}': '{}' is not key=value (valid keys: {})",
                     spec, f, kKeys);
    const std::string key = f.substr(0, eq), value = f.substr(eq + 1);
    if (key == "device") {
      KBRL_CHECK_INPUT(value == "cpu" || value.rfind("cuda", 0) == 0, "policy spec: device={} (expected cpu or cuda[:N])",
                       value);
      o.model_options.device = value;
    } else if (key == "dtype") {
      KBRL_CHECK_INPUT(value == "float32" || value == "bfloat16", "policy spec: dtype={} (expected float32 or bfloat16)",
                       value);
      o.model_options.dtype = value;
    } else if (key == "cpu_weights") {
      KBRL_CHECK_INPUT(value == "float32" || value == "q8", "policy spec: cpu_weights={} (expected float32 or q8)", value);
      o.model_options.cpu_q8_weights = value == "q8";
    } else if (key == "graphs") {
      KBRL_CHECK_INPUT(value == "on" || value == "off", "policy spec: graphs={} (expected on or off)", value);
      o.model_options.cuda_graphs = value == "on";
    } else if (key == "matvec_rows") {
      o.model_options.matvec_rows = static_cast<int>(parse_spec_int(key, value, 0, 8));
    } else if (key == "attention_splits") {
      o.model_options.attention_splits = static_cast<int>(parse_spec_int(key, value, 0, 64));
    } else if (key == "fused") {
      KBRL_CHECK_INPUT(value == "on" || value == "off", "policy spec: fused={} (expected on or off)", value);
      o.model_options.fused = value == "on";
    } else if (key == "max_tokens") {
      o.max_tokens = parse_spec_int(key, value, 1, 1 << 20);
    } else if (key == "top_p") {
      o.top_p = parse_spec_double(key, value, 0.0, 1.0, true);
    } else if (set_prompt_key(o.prompt, key, value)) {
      // style, shots or system: set
    } else if (key == "targets") {
      o.lora_targets.clear();
      std::stringstream ss(value);
      for (std::string t; std::getline(ss, t, '+');) {
        KBRL_CHECK_INPUT(std::find(kTargets.begin(), kTargets.end(), t) != kTargets.end(),
                         "policy spec: targets={}: '{}' is not one of q, k, v, o, gate, up, down", value, t);
        o.lora_targets.push_back(t);
      }
      KBRL_CHECK_INPUT(!o.lora_targets.empty(), "policy spec: targets= names no projection");
    } else if (key == "micro_batch") {
      o.micro_batch = parse_spec_int(key, value, 1, 4096);
    } else if (key == "checkpoint") {
      KBRL_CHECK_INPUT(value == "on" || value == "off" || value == "auto",
                       "policy spec: checkpoint={} (expected on, off or auto)", value);
      o.checkpoint = value;
    } else if (key == "pool") {
      KBRL_CHECK_INPUT(value == "on" || value == "off", "policy spec: pool={} (expected on or off)", value);
      o.pool = value;
    } else if (key == "adapter") {
      KBRL_CHECK_INPUT(!value.empty(), "policy spec: adapter= names no file (adapter=FILE: a LoRA adapter, e.g. kbrl "
                       "sft's adapter.pt)");
      o.adapter = value;
    } else {
      throw InputError(fmt::format("policy spec '{}': unknown key '{}' (valid keys: {})", spec, key, kKeys));
    }
  }
  KBRL_CHECK_INPUT(!o.model_options.cpu_q8_weights || o.model_options.device == "cpu",
                   "policy spec: cpu_weights=q8 is for device=cpu (a GPU samples in its own kernels)");
  return o;
}

// ---- Impl ----

std::vector<torch::Tensor> LmPolicy::Impl::trainable() {
  std::vector<torch::Tensor> out;
  for (TransformerBlock& layer : model.net().layers())
    for (auto [name, proj] : layer.projections())
      if (proj->a.defined()) {
        out.push_back(proj->a);
        out.push_back(proj->b);
      }
  return out;
}

void LmPolicy::Impl::rebuild_optimizer() {
  optimizer.reset();
  const auto params = trainable();
  if (params.empty()) return;
  auto opts = torch::optim::AdamOptions(optimizer_config.learning_rate)
                  .betas({optimizer_config.beta1, optimizer_config.beta2})
                  .eps(optimizer_config.eps)
                  .weight_decay(optimizer_config.weight_decay);
  optimizer = std::make_unique<torch::optim::Adam>(params, opts);
}

// ---- LmPolicy ----

LmPolicy::LmPolicy(LmOptions options) : options_(std::move(options)) {
  LanguageModel m = options_.model.rfind("random:", 0) == 0
                        ? random_model(options_.model, options_.model_options)
                        : LanguageModel(read_model_file(options_.model), options_.model_options);
  impl_ = std::make_unique<Impl>(std::move(m));
  impl_->model.net().set_checkpointing(options_.checkpoint == "on" ||
                                       (options_.checkpoint.empty() && options_.model_options.device != "cpu"));
  if (!options_.adapter.empty()) load_adapter(options_.adapter);
}

LmPolicy::~LmPolicy() = default;

bool LmPolicy::activation_checkpointing() const { return impl_->model.net().checkpointing(); }

std::string LmPolicy::name() const { return "lm:" + impl_->model.name(); }
LanguageModel& LmPolicy::model() { return impl_->model; }

std::vector<int> LmPolicy::prompt_tokens(const TaskSpec& task, const PromptOptions& options) {
  return prompt_tokens(build_prompt(task, options));
}

std::vector<int> LmPolicy::prompt_tokens(const Prompt& p) {
  const ChatTemplate& chat = impl_->model.chat();
  std::string text;
  if (chat.family == ChatFamily::plain) {
    text = p.text();
  } else {
    std::vector<ChatMessage> messages;
    if (!p.system.empty()) messages.push_back({"system", p.system});
    messages.push_back({"user", p.user});
    text = chat.render(messages);
  }
  auto it = impl_->prompt_ids.find(text);
  if (it != impl_->prompt_ids.end()) return it->second;
  // A template that writes its BOS as text (llama3) gets none added by the tokenizer.
  std::vector<int> ids = impl_->model.tokenizer().encode(text, chat.bos_text.empty(), true);
  if (impl_->prompt_ids.size() > 256) impl_->prompt_ids.clear();
  impl_->prompt_ids.emplace(text, ids);
  return ids;
}

std::vector<Sample> LmPolicy::sample(const TaskSpec& task, int n, double temperature, uint64_t seed) {
  const Prompt built = build_prompt(task, options_.prompt);  // once: its tokens and its version
  const std::vector<int> prompt = prompt_tokens(built);
  GenerateOptions g;
  g.max_tokens = options_.max_tokens;
  g.temperature = temperature;
  g.top_p = options_.top_p;
  g.seed = seed;
  const std::string& version = built.version;
  std::vector<Sample> out;
  for (Generation& gen : impl_->model.generate(prompt, n, g)) {
    Sample s;
    s.task_id = task.id;
    s.kind = ActionKind::text;
    std::vector<int> body = gen.tokens;
    if (!body.empty() && impl_->model.tokenizer().is_end(body.back())) body.pop_back();
    s.text = impl_->model.tokenizer().decode(body, false);
    s.tokens = std::move(gen.tokens);
    s.logprobs = std::move(gen.logprobs);
    s.prompt_version = version;
    s.finish_reason = gen.finish_reason;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::vector<double>> LmPolicy::logprob(const TaskSpec& task, const std::vector<std::vector<int>>& tokens,
                                                   double temperature) {
  return impl_->model.score(prompt_tokens(task, options_.prompt), tokens, temperature);
}

std::vector<int> LmPolicy::text_tokens(const std::string& text) {
  const Tokenizer& tok = impl_->model.tokenizer();
  const int end = tok.eot() >= 0 ? tok.eot() : tok.eos();
  std::vector<int> ids = tok.encode(text, false, false);
  if (end >= 0) ids.push_back(end);
  return ids;
}

std::vector<std::vector<double>> LmPolicy::score_text(const TaskSpec& task, const std::vector<std::string>& texts) {
  std::vector<std::vector<int>> tokens;
  for (const std::string& t : texts) tokens.push_back(text_tokens(t));
  return impl_->model.score(prompt_tokens(task, options_.prompt), tokens, 1.0);
}

std::vector<std::vector<double>> LmPolicy::teacher_logprob(const TaskSpec& task,
                                                           const std::vector<std::vector<int>>& tokens,
                                                           const TeacherContext& context, double temperature) {
  PromptOptions p = options_.prompt;
  p.resolve = true;  // the teacher's instruction: an empty context is the prompt-only teacher, not the student
  if (context.feedback) {
    PromptFeedback f;
    const auto& fb = *context.feedback;
    f.outcome = fb.correct ? "ok" : fb.compiled ? "wrong_answer" : "compile_error";
    if (fb.correct) f.speedup = fb.speedup;
    p.feedback = f;
  }
  if (context.demonstration) {
    std::vector<int> demo = *context.demonstration;
    if (!demo.empty() && impl_->model.tokenizer().is_end(demo.back())) demo.pop_back();
    p.demonstration = impl_->model.tokenizer().decode(demo, false);
  }
  return impl_->model.score(prompt_tokens(task, p), tokens, temperature);
}

// ---- adapters ----

void LmPolicy::add_adapter(const LoraConfig& config, uint64_t seed) {
  KBRL_CHECK_INPUT(config.rank >= 1 && config.alpha > 0, "LoRA needs rank >= 1 and alpha > 0 (got {} and {})",
                   config.rank, config.alpha);
  impl_->lora = config;
  reset_adapter(seed);
}

void LmPolicy::reset_adapter(uint64_t seed) {
  KBRL_CHECK_INPUT(impl_->lora.has_value(), "reset_adapter: the policy has no adapter (add_adapter first)");
  const LoraConfig& c = *impl_->lora;
  const torch::Device dev = impl_->model.net().device();
  auto& layers = impl_->model.net().layers();
  for (size_t l = 0; l < layers.size(); ++l) {
    int64_t index = 0;
    for (auto [name, proj] : layers[l].projections()) {
      ++index;
      proj->a = torch::Tensor();
      proj->b = torch::Tensor();
      if (std::find(options_.lora_targets.begin(), options_.lora_targets.end(), name) == options_.lora_targets.end())
        continue;
      const int64_t out = proj->weight.size(0), in = proj->weight.size(1);
      proj->a = kaiming_uniform(c.rank, in, derive_seed(seed, {static_cast<int64_t>(l), index}), dev).requires_grad_(true);
      proj->b = torch::zeros({out, c.rank}, torch::TensorOptions().device(dev).dtype(torch::kFloat32)).requires_grad_(true);
      proj->scale = c.alpha / c.rank;
    }
  }
  impl_->rebuild_optimizer();
}

void LmPolicy::merge_adapter() {
  if (!impl_->lora) return;
  torch::NoGradGuard no_grad;
  for (TransformerBlock& layer : impl_->model.net().layers())
    for (auto [name, proj] : layer.projections())
      if (proj->a.defined())
        proj->weight.add_((torch::matmul(proj->b, proj->a) * proj->scale).to(proj->weight.scalar_type()));
  remove_adapter();
}

void LmPolicy::remove_adapter() {
  for (TransformerBlock& layer : impl_->model.net().layers())
    for (auto [name, proj] : layer.projections()) {
      proj->a = torch::Tensor();
      proj->b = torch::Tensor();
    }
  impl_->lora.reset();
  impl_->rebuild_optimizer();
}

bool LmPolicy::has_adapter() const { return impl_->lora.has_value(); }

void LmPolicy::set_optimizer(const OptimizerConfig& config) {
  KBRL_CHECK_INPUT(config.learning_rate > 0, "the learning rate must be > 0 (got {})", config.learning_rate);
  impl_->optimizer_config = config;
  impl_->rebuild_optimizer();
}

int64_t LmPolicy::parameter_count(bool trainable_only) const {
  int64_t n = 0;
  for (const torch::Tensor& t : impl_->trainable()) n += t.numel();
  if (trainable_only) return n;
  for (auto& [name, t] : impl_->model.net().named_weights()) n += t->numel();
  return n;
}

}  // namespace kbrl::lm
