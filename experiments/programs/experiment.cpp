#include "experiment.h"

#include <algorithm>
#include <fstream>
#include <future>
#include <sstream>

#include <kbrl/csv.h>
#include <kbrl/error.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

#include <experiments/run_setup.h>
#include <experiments/schemas.h>
#include "programs.h"

namespace kbrl {

ExperimentBudget experiment_budget(const std::string& name) {
  ExperimentBudget b;
  b.name = name;
  b.subset1 = split("subset1").ids;
  b.subset2 = split("subset2").ids;
  if (name == "paper") return b;
  if (name == "smoke") {
    b.sft_samples_per_task = 8;
    b.sft_epochs = 3;
    // RLVR that moves the policy in minutes: eight train tasks with a spread of rewards between
    // configurations (gemm, softmax, activation, norm, pooling, scan, two losses), all of them in
    // every step so that the per-step rewards compare, and a learning rate raised for ten steps
    // (four steps at 3e-3 left the policy within KL 0.003 of its start: no measurable change).
    b.train_tasks = {1, 23, 25, 38, 42, 91, 95, 98};
    b.rlvr_steps = 10;
    b.rlvr_tasks_per_batch = 8;
    b.rlvr_group = 8;
    b.rlvr_learning_rate = 1e-2;
    b.rlvr_eval_k = 16;
    b.bon_k = 8;
    b.seeds = {42};
    b.sweep_k = 4;
    b.sweep_tasks = b.subset1;
    b.ttt_k = 4;
    b.ttt_steps = 2;
    b.probe_steps = 2;
    b.sdpo_seeds = {42};
    b.ablation_steps = {1, 2};
    b.ablation_k = {2, 4};
    b.ablation_temperatures = {1.0, 2.8};
    b.lr_factors = {1.0, 0.1};
    b.per_task_ttt_k = 8;
    b.per_task_ttt_steps = 2;
    b.grpo_sft_epochs = 3;
    b.grpo_steps = 20;
    b.entropy_coefs = {0.0, 0.1};
    b.sparsification_rewards = {"speedup", "threshold:1.5"};
    return b;
  }
  if (name == "tiny") {
    b = experiment_budget("smoke");
    b.name = name;
    b.sft_samples_per_task = 4;
    b.sft_epochs = 1;
    b.rlvr_steps = 2;
    b.rlvr_tasks_per_batch = 2;
    b.rlvr_group = 2;
    b.rlvr_eval_k = 2;
    b.train_tasks = {19, 23, 47};
    b.bon_k = 4;
    b.ttt_k = 2;
    b.ttt_steps = 1;
    b.probe_steps = 1;
    b.ablation_steps = {1};
    b.ablation_k = {2};
    b.ablation_temperatures = {1.0};
    b.per_task_ttt_k = 2;
    b.per_task_ttt_steps = 1;
    b.per_task_ttt_checkpoint_step = 2;
    b.grpo_sft_epochs = 1;
    b.grpo_steps = 2;
    b.grpo_group = 2;
    return b;
  }
  if (name == "llm-cpu") {
    // A language model served on a CPU (the llm tests: SmolLM2-135M on llama-server, 2 cores, 10-19
    // s a sample beside other tests, most of it its 1,150-token prompt): the sampling experiments at
    // a size CI can afford, 16 samples: the first 3 tasks of subset 1 and 2 of subset 2, 2 samples
    // each (best-of-N and its selection and length-control tables), Table 3 on the 3 (30 samples on
    // all 10 tasks took 8 of the test command's minutes).
    b = experiment_budget("smoke");
    b.name = name;
    b.subset1.resize(3);
    b.subset2.resize(2);
    b.sweep_k = 2;
    b.sweep_tasks = b.subset1;
    b.bon_k = 2;
    b.seeds = {42};
    return b;
  }
  throw InputError(fmt::format("unknown budget '{}' (smoke, paper, tiny, llm-cpu)", name));
}

ExperimentBudget with_seeds(ExperimentBudget b, const std::string& list) {
  std::vector<uint64_t> seeds;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    uint64_t seed = 0;
    try {
      seed = std::stoull(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    KBRL_CHECK_INPUT(!item.empty() && used == item.size() && item.find('-') == std::string::npos,
                     "--seeds {}: '{}' is not a seed (a non-negative integer; e.g. --seeds 42,43,44)", list, item);
    KBRL_CHECK_INPUT(std::find(seeds.begin(), seeds.end(), seed) == seeds.end(),
                     "--seeds {}: seed {} is given twice", list, seed);
    seeds.push_back(seed);
  }
  KBRL_CHECK_INPUT(!seeds.empty(), "--seeds names no seed (e.g. --seeds 42,43,44)");
  b.seeds = seeds;
  b.sdpo_seeds = seeds;
  b.rlvr_seed = seeds.front();
  return b;
}

ExperimentBudget language_model_budget(ExperimentBudget b) {
  const bool paper = b.name == "paper";
  b.temperature = 0.25;
  b.ablation_temperatures = paper ? std::vector<double>{0.1, 0.25, 0.4, 0.7}
                                  : (b.name == "smoke" ? std::vector<double>{0.25, 0.7} : std::vector<double>{0.25});
  b.per_task_ttt_temperature = 0.4;  // the self-improvement report's
  b.grpo_sft_learning_rate = paper ? 1e-4 : 1e-3;  // the GRPO report's Table 1 at paper budget
  b.grpo_learning_rate = paper ? 1e-5 : 2e-4;      // its Table 2
  b.rlvr_learning_rate = paper ? 1e-5 : 2e-4;
  b.ttt_learning_rate = b.rlvr_learning_rate;
  // SFT of a LoRA adapter on the known-good kernels written as text (one answer per task): on
  // SmolLM2-135M these settings took the NLL per token from 1.46 to 0.47 on the train split's four.
  b.sft_learning_rate = 1e-3;
  b.sft_epochs = paper ? 8 : std::min(b.sft_epochs, 8);
  b.lora_rank = 16;
  b.lora_alpha = 32;
  return b;
}

nlohmann::json budget_json(const ExperimentBudget& b) {
  return {{"name", b.name},
          {"sft_samples_per_task", b.sft_samples_per_task},
          {"sft_epochs", b.sft_epochs},
          {"sft_learning_rate", b.sft_learning_rate},
          {"rlvr_steps", b.rlvr_steps},
          {"rlvr_tasks_per_batch", b.rlvr_tasks_per_batch},
          {"rlvr_group", b.rlvr_group},
          {"rlvr_learning_rate", b.rlvr_learning_rate},
          {"rlvr_eval_k", b.rlvr_eval_k},
          {"rlvr_seed", b.rlvr_seed},
          {"train_tasks", b.train_tasks},
          {"bon_k", b.bon_k},
          {"seeds", b.seeds},
          {"temperature", b.temperature},
          {"sweep_k", b.sweep_k},
          {"sweep_tasks", b.sweep_tasks},
          {"ttt_k", b.ttt_k},
          {"ttt_steps", b.ttt_steps},
          {"probe_steps", b.probe_steps},
          {"ttt_learning_rate", b.ttt_learning_rate},
          {"lora_rank", b.lora_rank},
          {"lora_alpha", b.lora_alpha},
          {"sdpo_seeds", b.sdpo_seeds},
          {"ablation_steps", b.ablation_steps},
          {"ablation_k", b.ablation_k},
          {"ablation_temperatures", b.ablation_temperatures},
          {"lr_factors", b.lr_factors},
          {"grpo_sft_epochs", b.grpo_sft_epochs},
          {"grpo_sft_lora_rank", b.grpo_sft_lora_rank},
          {"grpo_sft_batch", b.grpo_sft_batch},
          {"grpo_sft_learning_rate", b.grpo_sft_learning_rate},
          {"grpo_steps", b.grpo_steps},
          {"grpo_group", b.grpo_group},
          {"grpo_lora_rank", b.grpo_lora_rank},
          {"grpo_learning_rate", b.grpo_learning_rate},
          {"entropy_coefs", b.entropy_coefs},
          {"sparsification_rewards", b.sparsification_rewards},
          {"per_task_ttt_k", b.per_task_ttt_k},
          {"per_task_ttt_steps", b.per_task_ttt_steps},
          {"per_task_ttt_checkpoint_step", b.per_task_ttt_checkpoint_step},
          {"per_task_ttt_temperature", b.per_task_ttt_temperature},
          {"subset1", b.subset1},
          {"subset2", b.subset2}};
}

namespace {
// The command that runs `experiment` into ctx's results, for the errors that ask for it.
std::string run_command(const ExperimentContext& ctx, const std::string& experiment) {
  return fmt::format("kbrl-experiment {} --budget {} --env {}", experiment, ctx.budget.name, ctx.env_flag);
}
}  // namespace

std::filesystem::path ExperimentContext::input(const std::string& experiment, const std::string& file) const {
  const std::filesystem::path p = results / experiment / file;
  KBRL_CHECK_INPUT(std::filesystem::exists(p),
                   "{} needs {} from the {} experiment: run `{}` first (`ctest -L experiments` runs it as a fixture)",
                   this->experiment, p.string(), experiment, run_command(*this, experiment));
  return p;
}

bool ExperimentContext::served_model() const { return is_endpoint_policy(policy_spec); }

std::unique_ptr<Policy> ExperimentContext::served_policy() const {
  KBRL_CHECK_INPUT(served_model(), "{}: no served model (--policy endpoint:...) given", experiment);
  PolicyOptions o;
  o.name = policy_spec;
  o.response_log = (dir / "endpoint_responses.jsonl").string();
  return make_policy(o);
}

std::unique_ptr<TrainablePolicy> ExperimentContext::new_policy() const {
  PolicyOptions o;
  o.name = policy_spec.empty() ? "schedule" : policy_spec;
  return make_trainable_policy(o);
}

std::unique_ptr<TrainablePolicy> ExperimentContext::load_policy(const std::filesystem::path& checkpoint) const {
  auto policy = new_policy();
  if (checkpoint.empty()) return policy;
  policy->load_base(checkpoint);
  return policy;
}

std::string ExperimentContext::policy_label(const std::string& stage) const {
  return (language_model() ? "lm_" : "schedule_") + stage;
}

std::vector<std::string> served_model_experiments() {
  std::vector<std::string> names;
  for (const Experiment& e : experiments())
    if (e.takes_served_model) names.push_back(e.name);
  return names;
}

TttConfig ExperimentContext::ttt_config(const std::vector<int>& tasks, uint64_t seed,
                                        const std::string& run) const {
  TttConfig c;
  c.tasks = tasks;
  c.scale = scale;
  c.k = budget.ttt_k;
  c.steps = budget.ttt_steps;
  c.temperature = budget.temperature;
  c.optimizer.learning_rate = budget.ttt_learning_rate;
  c.lora_config = {budget.lora_rank, budget.lora_alpha};
  c.seed = seed;
  c.run = run;
  return c;
}

const std::vector<Experiment>& experiments() {
  static const std::vector<Experiment> all = [] {
    std::vector<Experiment> v;
    for (auto* group : {&training_experiments, &search_experiments, &adaptation_experiments,
                        &distillation_experiments, &self_improvement_experiments, &open_question_experiments})
      for (Experiment& e : (*group)()) v.push_back(std::move(e));
    return v;
  }();
  return all;
}

bool Experiment::starts_from_rlvr() const {
  return name != "policy_sweep" && std::find(needs.begin(), needs.end(), "base_policy") != needs.end();
}

std::vector<std::string> Experiment::inputs(const ExperimentContext& ctx) const {
  std::vector<std::string> v;
  for (const std::string& n : needs) {
    // a served model is sampled as served; --from loaded starts from the model as given
    if (n == "base_policy" && (ctx.served_model() || (ctx.from_loaded && starts_from_rlvr()))) continue;
    if (n == "best_of_n" && !ctx.samples_file.empty()) continue;
    v.push_back(n);
  }
  return v;
}

void check_inputs_finished(const ExperimentContext& ctx, const Experiment& e) {
  for (const std::string& n : e.inputs(ctx)) {
    const std::filesystem::path settings = ctx.results / n / "settings.json";
    const std::string command = run_command(ctx, n);
    KBRL_CHECK_INPUT(std::filesystem::exists(settings),
                     "{} needs the outputs of the {} experiment in {}, and it has not run there: run `{}` first "
                     "(`ctest -L experiments` runs it as a fixture)",
                     e.name, n, (ctx.results / n).string(), command);
    nlohmann::json s;
    try {
      std::ifstream in(settings);
      s = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& err) {
      throw InputError(fmt::format("{} needs the outputs of the {} experiment, and {} is not JSON ({}): rerun `{}`",
                                   e.name, n, settings.string(), err.what(), command));
    }
    // Runs from before the marker existed have no "finished" key: their outputs are taken as they are.
    KBRL_CHECK_INPUT(!s.is_object() || !s.contains("finished") || s["finished"] != false,
                     "{} needs the outputs of the {} experiment, and its run in {} did not finish (settings.json: "
                     "\"finished\": false; it stopped part way, its CSVs may be incomplete): rerun `{}`",
                     e.name, n, (ctx.results / n).string(), command);
  }
}

const Experiment& experiment_named(const std::string& name) {
  std::string names;
  for (const Experiment& e : experiments()) {
    if (e.name == name) return e;
    names += (names.empty() ? "" : ", ") + e.name;
  }
  throw InputError(fmt::format("unknown experiment '{}' (known: {})", name, names));
}

std::vector<std::vector<Rollout>> sample_and_evaluate(ExperimentContext& ctx, Policy& policy,
                                                      const std::string& policy_label,
                                                      const std::vector<int>& tasks, int k,
                                                      double temperature, uint64_t seed,
                                                      CsvTable* samples_csv, const std::string& run) {
  std::vector<std::vector<Rollout>> out;
  // Rows, progress and the returned rollouts in task order, on this thread.
  auto record = [&](int id, std::vector<Rollout> rollouts) {
    int fast = 0, sig_fast = 0, correct = 0;
    double best = 0;
    for (size_t i = 0; i < rollouts.size(); ++i) {
      correct += rollouts[i].correct();
      fast += rollouts[i].fast();
      sig_fast += rollouts[i].significantly_fast();
      best = std::max(best, rollouts[i].speedup());
      if (samples_csv) {
        samples_csv->row(schemas::samples_row(run, policy_label, static_cast<int>(i), rollouts[i]));
      }
    }
    if (ctx.progress)
      ctx.progress(fmt::format("{} {} task {}: {} samples, {} correct, {} fast ({} significantly), best {:.3f}x",
                               run, policy_label, id, k, correct, fast, sig_fast, best));
    out.push_back(std::move(rollouts));
  };
  // At most one evaluation in flight (the environment is used by one thread at a time); the policy
  // samples only on this thread. A throw waits for the evaluation in flight (the future's end).
  std::future<std::vector<Rollout>> pending;
  int pending_id = 0;
  for (int id : tasks) {
    const TaskSpec task = task_spec(id, ctx.scale);
    std::vector<Sample> samples = policy.sample(task, k, temperature, seed ^ static_cast<uint64_t>(id));
    if (!ctx.overlap_sampling) {
      record(id, ctx.env->evaluate(task, samples, policy_label));
      continue;
    }
    if (pending.valid()) record(pending_id, pending.get());
    pending = std::async(std::launch::async, [&ctx, &policy_label, task, s = std::move(samples)] {
      return ctx.env->evaluate(task, s, policy_label);
    });
    pending_id = id;
  }
  if (pending.valid()) record(pending_id, pending.get());
  return out;
}

}  // namespace kbrl
