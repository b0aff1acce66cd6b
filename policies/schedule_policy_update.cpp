// The schedule policy's loss (clipped ratio or likelihood, the aggregations, the KL to the
// adapter-free reference) and its optimizer step.
#include "schedule_net.h"

namespace kbrl {

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
      if (config.entropy_coef != 0) term = term - config.entropy_coef * entropy;
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

}  // namespace kbrl
