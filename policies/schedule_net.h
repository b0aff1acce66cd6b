#pragma once
// The schedule policy's network (internal to policies/): parameters, LoRA adapters, the per-task
// decoding tables and teacher-forced scoring, shared by the translation units that implement
// SchedulePolicy (schedule_policy.cpp: sampling and adapters; schedule_policy_update.cpp: the loss
// and the optimizer step; schedule_policy_checkpoint.cpp: checkpoints). Includes libtorch.
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "schedule_policy.h"
#include "task_features.h"

namespace kbrl {
namespace schedule_net {

inline constexpr int kContextFeatures = 5;  // has_feedback, compiled, correct, log2 speedup / 3, has_demo
inline constexpr int kIndexEmbeddings = 32;  // a value's position within its knob (breaks hash ties)
inline constexpr const char* kAdapted[] = {"L1", "L2", "L3", "L4"};

inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// A tensor of `shape` with entries uniform in [-bound, bound) from splitmix64(state): the same
/// numbers with every libtorch and on every device.
inline torch::Tensor uniform_tensor(std::vector<int64_t> shape, double bound, uint64_t& state) {
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

}  // namespace schedule_net

using schedule_net::BatchTerms;
using schedule_net::fnv1a;
using schedule_net::kAdapted;
using schedule_net::kContextFeatures;
using schedule_net::kIndexEmbeddings;
using schedule_net::Lora;
using schedule_net::TaskTables;
using schedule_net::uniform_tensor;

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
  /// Replaces the adapter with one read from an archive (schedule_policy_checkpoint.cpp); throws
  /// InputError naming `source` when the archive is from a network of other sizes.
  void read_adapter(torch::serialize::InputArchive& a, const std::filesystem::path& source);

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

}  // namespace kbrl
