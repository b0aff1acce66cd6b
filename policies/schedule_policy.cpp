// The schedule policy's network, LoRA adapters, sampling, scoring, updates and checkpoints: the
// one translation unit of policies/ that includes libtorch.
#include "schedule_policy.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "task_features.h"

namespace kbrl {
namespace {

constexpr int kContextFeatures = 5;  // has_feedback, compiled, correct, log2 speedup / 3, has_demo
constexpr int kIndexEmbeddings = 32;  // a value's position within its knob (breaks hash ties)
constexpr const char* kAdapted[] = {"L1", "L2", "L3", "L4"};

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// A tensor of `shape` with entries uniform in [-bound, bound) from splitmix64(state): the same
/// numbers with every libtorch and on every device.
torch::Tensor uniform_tensor(std::vector<int64_t> shape, double bound, uint64_t& state) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v)
    x = static_cast<float>((splitmix64_uniform01(state) * 2 - 1) * bound);
  return torch::from_blob(v.data(), shape, torch::kFloat32).clone();
}

/// One task's decoding tables: its features and, per knob, the embedding rows of its name and of
/// its values.
struct TaskTables {
  torch::Tensor features;                  // [F]
  std::vector<int64_t> knob_rows;          // per knob
  std::vector<torch::Tensor> value_rows;   // per knob: [V_k] rows of the value tables
  std::vector<torch::Tensor> index_rows;   // per knob: [V_k] position rows
};

struct Lora {
  torch::Tensor a, b;  // [rank, in], [out, rank]
};

struct BatchTerms {
  torch::Tensor loss;
  UpdateStats stats;
};

}  // namespace

struct SchedulePolicy::Impl {
  ScheduleNetConfig config;
  torch::Device device{torch::kCPU};
  std::map<std::string, torch::Tensor> base;  // name -> parameter
  std::map<std::string, Lora> lora;           // adapted layer -> adapter
  LoraConfig lora_config;
  OptimizerConfig optimizer_config;
  std::unique_ptr<torch::optim::Adam> optimizer;
  std::map<int, TaskTables> tables;  // by task id (+ scale, see tables_of)

  explicit Impl(const ScheduleNetConfig& c) : config(c) {
    KBRL_CHECK_INPUT(c.hidden > 0 && c.embed > 0 && c.value_buckets > 0 && c.knob_buckets > 0,
                     "schedule network sizes must be positive");
    device = parse_device(c.device);
    const int64_t F = static_cast<int64_t>(task_feature_names().size());
    const int64_t H = c.hidden, E = c.embed;
    uint64_t state = c.seed ^ 0x5EEDF00DULL;
    auto linear = [&](const std::string& name, int64_t in, int64_t out) {
      const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // torch.nn.Linear's init
      base[name + ".weight"] = uniform_tensor({out, in}, bound, state);
      base[name + ".bias"] = uniform_tensor({out}, bound, state);
    };
    linear("L1", F, H);
    linear("L2", H, H);
    linear("L3", H + 2 * E, H);
    linear("L4", H, E);
    linear("context", kContextFeatures, H);
    base["knob_embedding"] = uniform_tensor({c.knob_buckets, E}, 0.17, state);
    base["value_embedding"] = uniform_tensor({c.value_buckets, E}, 0.17, state);
    base["index_embedding"] = uniform_tensor({kIndexEmbeddings, E}, 0.17, state);
    base["value_bias"] = torch::zeros({c.value_buckets});
    base["copy_gain"] = torch::ones({1});
    for (auto& [name, t] : base) t = t.to(device).set_requires_grad(true);
    rebuild_optimizer();
  }

  static torch::Device parse_device(const std::string& text) {
    try {
      torch::Device d(text);
      if (d.is_cuda())
        KBRL_CHECK_INPUT(torch::cuda::is_available(),
                         "device '{}': this libtorch has no usable CUDA device", text);
      return d;
    } catch (const c10::Error& e) {
      throw InputError(fmt::format("unknown device '{}' (cpu, cuda, cuda:N)", text));
    }
  }

  std::vector<torch::Tensor> trainable() const {
    std::vector<torch::Tensor> out;
    if (!lora.empty()) {
      for (const auto& [name, l] : lora) {
        out.push_back(l.a);
        out.push_back(l.b);
      }
    } else {
      for (const auto& [name, t] : base) out.push_back(t);
    }
    return out;
  }

  void rebuild_optimizer() {
    for (const auto& [name, t] : base) t.set_requires_grad(lora.empty());
    auto opts = torch::optim::AdamOptions(optimizer_config.learning_rate)
                    .betas({optimizer_config.beta1, optimizer_config.beta2})
                    .eps(optimizer_config.eps)
                    .weight_decay(optimizer_config.weight_decay);
    optimizer = std::make_unique<torch::optim::Adam>(trainable(), opts);
  }

  void init_adapter(uint64_t seed) {
    uint64_t state = seed ^ 0xADA97E55ULL;
    for (const char* name : kAdapted) {
      const torch::Tensor& w = base.at(std::string(name) + ".weight");
      const int64_t out = w.size(0), in = w.size(1);
      Lora l;
      // Kaiming-uniform with a = sqrt(5), as torch.nn.Linear and PEFT's LoRA A: bound 1/sqrt(in).
      l.a = uniform_tensor({lora_config.rank, in}, 1.0 / std::sqrt(static_cast<double>(in)), state)
                .to(device)
                .set_requires_grad(true);
      l.b = torch::zeros({out, lora_config.rank}, torch::TensorOptions().device(device))
                .set_requires_grad(true);
      lora[name] = l;
    }
    rebuild_optimizer();
  }

  /// y = W x + b (+ scaling * B A x when the adapter is on).
  torch::Tensor linear(const char* name, const torch::Tensor& x, bool use_adapter) const {
    const std::string n(name);
    torch::Tensor y = torch::addmm(base.at(n + ".bias"), x, base.at(n + ".weight").t());
    if (use_adapter) {
      auto it = lora.find(n);
      if (it != lora.end()) {
        const double scaling = lora_config.alpha / lora_config.rank;
        y = y + scaling * x.matmul(it->second.a.t()).matmul(it->second.b.t());
      }
    }
    return y;
  }

  const TaskTables& tables_of(const TaskSpec& task) {
    const int key = task.id * 2 + (task.scale == Scale::small ? 1 : 0);
    auto it = tables.find(key);
    if (it != tables.end()) return it->second;
    const KnobSpace& space = knob_space_of(task);
    TaskTables t;
    const std::vector<float> f = task_features(task);
    t.features = torch::tensor(f, torch::kFloat32).to(device);
    for (const Knob& knob : space.knobs()) {
      t.knob_rows.push_back(static_cast<int64_t>(fnv1a(knob.name) % static_cast<uint64_t>(config.knob_buckets)));
      std::vector<int64_t> rows, index;
      for (size_t v = 0; v < knob.values.size(); ++v) {
        rows.push_back(static_cast<int64_t>(fnv1a(knob.name + "=" + knob.values[v]) %
                                            static_cast<uint64_t>(config.value_buckets)));
        index.push_back(std::min<int64_t>(static_cast<int64_t>(v), kIndexEmbeddings - 1));
      }
      t.value_rows.push_back(torch::tensor(rows, torch::kInt64).to(device));
      t.index_rows.push_back(torch::tensor(index, torch::kInt64).to(device));
    }
    return tables.emplace(key, std::move(t)).first->second;
  }

  /// The initial state h_0 for n sequences, [n, H].
  torch::Tensor initial_state(const TaskTables& t, int64_t n, bool use_adapter,
                              const TeacherContext* context) const {
    torch::Tensor x = t.features.unsqueeze(0);
    torch::Tensor h = torch::tanh(linear("L2", torch::tanh(linear("L1", x, use_adapter)), use_adapter));
    if (context && context->feedback) {
      const auto& fb = *context->feedback;
      const double log_speedup = fb.speedup > 0 ? std::clamp(std::log2(fb.speedup), -3.0, 3.0) / 3.0 : -1.0;
      const std::vector<float> c = {1.0f, fb.compiled ? 1.0f : 0.0f, fb.correct ? 1.0f : 0.0f,
                                    static_cast<float>(log_speedup),
                                    context->demonstration ? 1.0f : 0.0f};
      h = h + linear("context", torch::tensor(c, torch::kFloat32).to(device).unsqueeze(0), false);
    }
    return h.expand({n, h.size(1)});
  }

  /// Logits of knob k for n states [n, H] -> ([n, H'], [n, V_k]).
  std::pair<torch::Tensor, torch::Tensor> step(const TaskTables& t, size_t k, const torch::Tensor& h,
                                               const torch::Tensor& prev_embedding, bool use_adapter) const {
    const int64_t n = h.size(0);
    const torch::Tensor knob = base.at("knob_embedding")[t.knob_rows[k]].unsqueeze(0).expand({n, config.embed});
    const torch::Tensor next = torch::tanh(linear("L3", torch::cat({h, knob, prev_embedding}, 1), use_adapter));
    const torch::Tensor query = linear("L4", next, use_adapter);
    const torch::Tensor values = value_vectors(t, k);
    const torch::Tensor logits =
        query.matmul(values.t()) + base.at("value_bias").index_select(0, t.value_rows[k]).unsqueeze(0);
    return {next, logits};
  }

  torch::Tensor value_vectors(const TaskTables& t, size_t k) const {
    return base.at("value_embedding").index_select(0, t.value_rows[k]) +
           base.at("index_embedding").index_select(0, t.index_rows[k]);
  }

  torch::Tensor zeros_embedding(int64_t n) const {
    return torch::zeros({n, config.embed}, torch::TensorOptions().device(device));
  }

  /// The legal-value masks of knob k for every prefix: [n, V_k] bool on the device.
  torch::Tensor masks(const KnobSpace& space, const std::vector<std::vector<int>>& tokens, size_t k) const {
    const int64_t V = static_cast<int64_t>(space.knobs()[k].values.size());
    std::vector<uint8_t> m;
    m.reserve(tokens.size() * static_cast<size_t>(V));
    for (const auto& seq : tokens) {
      const std::vector<bool> legal = space.legal_mask(std::span<const int>(seq.data(), k));
      for (bool b : legal) m.push_back(b ? 1 : 0);
    }
    return torch::from_blob(m.data(), {static_cast<int64_t>(tokens.size()), V}, torch::kUInt8)
        .clone()
        .to(torch::kBool)
        .to(device);
  }

  /// Masked log-softmax of logits / temperature.
  static torch::Tensor masked_log_softmax(const torch::Tensor& logits, const torch::Tensor& mask,
                                          double temperature) {
    const torch::Tensor scaled = logits / temperature;
    return torch::log_softmax(scaled.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity()), 1);
  }

  struct Scored {
    std::vector<torch::Tensor> logp;        // per knob: [n] log-prob of the given token
    std::vector<torch::Tensor> log_dist;    // per knob: [n, V_k] masked log-distribution
    std::vector<torch::Tensor> mask;        // per knob: [n, V_k]
  };

  /// Teacher-forced scoring of given sequences of one task. `known_masks`: the masks of an earlier score() of the same sequences (they depend on the
  /// tokens only), so scoring them again under the reference skips the legality look-ahead.
  Scored score(const TaskSpec& task, const std::vector<std::vector<int>>& tokens, double temperature,
               bool use_adapter, const std::vector<const TeacherContext*>* contexts = nullptr,
               const std::vector<torch::Tensor>* known_masks = nullptr) {
    KBRL_CHECK_INPUT(temperature > 0, "scoring needs a temperature > 0 (got {})", temperature);
    const KnobSpace& space = knob_space_of(task);
    for (const auto& seq : tokens) space.detokenize(seq);  // InputError for an illegal sequence
    const TaskTables& t = tables_of(task);
    const int64_t n = static_cast<int64_t>(tokens.size());
    Scored out;
    if (n == 0) return out;
    torch::Tensor h;
    if (contexts) {
      std::vector<torch::Tensor> rows;
      for (const TeacherContext* c : *contexts) rows.push_back(initial_state(t, 1, use_adapter, c));
      h = torch::cat(rows, 0);
    } else {
      h = initial_state(t, n, use_adapter, nullptr);
    }
    torch::Tensor prev = zeros_embedding(n);
    for (size_t k = 0; k < space.knobs().size(); ++k) {
      auto [next, logits] = step(t, k, h, prev, use_adapter);
      if (contexts) logits = logits + demo_bonus(*contexts, k, logits.size(1));
      std::vector<int64_t> chosen;
      for (const auto& seq : tokens) chosen.push_back(seq[k]);
      const torch::Tensor idx = torch::tensor(chosen, torch::kInt64).to(device);
      const torch::Tensor mask = known_masks ? known_masks->at(k) : masks(space, tokens, k);
      const torch::Tensor log_dist = masked_log_softmax(logits, mask, temperature);
      out.logp.push_back(log_dist.gather(1, idx.unsqueeze(1)).squeeze(1));
      out.log_dist.push_back(log_dist);
      out.mask.push_back(mask);
      prev = value_vectors(t, k).index_select(0, idx);
      h = next;
    }
    return out;
  }

  /// copy_gain at the demonstration's value of knob k, per sequence: [n, V_k].
  torch::Tensor demo_bonus(const std::vector<const TeacherContext*>& contexts, size_t k, int64_t V) const {
    std::vector<float> b(contexts.size() * static_cast<size_t>(V), 0.0f);
    for (size_t i = 0; i < contexts.size(); ++i)
      if (contexts[i]->demonstration) b[i * static_cast<size_t>(V) + static_cast<size_t>((*contexts[i]->demonstration)[k])] = 1.0f;
    const torch::Tensor onehot =
        torch::from_blob(b.data(), {static_cast<int64_t>(contexts.size()), V}, torch::kFloat32).clone().to(device);
    return onehot * base.at("copy_gain");
  }

  BatchTerms batch_terms(const std::vector<TrainItem>& batch, const UpdateConfig& config, bool need_loss);

  static std::vector<std::vector<double>> to_rows(const Scored& s, size_t n) {
    std::vector<std::vector<double>> out(n);
    for (const torch::Tensor& lp : s.logp) {
      const torch::Tensor c = lp.detach().to(torch::kCPU, torch::kFloat64).contiguous();
      const double* p = c.data_ptr<double>();
      for (size_t i = 0; i < n; ++i) out[i].push_back(p[i]);
    }
    return out;
  }
};

SchedulePolicy::SchedulePolicy(const ScheduleNetConfig& config) : impl_(std::make_unique<Impl>(config)) {}
SchedulePolicy::~SchedulePolicy() = default;

const ScheduleNetConfig& SchedulePolicy::config() const { return impl_->config; }

std::vector<Sample> SchedulePolicy::sample(const TaskSpec& task, int n, double temperature, uint64_t seed) {
  KBRL_CHECK_INPUT(n >= 0 && temperature >= 0 && std::isfinite(temperature),
                   "sample: n {} and temperature {} must be >= 0", n, temperature);
  torch::NoGradGuard no_grad;
  Impl& m = *impl_;
  const KnobSpace& space = knob_space_of(task);
  const TaskTables& t = m.tables_of(task);
  std::vector<Sample> out(static_cast<size_t>(n));
  if (n == 0) return out;
  std::vector<std::vector<int>> tokens(static_cast<size_t>(n));
  // One stream per sample, so sample i does not depend on n.
  std::vector<uint64_t> states;
  for (int i = 0; i < n; ++i) {
    uint64_t s = seed ^ (0xD1B54A32D192ED03ULL * static_cast<uint64_t>(task.id + 1)) ^
                 (0x9E3779B97F4A7C15ULL * static_cast<uint64_t>(i + 1));
    splitmix64(s);
    states.push_back(s);
  }
  torch::Tensor h = m.initial_state(t, n, true, nullptr);
  torch::Tensor prev = m.zeros_embedding(n);
  for (size_t k = 0; k < space.knobs().size(); ++k) {
    auto [next, logits] = m.step(t, k, h, prev, true);
    const torch::Tensor mask = m.masks(space, tokens, k);
    const torch::Tensor log_dist =
        Impl::masked_log_softmax(logits, mask, temperature > 0 ? temperature : 1.0)
            .to(torch::kCPU, torch::kFloat64)
            .contiguous();
    const torch::Tensor legal = mask.to(torch::kCPU).contiguous();
    const int64_t V = log_dist.size(1);
    const double* lp = log_dist.data_ptr<double>();
    const bool* lm = legal.data_ptr<bool>();
    std::vector<int64_t> chosen;
    for (int i = 0; i < n; ++i) {
      const double* row = lp + i * V;
      int pick = -1;
      if (temperature == 0) {
        for (int v = 0; v < V; ++v)
          if (lm[i * V + v] && (pick < 0 || row[v] > row[pick])) pick = v;
      } else {
        const double u = splitmix64_uniform01(states[static_cast<size_t>(i)]);
        double acc = 0;
        for (int v = 0; v < V; ++v) {
          if (!lm[i * V + v]) continue;
          pick = v;
          acc += std::exp(row[v]);
          if (u < acc) break;
        }
      }
      KBRL_ASSERT(pick >= 0, "task {}: no legal value at knob {}", task.id, k);
      tokens[static_cast<size_t>(i)].push_back(pick);
      out[static_cast<size_t>(i)].logprobs.push_back(temperature == 0 ? 0.0 : row[pick]);
      chosen.push_back(pick);
    }
    const torch::Tensor idx = torch::tensor(chosen, torch::kInt64).to(m.device);
    prev = m.value_vectors(t, k).index_select(0, idx);
    h = next;
  }
  for (int i = 0; i < n; ++i) {
    Sample& s = out[static_cast<size_t>(i)];
    s.task_id = task.id;
    s.tokens = tokens[static_cast<size_t>(i)];
    s.config = space.detokenize(s.tokens);
  }
  return out;
}

std::vector<std::vector<double>> SchedulePolicy::logprob(const TaskSpec& task,
                                                         const std::vector<std::vector<int>>& tokens,
                                                         double temperature) {
  torch::NoGradGuard no_grad;
  return Impl::to_rows(impl_->score(task, tokens, temperature, true), tokens.size());
}

std::vector<std::vector<double>> SchedulePolicy::teacher_logprob(const TaskSpec& task,
                                                                 const std::vector<std::vector<int>>& tokens,
                                                                 const TeacherContext& context,
                                                                 double temperature) {
  torch::NoGradGuard no_grad;
  if (context.demonstration) knob_space_of(task).detokenize(*context.demonstration);
  const std::vector<const TeacherContext*> contexts(tokens.size(), &context);
  return Impl::to_rows(impl_->score(task, tokens, temperature, true, &contexts), tokens.size());
}

void SchedulePolicy::add_adapter(const LoraConfig& config, uint64_t seed) {
  KBRL_CHECK_INPUT(config.rank > 0 && config.alpha > 0, "LoRA rank {} and alpha {} must be > 0",
                   config.rank, config.alpha);
  impl_->lora_config = config;
  impl_->init_adapter(seed);
}

void SchedulePolicy::reset_adapter(uint64_t seed) {
  KBRL_CHECK_INPUT(has_adapter(), "reset_adapter: the policy has no adapter");
  impl_->init_adapter(seed);
}

void SchedulePolicy::merge_adapter() {
  KBRL_CHECK_INPUT(has_adapter(), "merge_adapter: the policy has no adapter");
  Impl& m = *impl_;
  {
    torch::NoGradGuard no_grad;
    const double scaling = m.lora_config.alpha / m.lora_config.rank;
    for (const auto& [name, l] : m.lora) m.base.at(name + ".weight").add_(scaling * l.b.matmul(l.a));
  }
  m.lora.clear();
  m.rebuild_optimizer();
}

void SchedulePolicy::remove_adapter() {
  impl_->lora.clear();
  impl_->rebuild_optimizer();
}

bool SchedulePolicy::has_adapter() const { return !impl_->lora.empty(); }

void SchedulePolicy::set_optimizer(const OptimizerConfig& config) {
  KBRL_CHECK_INPUT(config.learning_rate > 0, "learning rate {} must be > 0", config.learning_rate);
  impl_->optimizer_config = config;
  impl_->rebuild_optimizer();
}

/// The loss of a batch and its statistics (shared by update and measure).
BatchTerms SchedulePolicy::Impl::batch_terms(const std::vector<TrainItem>& batch,
                                             const UpdateConfig& config, bool need_loss) {
  Impl& m = *this;
  KBRL_CHECK_INPUT(!batch.empty(), "update: empty batch");
  // Group the items by task (same space, one batched forward each), keeping their order.
  std::map<std::pair<int, int>, std::vector<size_t>> groups;
  for (size_t i = 0; i < batch.size(); ++i) {
    const auto& it = batch[i];
    KBRL_CHECK_INPUT(it.advantages.size() == it.tokens.size() || !need_loss,
                     "item {}: {} advantages for {} tokens", i, it.advantages.size(), it.tokens.size());
    if (need_loss && config.objective == Objective::clipped_ratio)
      KBRL_CHECK_INPUT(it.old_logprobs.size() == it.tokens.size(), "item {}: {} old log-probs for {} tokens",
                       i, it.old_logprobs.size(), it.tokens.size());
    groups[{it.task.id, it.task.scale == Scale::small ? 1 : 0}].push_back(i);
  }
  const auto dev = torch::TensorOptions().device(m.device).dtype(torch::kFloat32);
  torch::Tensor total = torch::zeros({}, dev);
  double kl_sum = 0, entropy_sum = 0, clipped = 0;
  int64_t tokens = 0;
  const double n_seq = static_cast<double>(batch.size());
  for (const auto& [key, idx] : groups) {
    const TaskSpec& task = batch[idx.front()].task;
    std::vector<std::vector<int>> seqs;
    for (size_t i : idx) seqs.push_back(batch[i].tokens);
    const auto scored = m.score(task, seqs, config.temperature, true);
    Scored ref;
    const bool want_ref = !m.lora.empty();
    if (want_ref) {
      torch::NoGradGuard no_grad;
      ref = m.score(task, seqs, config.temperature, false, nullptr, &scored.mask);
    }
    const int64_t n = static_cast<int64_t>(idx.size());
    const size_t K = scored.logp.size();
    for (size_t k = 0; k < K; ++k) {
      const torch::Tensor& log_dist = scored.log_dist[k];
      const torch::Tensor p = log_dist.exp();
      const torch::Tensor finite = scored.mask[k];
      const torch::Tensor safe_log = log_dist.masked_fill(finite.logical_not(), 0.0);
      const torch::Tensor entropy = -(p * safe_log).sum(1);  // [n]
      torch::Tensor kl = torch::zeros({n}, dev);
      if (want_ref) {
        const torch::Tensor ref_log = ref.log_dist[k].masked_fill(finite.logical_not(), 0.0);
        kl = (p * (safe_log - ref_log)).sum(1);
      }
      entropy_sum += entropy.sum().item<double>();
      kl_sum += kl.sum().item<double>();
      tokens += n;
      if (!need_loss) continue;
      std::vector<float> adv, old;
      for (size_t i : idx) {
        adv.push_back(static_cast<float>(batch[i].advantages[k]));
        if (config.objective == Objective::clipped_ratio)
          old.push_back(static_cast<float>(batch[i].old_logprobs[k]));
      }
      const torch::Tensor A = torch::tensor(adv, torch::kFloat32).to(m.device);
      torch::Tensor term;
      if (config.objective == Objective::clipped_ratio) {
        const torch::Tensor ratio = (scored.logp[k] - torch::tensor(old, torch::kFloat32).to(m.device)).exp();
        const torch::Tensor clipped_ratio = ratio.clamp(1 - config.clip_epsilon, 1 + config.clip_epsilon);
        term = -torch::min(ratio * A, clipped_ratio * A);
        clipped += (ratio - clipped_ratio).abs().gt(1e-6).sum().item<double>();
      } else {
        term = -A * scored.logp[k];
      }
      if (config.kl_coef != 0 && want_ref) term = term + config.kl_coef * kl;
      // Weights of each token in the aggregate.
      double w = 0;
      switch (config.aggregation) {
        case Aggregation::sequence_mean: w = 1.0 / (n_seq * static_cast<double>(K)); break;
        case Aggregation::token_mean: w = -1; break;  // normalized below by the total token count
        case Aggregation::constant: w = 1.0 / (n_seq * config.constant_length); break;
      }
      total = total + (w > 0 ? w * term.sum() : term.sum());
    }
  }
  BatchTerms out;
  if (need_loss && config.aggregation == Aggregation::token_mean) total = total / static_cast<double>(tokens);
  out.loss = total;
  out.stats.tokens = tokens;
  out.stats.kl = tokens ? kl_sum / static_cast<double>(tokens) : 0;
  out.stats.entropy = tokens ? entropy_sum / static_cast<double>(tokens) : 0;
  out.stats.clip_fraction = tokens ? clipped / static_cast<double>(tokens) : 0;
  out.stats.loss = total.item<double>();
  return out;
}

UpdateStats SchedulePolicy::update(const std::vector<TrainItem>& batch, const UpdateConfig& config) {
  Impl& m = *impl_;
  KBRL_CHECK_INPUT(config.temperature > 0, "update: temperature must be > 0 (got {})", config.temperature);
  m.optimizer->zero_grad();
  BatchTerms terms = m.batch_terms(batch, config, true);
  terms.loss.backward();
  const auto params = m.trainable();
  double norm2 = 0;
  for (const auto& p : params)
    if (p.grad().defined()) norm2 += p.grad().pow(2).sum().item<double>();
  terms.stats.grad_norm = std::sqrt(norm2);
  if (m.optimizer_config.max_grad_norm > 0)
    torch::nn::utils::clip_grad_norm_(params, m.optimizer_config.max_grad_norm);
  m.optimizer->step();
  return terms.stats;
}

UpdateStats SchedulePolicy::measure(const std::vector<TrainItem>& batch, double temperature) {
  torch::NoGradGuard no_grad;
  UpdateConfig c;
  c.temperature = temperature;
  return impl_->batch_terms(batch, c, false).stats;
}

int64_t SchedulePolicy::parameter_count(bool trainable_only) const {
  int64_t base = 0, adapter = 0;
  for (const auto& [name, t] : impl_->base) base += t.numel();
  for (const auto& [name, l] : impl_->lora) adapter += l.a.numel() + l.b.numel();
  if (!trainable_only) return base + adapter;
  return impl_->lora.empty() ? base : adapter;
}

namespace {

void write_meta(torch::serialize::OutputArchive& a, const ScheduleNetConfig& c) {
  a.write("meta.sizes", torch::tensor(std::vector<int64_t>{c.hidden, c.embed, c.value_buckets, c.knob_buckets}));
}

void check_meta(torch::serialize::InputArchive& a, const ScheduleNetConfig& c, const std::filesystem::path& file) {
  torch::Tensor sizes;
  a.read("meta.sizes", sizes);
  const std::vector<int64_t> want = {c.hidden, c.embed, c.value_buckets, c.knob_buckets};
  const auto got = sizes.to(torch::kInt64).contiguous();
  KBRL_CHECK_INPUT(got.numel() == 4 && std::equal(want.begin(), want.end(), got.data_ptr<int64_t>()),
                   "{}: the checkpoint's network sizes (hidden, embed, value and knob buckets) differ "
                   "from this policy's ({}, {}, {}, {})",
                   file.string(), c.hidden, c.embed, c.value_buckets, c.knob_buckets);
}

template <class F>
void guarded_load(const std::filesystem::path& file, F&& body) {
  KBRL_CHECK_INPUT(std::filesystem::exists(file), "checkpoint {} does not exist", file.string());
  try {
    body();
  } catch (const c10::Error& e) {
    throw InputError(fmt::format("{}: not a schedule-policy checkpoint ({})", file.string(),
                                 e.what_without_backtrace()));
  }
}

}  // namespace

void SchedulePolicy::save_base(const std::filesystem::path& file) const {
  torch::serialize::OutputArchive a;
  write_meta(a, impl_->config);
  for (const auto& [name, t] : impl_->base) a.write("base." + name, t.detach().to(torch::kCPU));
  a.save_to(file.string());
}

void SchedulePolicy::load_base(const std::filesystem::path& file) {
  guarded_load(file, [&] {
    torch::serialize::InputArchive a;
    a.load_from(file.string());
    check_meta(a, impl_->config, file);
    torch::NoGradGuard no_grad;
    for (auto& [name, t] : impl_->base) {
      torch::Tensor v;
      a.read("base." + name, v);
      t.copy_(v.to(t.device()));
    }
  });
  impl_->rebuild_optimizer();
}

void SchedulePolicy::save_adapter(const std::filesystem::path& file) const {
  KBRL_CHECK_INPUT(has_adapter(), "save_adapter: the policy has no adapter");
  torch::serialize::OutputArchive a;
  write_meta(a, impl_->config);
  a.write("lora.rank", torch::tensor(std::vector<int64_t>{impl_->lora_config.rank}));
  a.write("lora.alpha", torch::tensor(std::vector<double>{impl_->lora_config.alpha}));
  for (const auto& [name, l] : impl_->lora) {
    a.write("lora." + name + ".a", l.a.detach().to(torch::kCPU));
    a.write("lora." + name + ".b", l.b.detach().to(torch::kCPU));
  }
  a.save_to(file.string());
}

void SchedulePolicy::load_adapter(const std::filesystem::path& file) {
  Impl& m = *impl_;
  guarded_load(file, [&] {
    torch::serialize::InputArchive a;
    a.load_from(file.string());
    check_meta(a, m.config, file);
    torch::Tensor rank, alpha;
    a.read("lora.rank", rank);
    a.read("lora.alpha", alpha);
    m.lora_config.rank = static_cast<int>(rank.item<int64_t>());
    m.lora_config.alpha = alpha.item<double>();
    m.lora.clear();
    for (const char* name : kAdapted) {
      Lora l;
      a.read(std::string("lora.") + name + ".a", l.a);
      a.read(std::string("lora.") + name + ".b", l.b);
      l.a = l.a.to(m.device).set_requires_grad(true);
      l.b = l.b.to(m.device).set_requires_grad(true);
      m.lora[name] = l;
    }
  });
  m.rebuild_optimizer();
}

}  // namespace kbrl
