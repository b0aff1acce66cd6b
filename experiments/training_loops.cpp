#include "training_loops.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <reference/task_registry.h>

#include "schemas.h"

namespace kbrl {
namespace {

/// One update (none for an empty batch); a loss, gradient or KL that is not finite ends the run
/// (the policy's weights are no longer usable), before the step's row is written, so the CSV holds
/// only sound rows.
UpdateStats finite_update(PolicyUpdates& policy, const std::vector<TrainItem>& batch, const UpdateConfig& update,
                          const std::string& where) {
  if (batch.empty()) return {};  // nothing judged to learn from (every rollout a harness_error)
  const UpdateStats s = policy.update(batch, update);
  if (!std::isfinite(s.loss) || !std::isfinite(s.grad_norm) || std::isinf(s.kl))  // a NaN KL: not measured
    throw Error(fmt::format("{}: the update's loss is {} (gradient norm {}, KL {}): training diverged; the rows "
                            "written so far are kept. Lower the learning rate and run again",
                            where, s.loss, s.grad_norm, s.kl));
  return s;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// A per-(run seed, step, task) sampling seed.
uint64_t sample_seed(uint64_t seed, int step, int task_id) { return derive_seed(seed, {task_id, step}); }
constexpr uint64_t kFreshSeedSalt = 0xF5E5'5EED'0F5EULL;  // TTT's fresh samples: seeds apart from the trained ones

void check_tasks(const std::vector<int>& tasks, const char* loop) {
  KBRL_CHECK_INPUT(!tasks.empty(), "{}: no tasks", loop);
  for (int id : tasks) task_spec(id, Scale::small);  // InputError for an unknown id
}

/// Samples and evaluates `n` rollouts for a task, adding to `budget`.
std::vector<Rollout> roll(Policy& policy, Environment& env, const TaskSpec& task, int n,
                          double temperature, uint64_t seed, Budget& budget) {
  const std::vector<Sample> samples = policy.sample(task, n, temperature, seed);
  const double before = env.evaluator_seconds();
  std::vector<Rollout> rollouts = env.evaluate(task, samples, policy.name());
  budget.evaluator_seconds += env.evaluator_seconds() - before;
  budget.rollouts += static_cast<int64_t>(rollouts.size());
  for (const Rollout& r : rollouts) {
    budget.tokens += static_cast<int64_t>(r.sample.tokens.size());
    budget.compile_seconds += r.compile_seconds;
  }
  return rollouts;
}

/// KL to the adapter-free start and entropy of the policy on rollouts it sampled (no update).
UpdateStats measure_rollouts(PolicyUpdates& policy, const std::vector<Rollout>& rollouts, Scale scale,
                             double temperature) {
  std::vector<TrainItem> items;
  for (const Rollout& r : rollouts) items.push_back({task_spec(r.sample.task_id, scale), r.sample.tokens, {}, {}});
  return policy.measure(items, temperature);
}

}  // namespace

Budget& Budget::operator+=(const Budget& o) {
  rollouts += o.rollouts;
  tokens += o.tokens;
  teacher_tokens += o.teacher_tokens;
  compile_seconds += o.compile_seconds;
  evaluator_seconds += o.evaluator_seconds;
  wall_seconds += o.wall_seconds;
  return *this;
}

StepMetrics score_rollouts(const std::vector<Rollout>& rollouts) {
  StepMetrics m;
  m.rollouts = static_cast<int64_t>(rollouts.size());
  if (rollouts.empty()) return m;
  double compiled = 0, correct = 0, fast = 0, sig_fast = 0, speedup = 0, reward = 0, parsed = 0;
  for (const Rollout& r : rollouts) {
    parsed += r.outcome() != Outcome::format_error;
    compiled += r.compiled();
    correct += r.correct();
    fast += r.fast();
    sig_fast += r.significantly_fast();
    if (r.correct()) speedup += r.speedup();
    reward += r.reward;
  }
  const double n = static_cast<double>(rollouts.size());
  m.compiled_rate = compiled / n;
  m.format_rate = parsed / n;
  m.correct_rate = correct / n;
  m.fast_1 = fast / n;
  m.sig_fast_1 = sig_fast / n;
  m.mean_speedup_correct = correct > 0 ? speedup / correct : 0.0;
  m.mean_reward = reward / n;
  return m;
}

std::vector<std::string> training_step_row(const std::string& run, const StepMetrics& m) {
  return {run,
          cell(m.step),
          cell(m.tasks),
          cell(m.rollouts),
          cell(m.compiled_rate),
          cell(m.correct_rate),
          cell(m.fast_1),
          cell(m.sig_fast_1),
          cell(m.mean_speedup_correct),
          cell(m.mean_reward),
          cell(m.update.kl),
          cell(m.update.entropy),
          cell(m.update.loss),
          cell(m.update.grad_norm),
          cell(m.update.clip_fraction),
          cell(m.budget.tokens),
          cell(m.budget.teacher_tokens),
          cell(m.budget.compile_seconds),
          cell(m.budget.evaluator_seconds),
          cell(m.budget.wall_seconds),
          cell(m.format_rate)};
}

std::vector<StepMetrics> run_rlvr(TrainablePolicy& policy, Environment& env, const RlvrConfig& c,
                                  CsvTable* steps_csv, const std::filesystem::path& checkpoint_dir,
                                  const Progress& progress, CsvTable* eval_csv) {
  check_tasks(c.tasks, "rlvr");
  KBRL_CHECK_INPUT(c.tasks_per_batch > 0 && c.group_size > 1 && c.steps >= 0,
                   "rlvr: tasks_per_batch {} must be > 0, group_size {} > 1, steps {} >= 0",
                   c.tasks_per_batch, c.group_size, c.steps);
  KBRL_CHECK_INPUT(c.eval_every >= 0 && c.eval_k > 0, "rlvr: eval_every {} must be >= 0 and eval_k {} > 0",
                   c.eval_every, c.eval_k);
  KBRL_CHECK_INPUT(c.temperature > 0, "rlvr: temperature must be > 0 (got {})", c.temperature);
  policy.set_optimizer(c.optimizer);
  if (c.lora) policy.add_adapter(c.lora_config, c.seed);
  if (!checkpoint_dir.empty()) {
    std::filesystem::create_directories(checkpoint_dir);
    policy.save_base(checkpoint_dir / "base.pt");
  }
  UpdateConfig update = c.grpo.update;
  update.temperature = c.temperature;
  uint64_t order_state = c.seed ^ 0x0DDBA11ULL;
  std::vector<int> order;
  size_t next = 0;
  const auto evaluate_all_tasks = [&](int updates) {
    const auto start = Clock::now();
    Budget budget;
    std::vector<Rollout> all;
    for (int id : c.tasks) {
      const TaskSpec task = task_spec(id, c.scale);
      std::vector<Rollout> r = roll(policy, env, task, c.eval_k, c.temperature, sample_seed(c.eval_seed, 0, id), budget);
      all.insert(all.end(), r.begin(), r.end());
    }
    StepMetrics m = score_rollouts(all);
    m.step = updates;
    m.tasks = static_cast<int>(c.tasks.size());
    // No update here: the row's KL to the start and entropy are measured on these rollouts (loss,
    // gradient norm and clip fraction stay 0), as at TTT's last step.
    if (!all.empty()) m.update = measure_rollouts(policy, all, c.scale, c.temperature);
    budget.wall_seconds = seconds_since(start);
    m.budget = budget;
    if (eval_csv) eval_csv->row(training_step_row(c.run + "_eval", m));
    if (progress)
      progress(fmt::format("rlvr eval after {} updates: correct {:.3f} fast_1 {:.3f} sig_fast_1 {:.3f} reward {:.3f} "
                           "over {} rollouts ({:.1f} s)",
                           updates, m.correct_rate, m.fast_1, m.sig_fast_1, m.mean_reward, m.rollouts,
                           budget.wall_seconds));
  };
  if (c.eval_every > 0) evaluate_all_tasks(0);
  std::vector<StepMetrics> out;
  for (int step = 0; step < c.steps; ++step) {
    const auto start = Clock::now();
    Budget budget;
    std::vector<Rollout> all;
    std::vector<TrainItem> batch;
    for (int b = 0; b < c.tasks_per_batch; ++b) {
      if (next == order.size()) {
        order = c.tasks;
        shuffle(order, order_state);
        next = 0;
      }
      const TaskSpec task = task_spec(order[next++], c.scale);
      std::vector<Rollout> group =
          roll(policy, env, task, c.group_size, c.temperature, sample_seed(c.seed, step, task.id), budget);
      const std::vector<TrainItem> items = grpo_group_items(task, group, c.grpo.normalize_std);
      batch.insert(batch.end(), items.begin(), items.end());
      all.insert(all.end(), group.begin(), group.end());
    }
    StepMetrics m = score_rollouts(all);
    m.step = step;
    m.tasks = c.tasks_per_batch;
    m.update = finite_update(policy, batch, update, fmt::format("rlvr step {}", step));
    budget.wall_seconds = seconds_since(start);
    m.budget = budget;
    if (steps_csv) steps_csv->row(training_step_row(c.run, m));
    if (progress)
      progress(fmt::format("rlvr step {}/{}: correct {:.3f} fast_1 {:.3f} sig_fast_1 {:.3f} reward {:.3f} kl {:.4f} "
                           "entropy {:.3f} ({:.1f} s)",
                           step + 1, c.steps, m.correct_rate, m.fast_1, m.sig_fast_1, m.mean_reward, m.update.kl,
                           m.update.entropy, budget.wall_seconds));
    out.push_back(m);
    if (!checkpoint_dir.empty() && c.lora && c.checkpoint_every > 0 && (step + 1) % c.checkpoint_every == 0)
      policy.save_adapter(checkpoint_dir / fmt::format("adapter_step_{}.pt", step + 1));
    if (c.eval_every > 0 && ((step + 1) % c.eval_every == 0 || step + 1 == c.steps)) evaluate_all_tasks(step + 1);
  }
  if (!checkpoint_dir.empty() && c.lora) policy.save_adapter(checkpoint_dir / "final_adapter.pt");
  if (c.lora) policy.merge_adapter();
  if (!checkpoint_dir.empty()) policy.save_base(checkpoint_dir / "final.pt");
  return out;
}

TttResult run_ttt(TrainablePolicy& policy, Environment& env, const TttConfig& c, CsvTable* steps_csv,
                  CsvTable* task_csv, const std::filesystem::path& adapter_dir, const Progress& progress) {
  check_tasks(c.tasks, "ttt");
  KBRL_CHECK_INPUT(c.k > 0 && c.steps >= 0 && c.patience >= 0,
                   "ttt: k {} must be > 0, steps {} >= 0, patience {} >= 0", c.k, c.steps, c.patience);
  KBRL_CHECK_INPUT(c.temperature > 0, "ttt: temperature must be > 0 (got {})", c.temperature);
  KBRL_CHECK_INPUT(c.update != TttUpdate::sdpo || c.k >= 1, "ttt: sdpo needs k >= 1");
  policy.set_optimizer(c.optimizer);
  policy.add_adapter(c.lora_config, c.seed);
  if (!adapter_dir.empty()) std::filesystem::create_directories(adapter_dir);
  UpdateConfig update = c.grpo.update;
  update.temperature = c.temperature;
  std::vector<TaskSpec> tasks;
  for (int id : c.tasks) tasks.push_back(task_spec(id, c.scale));

  TttResult result;
  std::vector<double> scores;
  std::map<int, std::string> saved;  // step -> the adapter it was evaluated with (BoA restores one)
  for (int step = 0; step <= c.steps; ++step) {
    const auto start = Clock::now();
    Budget budget;
    saved[step] = policy.adapter_state();
    if (!adapter_dir.empty()) policy.save_adapter(adapter_dir / fmt::format("adapter_step_{}.pt", step));
    std::vector<Rollout> all;
    std::vector<TrainItem> batch;
    for (const TaskSpec& task : tasks) {
      std::vector<Rollout> group =
          roll(policy, env, task, c.k, c.temperature, sample_seed(c.seed, step, task.id), budget);
      StepMetrics tm = score_rollouts(group);
      double best = 0;
      for (const Rollout& r : group) best = std::max(best, r.correct() ? r.speedup() : 0.0);
      if (task_csv)
        task_csv->row({c.run, cell(step), cell(task.id), cell(tm.rollouts), cell(tm.correct_rate),
                       cell(tm.fast_1), cell(tm.sig_fast_1), cell(best), cell(tm.mean_speedup_correct)});
      if (step < c.steps) {
        std::vector<TrainItem> items;
        if (c.update == TttUpdate::grpo) {
          items = grpo_group_items(task, group, c.grpo.normalize_std);
        } else {
          items = sdpo_items(policy, task, judged_only(group), c.teacher, c.sdpo_beta, c.temperature,
                             &budget.teacher_tokens);
        }
        batch.insert(batch.end(), items.begin(), items.end());
      }
      all.insert(all.end(), group.begin(), group.end());
    }
    StepMetrics m = score_rollouts(all);
    m.step = step;
    m.tasks = static_cast<int>(tasks.size());
    scores.push_back(m.fast_1);
    double fresh_seconds = 0;
    if (c.fresh_k > 0) {  // drawn under this step's adapter, before its update; seeds of their own
      const auto fresh_start = Clock::now();
      std::vector<Rollout> fresh;
      Budget spent;
      for (const TaskSpec& task : tasks) {
        std::vector<Rollout> group = roll(policy, env, task, c.fresh_k, c.temperature,
                                          sample_seed(c.seed ^ kFreshSeedSalt, step, task.id), spent);
        fresh.insert(fresh.end(), group.begin(), group.end());
      }
      StepMetrics f = score_rollouts(fresh);
      f.step = step;
      f.tasks = m.tasks;
      fresh_seconds = seconds_since(fresh_start);
      spent.wall_seconds = fresh_seconds;
      f.budget = spent;
      result.budget += spent;  // the run's cost; the step's own budget stays its training's
      if (steps_csv) steps_csv->row(training_step_row(c.run + "_fresh", f));
      result.fresh.push_back(f);
      result.fresh_rollouts.push_back(std::move(fresh));
    }
    const BoaDecision so_far = best_of_adaptation(scores, c.patience);
    const bool stop = so_far.stop_step >= 0;
    if (step < c.steps && !stop) {
      m.update = finite_update(policy, batch, update, fmt::format("ttt {} step {}", c.run, step));
    } else {  // no update after the last evaluated step: still measure KL to the start and entropy
      m.update = measure_rollouts(policy, all, c.scale, c.temperature);
    }
    budget.wall_seconds = seconds_since(start) - fresh_seconds;
    m.budget = budget;
    result.budget += budget;
    if (steps_csv) steps_csv->row(training_step_row(c.run, m));
    if (progress)
      progress(fmt::format("ttt {} step {}/{}: correct {:.3f} fast_1 {:.3f} sig_fast_1 {:.3f} reward {:.3f} "
                           "kl {:.4f}{} ({:.1f} s)",
                           c.run, step, c.steps, m.correct_rate, m.fast_1, m.sig_fast_1, m.mean_reward, m.update.kl,
                           stop ? " (early stop)" : "", budget.wall_seconds));
    result.steps.push_back(m);
    result.rollouts.push_back(std::move(all));
    if (stop) break;
  }
  result.boa = best_of_adaptation(scores, c.patience);
  policy.restore_adapter(saved.at(result.boa.best_step));
  return result;
}

double mean_nll(Policy& policy, const std::vector<TrainItem>& items, double temperature) {
  std::map<std::pair<int, int>, std::vector<size_t>> by_task;
  for (size_t i = 0; i < items.size(); ++i)
    by_task[{items[i].task.id, static_cast<int>(items[i].task.scale)}].push_back(i);
  double nll = 0;
  int64_t tokens = 0;
  for (const auto& [key, idx] : by_task) {
    std::vector<std::vector<int>> seqs;
    for (size_t i : idx) seqs.push_back(items[i].tokens);
    for (const auto& row : policy.logprob(items[idx.front()].task, seqs, temperature))
      for (double lp : row) {
        nll -= lp;
        ++tokens;
      }
  }
  return tokens ? nll / static_cast<double>(tokens) : 0.0;
}

std::vector<SftEpoch> run_sft(TrainablePolicy& policy, const std::vector<TrainItem>& data,
                              const SftConfig& c, CsvTable* epochs_csv, const Progress& progress,
                              CsvTable* steps_csv) {
  KBRL_CHECK_INPUT(!data.empty(), "sft: no data");
  KBRL_CHECK_INPUT(c.epochs >= 0 && c.batch_size > 0, "sft: epochs {} must be >= 0 and batch_size {} > 0",
                   c.epochs, c.batch_size);
  KBRL_CHECK_INPUT(c.eval_every >= 1, "sft: eval_every {} must be >= 1", c.eval_every);
  policy.set_optimizer(c.optimizer);
  if (c.lora) policy.add_adapter(c.lora_config, c.seed);
  UpdateConfig update;
  update.objective = Objective::likelihood;
  update.aggregation = Aggregation::token_mean;
  update.temperature = c.temperature;
  std::vector<SftEpoch> out;
  const auto emit = [&](const SftEpoch& e) {
    if (epochs_csv)
      epochs_csv->row({cell(e.epoch), cell(static_cast<int64_t>(data.size())), cell(e.mean_loss),
                       cell(e.nll_per_token), cell(e.wall_seconds)});
    if (progress)
      progress(fmt::format("sft epoch {}/{}: loss {:.4f} nll/token {:.4f}", e.epoch, c.epochs,
                           e.mean_loss, e.nll_per_token));
    out.push_back(e);
  };
  emit({0, 0.0, mean_nll(policy, data, c.temperature), 0.0});
  const int64_t batches_per_epoch =
      (static_cast<int64_t>(data.size()) + c.batch_size - 1) / static_cast<int64_t>(c.batch_size);
  const int64_t last_step = batches_per_epoch * c.epochs;
  const auto step_row = [&](int64_t step, int epoch, const std::string& train_loss) {
    if (!steps_csv) return;
    const bool eval = !c.held_out.empty() && (step % c.eval_every == 0 || step == last_step);
    steps_csv->row({cell(step), cell(epoch), train_loss, eval ? cell(mean_nll(policy, c.held_out, c.temperature)) : "nan"});
  };
  step_row(0, 0, "nan");
  int64_t step = 0;
  std::vector<int> order(data.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  uint64_t state = c.seed ^ 0x5F75EEDULL;
  for (int epoch = 1; epoch <= c.epochs; ++epoch) {
    const auto start = Clock::now();
    shuffle(order, state);
    double loss = 0;
    int batches = 0;
    for (size_t b = 0; b < order.size(); b += static_cast<size_t>(c.batch_size)) {
      std::vector<TrainItem> batch;
      for (size_t i = b; i < std::min(order.size(), b + static_cast<size_t>(c.batch_size)); ++i)
        batch.push_back(data[static_cast<size_t>(order[i])]);
      const double batch_loss = finite_update(policy, batch, update, fmt::format("sft epoch {}", epoch)).loss;
      loss += batch_loss;
      ++batches;
      step_row(++step, epoch, cell(batch_loss));
    }
    emit({epoch, loss / std::max(1, batches), mean_nll(policy, data, c.temperature), seconds_since(start)});
  }
  if (c.lora && c.merge_adapter) policy.merge_adapter();
  return out;
}

}  // namespace kbrl
