// base_policy (SFT warm start + RLVR: the self-improvement report 6.1, the surprisal report's
// Appendix B) and policy_sweep (the GRPO report's Table 3).
#include <cmath>

#include <fmt/format.h>

#include <experiments/algorithms.h>
#include <experiments/report_schemas.h>
#include <experiments/run_setup.h>
#include <experiments/schemas.h>
#include <policies/baseline_policies.h>
#include <policies/lm/lm_policy.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

#include "programs.h"

namespace kbrl {
namespace {

void base_policy(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  const std::vector<int> tasks = covered_only(b.train_tasks.empty() ? split("train").ids : b.train_tasks, ctx.progress);
  const auto checkpoints = ctx.dir / "checkpoints";
  std::filesystem::create_directories(checkpoints);

  // SFT warm start: the schedule policy learns from the heuristic policy (expert configurations plus
  // noise); a language model learns a LoRA adapter (merged) on the known-good kernels written as text,
  // unless its spec names an adapter, which is then the warm start.
  std::unique_ptr<TrainablePolicy> policy = ctx.new_policy();
  std::vector<TrainItem> data;
  SftConfig sft;
  sft.epochs = b.sft_epochs;
  sft.optimizer.learning_rate = b.sft_learning_rate;
  if (ctx.language_model()) {
    const lm::LmOptions spec = lm::parse_lm_spec(ctx.policy_spec);
    std::vector<int> used;
    data = known_good_items(tasks, ctx.scale, *policy, spec.prompt.style, &used);
    if (!spec.adapter.empty()) {
      // The spec's adapter (merged at load, e.g. kbrl sft's on the generators' corpus) is the warm
      // start: a second SFT on the few hand-written kernels would pull the model toward their style
      // (SmolLM2 with the writer adapter: 2.86 nats a token on them). Their NLL is still measured.
      sft.epochs = 0;
      if (ctx.progress) ctx.progress(fmt::format("SFT warm start: the spec's adapter {} (no further SFT)", spec.adapter));
    } else if (ctx.progress) {
      ctx.progress(fmt::format("SFT on the known-good kernels of tasks {}", fmt::join(used, ", ")));
    }
    sft.lora = sft.epochs > 0;  // no epochs, nothing learned: no adapter to add and merge
    sft.lora_config = {b.lora_rank, b.lora_alpha};
    sft.batch_size = 4;
  } else {
    HeuristicPolicy teacher(0.25);
    for (int id : tasks) {
      const TaskSpec task = task_spec(id, ctx.scale);
      const auto items = sft_items(task, teacher.sample(task, b.sft_samples_per_task, 1.0, 7));
      data.insert(data.end(), items.begin(), items.end());
    }
  }
  CsvTable sft_csv(ctx.dir / "sft_epochs.csv", schemas::sft_epochs());
  run_sft(*policy, data, sft, &sft_csv, ctx.progress);
  policy->save_base(checkpoints / "sft.pt");

  // RLVR on the train split with real rewards.
  RlvrConfig c;
  c.tasks = tasks;
  c.scale = ctx.scale;
  c.tasks_per_batch = std::min<int>(b.rlvr_tasks_per_batch, static_cast<int>(tasks.size()));
  c.group_size = b.rlvr_group;
  c.steps = b.rlvr_steps;
  c.temperature = b.temperature;
  c.optimizer.learning_rate = b.rlvr_learning_rate;
  c.lora_config = {b.lora_rank, b.lora_alpha};
  c.checkpoint_every = std::max(1, b.rlvr_steps / 4);
  c.seed = b.rlvr_seed;
  // The surprisal report's Appendix B: every train task evaluated at each checkpoint (steps 10, 20,
  // 30, 40 at paper budget) and before the first update, with the same rollouts (seed, K) every
  // time: the training batches cycle through different tasks, so their per-step rewards do not
  // compare with each other; these rows do.
  c.eval_every = c.checkpoint_every;
  c.eval_k = b.rlvr_eval_k;
  c.eval_seed = 99;
  CsvTable eval(ctx.dir / "rlvr_eval.csv", schemas::training_steps());
  CsvTable steps(ctx.dir / "rlvr_steps.csv", schemas::training_steps());
  run_rlvr(*policy, *ctx.env, c, &steps, checkpoints, ctx.progress, &eval);
}

/// One model's row of model_sweep.csv (and its rows of samples.csv and model_sweep_tasks.csv).
/// `k` samples per task at `temperature` (0: greedy, one request) under run name `run`; returns the
/// rollouts per task.
std::vector<std::vector<Rollout>> model_sweep_row(ExperimentContext& ctx, const std::vector<int>& tasks,
                                                  Policy& policy, const std::string& label, CsvTable& samples,
                                                  CsvTable& by_task, CsvTable& table, int k, double temperature,
                                                  const std::string& run) {
  const auto per_task = sample_and_evaluate(ctx, policy, label, tasks, k, temperature, ctx.single_seed(), &samples, run);
  int first_compiled = 0, first_correct = 0, format_errors = 0, compiled = 0, correct = 0, rollouts = 0;
  const bool checked = !ctx.compile_only;
  double runtime_sum = 0, tokens = 0;
  for (size_t t = 0; t < tasks.size(); ++t) {
    const std::vector<Rollout>& rs = per_task[t];
    int task_format = 0, task_compiled = 0, task_correct = 0;
    double task_tokens = 0;
    for (const Rollout& r : rs) {
      task_format += r.outcome() == Outcome::format_error;
      task_compiled += r.compiled();
      task_correct += r.correct();
      task_tokens += static_cast<double>(r.sample.token_count());
    }
    if (!rs.empty()) {
      first_compiled += rs[0].compiled();
      first_correct += rs[0].correct();
      if (rs[0].correct()) runtime_sum += rs[0].runtime_ms();
    }
    format_errors += task_format;
    compiled += task_compiled;
    correct += task_correct;
    tokens += task_tokens;
    rollouts += static_cast<int>(rs.size());
    by_task.row({label, cell(tasks[t]), task_spec(tasks[t], ctx.scale).name, cell(static_cast<int>(rs.size())),
                 cell(task_format), cell(task_compiled), cell(task_correct),
                 cell(rs.empty() ? 0.0 : task_tokens / static_cast<double>(rs.size())),
                 rs.empty() ? "" : std::string(to_string(rs[0].outcome()))});
  }
  const double n = static_cast<double>(tasks.size()), all = std::max(1, rollouts);
  table.row({label, cell(first_compiled), checked ? cell(first_correct) : "", cell(static_cast<int>(tasks.size())),
            checked && first_correct ? cell(runtime_sum / first_correct) : "",
            checked ? cell(100.0 * first_correct / n) : "", cell(checked), cell(k), cell(format_errors / all),
            cell(compiled / all), checked ? cell(correct / all) : "", cell(tokens / all), cell(temperature)});
  return per_task;
}

struct PolicyEntry {
  std::string label;
  Policy* policy;
  bool greedy = false;  // samples at temperature 0 whatever it is asked (recorded as such)
};

/// policy_sweep for a language model: Table 3's row for each model. A served model (endpoint:...)
/// as served; a model in the process (lm:...) as loaded (lm_loaded), after base_policy's SFT
/// (lm_sft) and after its RLVR (lm_rlvr).
void model_sweep(ExperimentContext& ctx, const std::vector<int>& tasks) {
  CsvTable samples(ctx.dir / "samples.csv", schemas::samples());
  CsvTable by_task(ctx.dir / "model_sweep_tasks.csv", schemas::model_sweep_tasks());
  CsvTable table(ctx.dir / "model_sweep.csv", schemas::model_sweep());
  if (ctx.served_model()) {
    auto policy = ctx.served_policy();
    model_sweep_row(ctx, tasks, *policy, policy->name(), samples, by_task, table, ctx.budget.sweep_k,
                    ctx.budget.temperature, "policy_sweep");
    return;
  }
  const std::vector<std::pair<std::string, std::filesystem::path>> stages = {
      {"loaded", {}}, {"sft", ctx.sft_checkpoint()}, {"rlvr", ctx.base_checkpoint()}};
  for (const auto& [stage, checkpoint] : stages) {
    auto policy = checkpoint.empty() ? ctx.new_policy() : ctx.load_policy(checkpoint);
    model_sweep_row(ctx, tasks, *policy, ctx.policy_label(stage), samples, by_task, table, ctx.budget.sweep_k,
                    ctx.budget.temperature, "policy_sweep");
  }
}

void policy_sweep(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  const std::vector<int> tasks = covered_only(b.sweep_tasks.empty() ? split("eval").ids : b.sweep_tasks, ctx.progress);
  if (ctx.language_model()) return model_sweep(ctx, tasks);
  UniformPolicy uniform;
  HeuristicPolicy heuristic(0.25);
  auto untrained = ctx.new_policy();
  auto sft = ctx.load_policy(ctx.sft_checkpoint());
  auto rlvr = ctx.load_policy(ctx.base_checkpoint());
  GreedyPolicy greedy_rlvr(*rlvr);
  const std::vector<PolicyEntry> policies = {{"uniform", &uniform},
                                             {"heuristic", &heuristic},
                                             {"schedule_untrained", untrained.get()},
                                             {"schedule_sft", sft.get()},
                                             {"schedule_rlvr", rlvr.get()},
                                             {"schedule_rlvr_greedy", &greedy_rlvr, true}};
  CsvTable samples(ctx.dir / "samples.csv", schemas::samples());
  CsvTable table(ctx.dir / "policy_sweep.csv", schemas::policy_sweep());
  // Table 3's own shape beside the rates: per policy, its first sample of each task as compiled #/N,
  // correct #/N, average runtime (ms) of the correct ones and correctness % (the same samples).
  CsvTable table3(ctx.dir / "table3.csv", schemas::model_sweep());
  CsvTable table3_tasks(ctx.dir / "table3_tasks.csv", schemas::model_sweep_tasks());
  for (const PolicyEntry& p : policies) {
    const auto per_task = model_sweep_row(ctx, tasks, *p.policy, p.label, samples, table3_tasks, table3, b.sweep_k,
                                          p.greedy ? 0.0 : b.temperature, "policy_sweep");
    std::vector<Rollout> all;
    for (const auto& t : per_task) all.insert(all.end(), t.begin(), t.end());
    const StepMetrics m = score_rollouts(all);
    double log_sum = 0;
    int correct = 0;
    for (const Rollout& r : all)
      if (r.correct() && r.speedup() > 0) {
        log_sum += std::log(r.speedup());
        ++correct;
      }
    table.row({p.label, cell(static_cast<int>(tasks.size())), cell(m.rollouts), cell(m.compiled_rate),
               cell(m.correct_rate), cell(m.fast_1), cell(m.sig_fast_1), cell(m.mean_speedup_correct),
               cell(correct ? std::exp(log_sum / correct) : 0.0)});
  }
}

/// The GRPO report: Table 3's rows for the policy as it starts, after an SFT warm start (Table 1,
/// Figure 2: training loss per step and the NLL of held-out answers, the eval split's) and after
/// GRPO on its composite reward with the judge (Table 2, Figure 3: loss and reward per step). Table
/// 3 is the report's protocol: one greedy completion per eval task.
void grpo_report(ExperimentContext& ctx) {
  const ExperimentBudget& b = ctx.budget;
  const std::vector<int> train = covered_only(b.train_tasks.empty() ? split("train").ids : b.train_tasks, ctx.progress);
  const std::vector<int> eval = covered_only(b.sweep_tasks.empty() ? split("eval").ids : b.sweep_tasks, ctx.progress);
  CsvTable samples(ctx.dir / "samples.csv", schemas::samples());
  CsvTable by_task(ctx.dir / "table3_tasks.csv", schemas::model_sweep_tasks());
  CsvTable table(ctx.dir / "table3.csv", schemas::model_sweep());
  auto policy = ctx.new_policy();
  const auto table3_row = [&](const std::string& stage) {
    GreedyPolicy greedy(*policy);
    model_sweep_row(ctx, eval, greedy, ctx.policy_label(stage), samples, by_task, table, 1, 0.0, "table3");
  };
  table3_row("loaded");

  // SFT warm start: answers for the train tasks, the eval tasks' held out (their NLL is Figure 2's
  // evaluation loss). A language model learns the known-good kernels as text; the schedule policy
  // the heuristic policy's configurations.
  std::vector<TrainItem> data, held_out;
  if (ctx.language_model()) {
    const TextStyle style = lm::parse_lm_spec(ctx.policy_spec).prompt.style;
    data = known_good_items(train, ctx.scale, *policy, style);
    held_out = known_good_items(eval, ctx.scale, *policy, style);
  } else {
    HeuristicPolicy teacher(0.25);
    for (const auto& [tasks, out] : {std::pair{&train, &data}, std::pair{&eval, &held_out}})
      for (int id : *tasks) {
        const TaskSpec task = task_spec(id, ctx.scale);
        const auto items = sft_items(task, teacher.sample(task, b.sft_samples_per_task, 1.0, 7));
        out->insert(out->end(), items.begin(), items.end());
      }
  }
  SftConfig sft;
  sft.epochs = b.grpo_sft_epochs;
  sft.batch_size = b.grpo_sft_batch;
  sft.optimizer.learning_rate = b.grpo_sft_learning_rate;
  sft.optimizer.weight_decay = 0.01;  // Table 1
  sft.lora = true;
  sft.lora_config = {b.grpo_sft_lora_rank, 2.0 * b.grpo_sft_lora_rank};
  sft.held_out = held_out;
  CsvTable sft_epochs(ctx.dir / "sft_epochs.csv", schemas::sft_epochs());
  CsvTable sft_steps(ctx.dir / "sft_steps.csv", schemas::sft_steps());
  run_sft(*policy, data, sft, &sft_epochs, ctx.progress, &sft_steps);
  table3_row("sft");

  // GRPO: one prompt per step, G rollouts, advantages r' - mean(r') (no std normalization), every
  // token of the batch weighted equally, no KL penalty; one update per batch, so the ratio is 1 and
  // nothing is clipped (the report's mu = 1).
  RlvrConfig c;
  c.tasks = train;
  c.scale = ctx.scale;
  c.tasks_per_batch = 1;
  c.group_size = b.grpo_group;
  c.steps = b.grpo_steps;
  c.temperature = b.temperature;
  c.optimizer.learning_rate = b.grpo_learning_rate;
  c.lora_config = {b.grpo_lora_rank, 2.0 * b.grpo_lora_rank};
  c.grpo.normalize_std = false;
  c.grpo.update.aggregation = Aggregation::token_mean;
  c.grpo.update.kl_coef = 0.0;
  c.checkpoint_every = 0;
  c.seed = ctx.single_seed();
  c.run = "grpo";
  CsvTable grpo_steps(ctx.dir / "grpo_steps.csv", schemas::training_steps());
  run_rlvr(*policy, *ctx.env, c, &grpo_steps, {}, ctx.progress);
  table3_row("grpo");
}

}  // namespace

std::vector<Rollout> rollouts_of_task(const std::vector<Rollout>& rollouts, int task_id) {
  std::vector<Rollout> out;
  for (const Rollout& r : rollouts)
    if (r.sample.task_id == task_id) out.push_back(r);
  return out;
}

std::vector<Experiment> training_experiments() {
  return {
      {"base_policy", "self-improvement report 6.1; surprisal report Appendix B (RLVR curve)", {},
       base_policy, false, "normalized"},
      {"policy_sweep", "GRPO report Table 3 (compiled, correct, runtime per policy)", {"base_policy"},
       policy_sweep, true},
      {"grpo_report", "GRPO report Tables 1-3, Figures 2 and 3 (SFT warm start, then GRPO with G = 6 on its "
       "composite reward with the judge)", {}, grpo_report, false, "composite", "rules"},
  };
}

}  // namespace kbrl
