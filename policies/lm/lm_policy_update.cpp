// LmPolicy's optimizer step, measurements and checkpoints (lm_policy.h).
#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>

#include <kbrl/error.h>

#include "data_parallel.h"
#include "lm_policy_impl.h"
#include "micro_batches.h"
#include "update_memory.h"
#include "sequence_scores.h"

namespace kbrl::lm {
namespace {

// The batch's passes (micro_batches.h): `visit(pass)` once per pass, each prompt built once.
template <class Visit>
void for_each_micro_batch(LmPolicy& policy, const std::vector<TrainItem>& batch, const Visit& visit) {
  const int size = policy.options().micro_batch > 0 ? policy.options().micro_batch
                   : policy.options().model_options.device == "cpu" ? 8
                                                                    : 32;
  std::map<std::pair<int, int>, size_t> index;  // (task, scale) -> prompt
  std::vector<std::vector<int>> prompts;
  std::vector<size_t> prompt_of, lengths;
  for (const TrainItem& item : batch) {
    const auto [it, added] = index.try_emplace({item.task.id, static_cast<int>(item.task.scale)}, prompts.size());
    if (added) prompts.push_back(policy.prompt_tokens(item.task, policy.options().prompt));
    prompt_of.push_back(it->second);
    lengths.push_back(item.tokens.size());
  }
  const std::string& pool = policy.options().pool;
  const bool pooled = pool == "on" || (pool.empty() && policy.options().model_options.device != "cpu");
  for (const MicroBatch& m : plan_micro_batches(prompts, prompt_of, lengths, static_cast<size_t>(size), pooled))
    visit(m);
}

/// A row's tokens: its tail (the rest of its prompt), then its completion.
std::vector<int> row_tokens(const std::vector<int>& tail, const std::vector<int>& completion) {
  std::vector<int> row = tail;
  row.insert(row.end(), completion.begin(), completion.end());
  return row;
}

/// A row's per-token values: 0 over its tail (context, never scored), then the completion's.
std::vector<double> after_tail(const std::vector<int>& tail, const std::vector<double>& values) {
  std::vector<double> row(tail.size(), 0.0);
  row.insert(row.end(), values.begin(), values.end());
  return row;
}

torch::Tensor padded(const std::vector<std::vector<double>>& rows, int64_t C, torch::Device device) {
  std::vector<float> v(rows.size() * static_cast<size_t>(C), 0.0f);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size() && static_cast<int64_t>(j) < C; ++j) v[i * C + j] = static_cast<float>(rows[i][j]);
  return torch::from_blob(v.data(), {static_cast<int64_t>(rows.size()), C}, torch::kFloat32).to(device).clone();
}

/// The tensors' gradients as one float32 vector (zeros where a tensor has none).
torch::Tensor flat_gradient(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> parts;
  for (const torch::Tensor& p : params)
    parts.push_back(p.grad().defined() ? p.grad().to(torch::kFloat32).flatten() : torch::zeros({p.numel()}, p.options().dtype(torch::kFloat32)));
  return parts.empty() ? torch::Tensor() : torch::cat(parts);
}

}  // namespace

void LmPolicy::set_data_parallel(std::shared_ptr<DataParallelGroup> group) {
  impl_->group = std::move(group);
  if (!impl_->group || impl_->group->size() == 1) return;
  torch::NoGradGuard no_grad;
  for (torch::Tensor& p : impl_->trainable()) {  // rank 0's adapter everywhere
    std::vector<torch::Tensor> one = {p.detach()};
    impl_->group->broadcast(one);
  }
}

std::vector<float> LmPolicy::last_gradient() const {
  const torch::Tensor flat = flat_gradient(impl_->trainable());
  if (!flat.defined()) return {};
  const torch::Tensor cpu = flat.to(torch::kCPU).contiguous();
  return std::vector<float>(cpu.data_ptr<float>(), cpu.data_ptr<float>() + cpu.numel());
}

UpdateStats LmPolicy::update(const std::vector<TrainItem>& batch, const UpdateConfig& config) {
  KBRL_CHECK_INPUT(impl_->lora.has_value() && impl_->optimizer,
                   "update: the language-model policy trains LoRA adapters only (add_adapter first)");
  KBRL_CHECK_INPUT(config.temperature > 0, "update: temperature must be > 0 (got {})", config.temperature);
  UpdateStats stats;
  if (batch.empty()) return stats;
  int64_t total_tokens = 0;
  for (const TrainItem& item : batch) {
    KBRL_CHECK_INPUT(item.advantages.size() == item.tokens.size(),
                     "update: a sample of task {} has {} tokens and {} advantages", item.task.id, item.tokens.size(),
                     item.advantages.size());
    KBRL_CHECK_INPUT(item.old_logprobs.empty() || item.old_logprobs.size() == item.tokens.size(),
                     "update: a sample of task {} has {} tokens and {} old log-probs", item.task.id,
                     item.tokens.size(), item.old_logprobs.size());
    total_tokens += static_cast<int64_t>(item.tokens.size());
  }
  const double sequences = static_cast<double>(batch.size());
  LlamaNet& net = impl_->model.net();
  const torch::Device dev = net.device();
  impl_->optimizer->zero_grad();
  // Data parallel: this rank's completions (weights below still divide by the whole batch's counts).
  const DataParallelGroup* group = impl_->group && impl_->group->size() > 1 ? impl_->group.get() : nullptr;
  std::vector<TrainItem> share;
  if (group)
    for (size_t i = static_cast<size_t>(group->rank()); i < batch.size(); i += static_cast<size_t>(group->size()))
      share.push_back(batch[i]);
  const std::vector<TrainItem>& mine = group ? share : batch;
  // The sums of loss, entropy, KL and clipped tokens stay on the device (float64, added in the host's
  // order) and are read once: a read per micro-batch would wait for its backward pass.
  torch::Tensor sums = torch::zeros({4}, torch::TensorOptions().dtype(torch::kFloat64).device(dev));
  const auto add = [&](int64_t which, const torch::Tensor& v) { sums[which].add_(v.detach().to(torch::kFloat64)); };
  for_each_micro_batch(*this, mine, [&](const MicroBatch& m) {
    const std::vector<int>& prompt = m.prompt;
    std::vector<std::vector<int>> tokens;
    std::vector<std::vector<double>> adv, old, weights;
    std::vector<size_t> context;  // per row: its tail, never scored
    std::vector<double> has_old;   // per row: 1 where the item carries its sampling log-probs
    int64_t C = 0;
    for (size_t r = 0; r < m.items.size(); ++r) {
      const TrainItem& item = mine[m.items[r]];
      const std::vector<int>& tail = m.tails[r];
      tokens.push_back(row_tokens(tail, item.tokens));
      context.push_back(tail.size());
      adv.push_back(after_tail(tail, item.advantages));
      has_old.push_back(item.old_logprobs.empty() ? 0.0 : 1.0);
      old.push_back(after_tail(tail, item.old_logprobs));
      const double len = static_cast<double>(std::max<size_t>(item.tokens.size(), 1));
      const double w = config.aggregation == Aggregation::sequence_mean ? 1.0 / (sequences * len)
                       : config.aggregation == Aggregation::token_mean  ? 1.0 / std::max<double>(total_tokens, 1)
                                                                        : 1.0 / (sequences * config.constant_length);
      weights.push_back(after_tail(tail, std::vector<double>(item.tokens.size(), w)));
      C = std::max<int64_t>(C, static_cast<int64_t>(tokens.back().size()));
    }
    if (C == 0) return;
    if (options().checkpoint == "auto") {  // checkpointing only where the activations would not fit
      const int64_t need = activation_bytes(net.config(), static_cast<int64_t>(m.items.size()), C,
                                            static_cast<int64_t>(prompt.size()), c10::elementSize(net.dtype()));
      net.set_checkpointing(dev.is_cuda() && static_cast<double>(need) > 0.8 * static_cast<double>(device_bytes_available(dev)));
    }
    torch::Tensor ref;
    if (config.kl_coef > 0) {
      torch::NoGradGuard no_grad;
      net.set_adapters_on(false);
      ref = score_sequences(net, prompt, tokens, config.temperature, false, context).logprobs;
      net.set_adapters_on(true);
    }
    const SequenceScores s = score_sequences(net, prompt, tokens, config.temperature, true, context);
    const torch::Tensor A = padded(adv, C, dev), W = padded(weights, C, dev);
    const torch::Tensor& mask = s.mask;  // the completions' tokens (not the tails' or padding)
    torch::Tensor term;
    if (config.objective == Objective::likelihood) {
      term = A * s.logprobs;
    } else {
      // Rows without sampling log-probs compare with the current ones (ratio 1).
      const torch::Tensor row_has_old =
          torch::tensor(has_old, torch::kFloat64).to(torch::kFloat32).to(dev).unsqueeze(1);
      const torch::Tensor old_lp = torch::where(row_has_old > 0, padded(old, C, dev), s.logprobs.detach());
      const torch::Tensor ratio = torch::exp(s.logprobs - old_lp);
      const double eps = config.clip_epsilon;
      term = torch::min(ratio * A, ratio.clamp(1 - eps, 1 + eps) * A);
      add(3, ((ratio - 1).abs().gt(eps).to(torch::kFloat32) * mask).sum());
    }
    torch::Tensor loss = -(term * W * mask).sum();
    if (config.entropy_coef != 0) loss = loss - config.entropy_coef * (s.entropy * W).sum();  // W is 0 off completions
    if (ref.defined()) {
      const torch::Tensor d = ref - s.logprobs;  // k3 estimator of KL(policy || reference) per token
      const torch::Tensor kl = (torch::exp(d) - d - 1) * mask;
      loss = loss + config.kl_coef * (kl * W).sum();
      add(2, kl.sum());
    }
    loss.backward();
    add(0, loss);
    add(1, (s.entropy.detach() * mask).sum());
  });
  const auto params = impl_->trainable();
  if (group) {  // the gradients and the statistics summed over the group
    std::vector<torch::Tensor> flat = {flat_gradient(params)};
    impl_->group->sum(flat);
    int64_t at = 0;
    for (const torch::Tensor& p : params) {
      const torch::Tensor summed = flat[0].slice(0, at, at + p.numel()).view_as(p);
      torch::Tensor shared = p;  // the same parameter: its gradient is p's (not a view: zero_grad detaches it)
      if (shared.grad().defined())
        shared.mutable_grad().copy_(summed);
      else
        shared.mutable_grad() = summed.to(p.dtype()).clone();
      at += p.numel();
    }
    std::vector<torch::Tensor> summed = {sums};
    impl_->group->sum(summed);
    sums = summed[0];
  }
  const torch::Tensor host_sums = sums.to(torch::kCPU);
  const double loss_sum = host_sums[0].item<double>(), entropy_sum = host_sums[1].item<double>(),
               kl_sum = host_sums[2].item<double>(), clipped = host_sums[3].item<double>();
  std::vector<torch::Tensor> squares{torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(dev))};
  for (const torch::Tensor& p : params)  // a zero, then each gradient's sum of squares: one copy, added in order
    if (p.grad().defined()) squares.push_back(p.grad().pow(2).sum().to(torch::kFloat64));
  const torch::Tensor host = torch::stack(squares).cpu();
  stats.grad_norm = std::sqrt(std::accumulate(host.data_ptr<double>(), host.data_ptr<double>() + host.numel(), 0.0));
  if (impl_->optimizer_config.max_grad_norm > 0)
    torch::nn::utils::clip_grad_norm_(params, impl_->optimizer_config.max_grad_norm);
  impl_->optimizer->step();
  stats.loss = loss_sum;
  stats.tokens = total_tokens;
  stats.entropy = total_tokens ? entropy_sum / total_tokens : 0;
  stats.kl = config.kl_coef <= 0 ? std::numeric_limits<double>::quiet_NaN()  // no reference pass: not measured
                                 : (total_tokens ? kl_sum / total_tokens : 0);
  stats.clip_fraction = total_tokens ? clipped / total_tokens : 0;
  return stats;
}

UpdateStats LmPolicy::measure(const std::vector<TrainItem>& batch, double temperature) {
  torch::NoGradGuard no_grad;
  UpdateStats stats;
  LlamaNet& net = impl_->model.net();
  double entropy_sum = 0, kl_sum = 0;
  for_each_micro_batch(*this, batch, [&](const MicroBatch& m) {
    std::vector<std::vector<int>> tokens;
    std::vector<size_t> context;
    for (size_t r = 0; r < m.items.size(); ++r) {
      tokens.push_back(row_tokens(m.tails[r], batch[m.items[r]].tokens));
      context.push_back(m.tails[r].size());
    }
    const SequenceScores s = score_sequences(net, m.prompt, tokens, temperature, true, context);
    const torch::Tensor& mask = s.mask;
    entropy_sum += (s.entropy * mask).sum().item<double>();
    stats.tokens += static_cast<int64_t>(mask.sum().item<double>());
    if (impl_->lora) {
      net.set_adapters_on(false);
      const torch::Tensor ref = score_sequences(net, m.prompt, tokens, temperature, false, context).logprobs;
      net.set_adapters_on(true);
      const torch::Tensor d = ref - s.logprobs;
      kl_sum += ((torch::exp(d) - d - 1) * mask).sum().item<double>();
    }
  });
  stats.entropy = stats.tokens ? entropy_sum / stats.tokens : 0;
  stats.kl = stats.tokens ? kl_sum / stats.tokens : 0;
  return stats;
}

// ---- checkpoints ----

namespace {

void write_sizes(torch::serialize::OutputArchive& a, const LlamaConfig& c) {
  a.write("meta.sizes", torch::tensor(std::vector<int64_t>{c.vocab_size, c.hidden, c.intermediate, c.layers, c.heads,
                                                           c.kv_heads, c.head_dim}));
}

void check_sizes(torch::serialize::InputArchive& a, const LlamaConfig& c, const std::string& source) {
  torch::Tensor sizes;
  KBRL_CHECK_INPUT(a.try_read("meta.sizes", sizes), "{} is not a kbrl language-model checkpoint (no meta.sizes)",
                   source);
  const std::vector<int64_t> want{c.vocab_size, c.hidden, c.intermediate, c.layers, c.heads, c.kv_heads, c.head_dim};
  const torch::Tensor s = sizes.to(torch::kInt64).contiguous();
  std::vector<int64_t> got(s.data_ptr<int64_t>(), s.data_ptr<int64_t>() + s.numel());
  KBRL_CHECK_INPUT(got == want,
                   "{} was written for another model shape (vocab, hidden, intermediate, layers, heads, kv heads, "
                   "head dim: [{}], this model: [{}])",
                   source, fmt::join(got, ", "), fmt::join(want, ", "));
}

}  // namespace

void LmPolicy::save_base(const std::filesystem::path& file) const {
  torch::serialize::OutputArchive a;
  write_sizes(a, impl_->model.config());
  for (auto& [name, t] : impl_->model.net().named_weights()) a.write("base." + name, t->detach().to(torch::kCPU));
  a.save_to(file.string());
}

void LmPolicy::load_base(const std::filesystem::path& file) {
  KBRL_CHECK_INPUT(std::filesystem::is_regular_file(file), "checkpoint {} does not exist", file.string());
  torch::serialize::InputArchive a;
  a.load_from(file.string());
  check_sizes(a, impl_->model.config(), file.string());
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : impl_->model.net().named_weights()) {
    torch::Tensor v;
    KBRL_CHECK_INPUT(a.try_read("base." + name, v), "{} has no weight {}", file.string(), name);
    KBRL_CHECK_INPUT(v.sizes() == t->sizes(), "{}: weight {} has another shape", file.string(), name);
    t->copy_(v.to(t->device(), t->scalar_type()));
  }
  remove_adapter();
}

namespace {

/// A sample of the base model's embedding (4,096 entries at fixed strided positions, float32): an
/// adapter keeps the sample of the model it was trained on, and loads only on a model whose sample
/// correlates with it (the same weights in any dtype or quantization correlate near 1, another
/// model's near 0).
constexpr int64_t kBaseSample = 4096;
constexpr double kBaseMinCorrelation = 0.9;

torch::Tensor base_sample(LmPolicy::Impl& impl) {
  const torch::Tensor flat = impl.model.net().embedding().detach().reshape({-1});
  const int64_t stride = std::max<int64_t>(1, flat.numel() / kBaseSample);
  return flat.slice(0, 0, stride * std::min(kBaseSample, flat.numel()), stride).to(torch::kCPU, torch::kFloat64);
}

void check_base(torch::serialize::InputArchive& a, LmPolicy::Impl& impl, const std::string& source) {
  torch::Tensor theirs;
  if (!a.try_read("meta.base_sample", theirs)) return;  // an adapter from before the sample was kept
  const torch::Tensor ours = base_sample(impl);
  KBRL_CHECK_INPUT(theirs.numel() == ours.numel(), "{} was made for another base model (its embedding sample has {} "
                   "entries, this model's {})", source, theirs.numel(), ours.numel());
  const torch::Tensor x = theirs.to(torch::kFloat64) - theirs.to(torch::kFloat64).mean(), y = ours - ours.mean();
  const double r = (x * y).sum().item<double>() / std::sqrt((x * x).sum().item<double>() * (y * y).sum().item<double>() + 1e-300);
  KBRL_CHECK_INPUT(r >= kBaseMinCorrelation,
                   "{} was made for another base model: the embedding it was trained on correlates r = {:.3f} with this "
                   "model's (the same shapes, other weights; load it on the model it was trained on)",
                   source, r);
}

void write_adapter(torch::serialize::OutputArchive& a, LmPolicy::Impl& impl, const std::vector<std::string>& targets) {
  write_sizes(a, impl.model.config());
  a.write("meta.base_sample", base_sample(impl));
  a.write("lora.rank", torch::tensor(std::vector<int64_t>{impl.lora->rank}));
  a.write("lora.alpha", torch::tensor(std::vector<double>{impl.lora->alpha}));
  auto& layers = impl.model.net().layers();
  for (size_t l = 0; l < layers.size(); ++l)
    for (auto [name, proj] : layers[l].projections())
      if (proj->a.defined()) {
        a.write(fmt::format("lora.{}.{}.a", l, name), proj->a.detach().to(torch::kCPU));
        a.write(fmt::format("lora.{}.{}.b", l, name), proj->b.detach().to(torch::kCPU));
      }
}

void read_adapter(torch::serialize::InputArchive& a, LmPolicy::Impl& impl, const std::string& source) {
  check_sizes(a, impl.model.config(), source);
  check_base(a, impl, source);
  torch::Tensor rank, alpha;
  KBRL_CHECK_INPUT(a.try_read("lora.rank", rank) && a.try_read("lora.alpha", alpha), "{} is not a LoRA adapter", source);
  LoraConfig c;
  c.rank = static_cast<int>(rank.item<int64_t>());
  c.alpha = alpha.item<double>();
  const torch::Device dev = impl.model.net().device();
  auto& layers = impl.model.net().layers();
  int found = 0;
  for (size_t l = 0; l < layers.size(); ++l)
    for (auto [name, proj] : layers[l].projections()) {
      torch::Tensor ta, tb;
      proj->a = torch::Tensor();
      proj->b = torch::Tensor();
      if (!a.try_read(fmt::format("lora.{}.{}.a", l, name), ta)) continue;
      KBRL_CHECK_INPUT(a.try_read(fmt::format("lora.{}.{}.b", l, name), tb), "{}: lora.{}.{} has no B", source, l, name);
      KBRL_CHECK_INPUT(ta.size(0) == c.rank && ta.size(1) == proj->weight.size(1) && tb.size(0) == proj->weight.size(0),
                       "{}: adapter of layer {} {} does not fit the model", source, l, name);
      proj->a = ta.to(dev, torch::kFloat32).clone().requires_grad_(true);
      proj->b = tb.to(dev, torch::kFloat32).clone().requires_grad_(true);
      proj->scale = c.alpha / c.rank;
      ++found;
    }
  KBRL_CHECK_INPUT(found > 0, "{}: the adapter adapts no projection", source);
  impl.lora = c;
  impl.rebuild_optimizer();
}
}  // namespace

void LmPolicy::save_adapter(const std::filesystem::path& file) const {
  KBRL_CHECK_INPUT(impl_->lora.has_value(), "save_adapter: the policy has no adapter");
  torch::serialize::OutputArchive a;
  write_adapter(a, *impl_, options_.lora_targets);
  a.save_to(file.string());
}

void LmPolicy::load_adapter(const std::filesystem::path& file) {
  KBRL_CHECK_INPUT(std::filesystem::is_regular_file(file), "adapter {} does not exist", file.string());
  torch::serialize::InputArchive a;
  a.load_from(file.string());
  read_adapter(a, *impl_, file.string());
}

std::string LmPolicy::adapter_state() const {
  KBRL_CHECK_INPUT(impl_->lora.has_value(), "adapter_state: the policy has no adapter");
  torch::serialize::OutputArchive a;
  write_adapter(a, *impl_, options_.lora_targets);
  std::ostringstream out;
  a.save_to(out);
  return out.str();
}

void LmPolicy::restore_adapter(const std::string& state) {
  std::istringstream in(state);
  torch::serialize::InputArchive a;
  a.load_from(in);
  read_adapter(a, *impl_, "the adapter state");
}

}  // namespace kbrl::lm
