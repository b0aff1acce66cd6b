// The schedule policy: construction, sampling, scoring and LoRA adapters (the network is in
// schedule_net.h; updates and checkpoints have their own translation units).
#include "schedule_net.h"

namespace kbrl {

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
  for (int i = 0; i < n; ++i) states.push_back(derive_seed(seed, {task.id, i}));
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

int64_t SchedulePolicy::parameter_count(bool trainable_only) const {
  int64_t base = 0, adapter = 0;
  for (const auto& [name, t] : impl_->base) base += t.numel();
  for (const auto& [name, l] : impl_->lora) adapter += l.a.numel() + l.b.numel();
  if (!trainable_only) return base + adapter;
  return impl_->lora.empty() ? base : adapter;
}

}  // namespace kbrl
