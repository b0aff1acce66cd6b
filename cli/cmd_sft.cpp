// `kbrl sft`: supervised fine-tuning of a trainable policy on teacher samples (the heuristic
// policy's correct samples, scored in --env; a language model: the known-good kernels as text, or
// a corpus of the generators' kernels as answers), or the correct rows of a samples.csv. A language
// model's result is its LoRA adapter (DIR/adapter.pt), the schedule policy's its weights (DIR/sft.pt).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "commands.h"
#include <experiments/algorithms.h>
#include <experiments/schemas.h>
#include <experiments/training_loops.h>
#include "learn_common.h"
#include <policies/baseline_policies.h>
#include <policies/corpus.h>
#include <policies/lm/lm_policy.h>
#include <kernels/prompt.h>

namespace kbrl::cli {
namespace {

namespace fs = std::filesystem;

struct SftOptions {
  std::string teacher;       // "heuristic" or ""
  std::string from_samples;  // a samples.csv
  std::string corpus;        // a kbrl corpus file (JSON lines)
  int per_task = 32;
  double teacher_noise = 0.25;
};

/// The correct rows of a samples.csv, fastest first, at most `per_task` per task; tokens rebuilt
/// from the config column in each task's knob space, or, for a language model's rows, from the text
/// by the policy's tokenizer.
std::vector<TrainItem> items_from_samples(const std::string& file, const std::vector<int>& only_tasks, Scale scale,
                                          int per_task, Policy& policy) {
  std::map<int, std::vector<std::pair<double, std::string>>> by_task;  // task -> (speedup, config or text)
  bool text = false;
  for (const schemas::SampleRow& r : schemas::read_samples(file)) {
    if (!r.correct) continue;
    text = r.kind == ActionKind::text;  // a language model's text: the policy tokenizes it (knob policies refuse)
    if (!only_tasks.empty() && std::find(only_tasks.begin(), only_tasks.end(), r.task_id) == only_tasks.end()) continue;
    by_task[r.task_id].emplace_back(r.speedup, text ? r.text : r.config);
  }
  std::vector<TrainItem> items;
  for (auto& [id, rows] : by_task) {
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const TaskSpec task = task_spec(id, scale);
    std::vector<Sample> samples;
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < per_task; ++i) {
      Sample s;
      s.task_id = id;
      if (text) {
        s.kind = ActionKind::text;
        s.text = rows[i].second;
        s.tokens = policy.text_tokens(s.text);
      } else {
        s.config = knob_space_of(task).parse(rows[i].second);
        s.tokens = knob_space_of(task).tokenize(s.config);
      }
      samples.push_back(std::move(s));
    }
    const std::vector<TrainItem> more = sft_items(task, samples);
    items.insert(items.end(), more.begin(), more.end());
    progress_line(fmt::format("sft: task {}: {} of {} correct rows (fastest first)", id, samples.size(), rows.size()));
  }
  KBRL_CHECK_INPUT(!items.empty(), "{} holds no correct rows{}", file,
                   only_tasks.empty() ? "" : fmt::format(" for tasks {}", fmt::join(only_tasks, ",")));
  return items;
}

/// A corpus's answers as SFT items under the policy's prompt: train lines (of `only_tasks` when
/// given) into `train`, eval lines into `held_out` (the loss curve's evaluation loss).
void items_from_corpus(const std::string& file, const std::vector<int>& only_tasks, Policy& policy,
                       const lm::LmOptions& lm, std::vector<TrainItem>& train, std::vector<TrainItem>& held_out) {
  std::map<std::pair<int, Scale>, std::vector<Sample>> by_task;
  std::string version;
  for (const CorpusEntry& e : read_corpus(file)) {
    if (e.split == "train" && !only_tasks.empty() &&
        std::find(only_tasks.begin(), only_tasks.end(), e.task_id) == only_tasks.end())
      continue;
    Sample s;
    s.task_id = e.task_id;
    s.kind = ActionKind::text;
    s.text = e.answer;
    s.tokens = policy.text_tokens(e.answer);
    by_task[{e.task_id, e.scale}].push_back(std::move(s));
    version = e.prompt.version;
  }
  int train_tasks = 0, eval_tasks = 0;
  for (auto& [key, samples] : by_task) {
    const TaskSpec task = task_spec(key.first, key.second);
    const bool eval = split_of(key.first) == "eval";
    const std::vector<TrainItem> items = sft_items(task, samples);
    (eval ? held_out : train).insert((eval ? held_out : train).end(), items.begin(), items.end());
    ++(eval ? eval_tasks : train_tasks);
  }
  const std::string ours = build_prompt(task_spec(by_task.begin()->first.first, by_task.begin()->first.second),
                                        lm.prompt).version;
  if (version != ours)
    progress_line(fmt::format("warning: the corpus was written for prompt {}, the policy sends {} (the answers are "
                              "the same; its token counts are not)", version, ours));
  KBRL_CHECK_INPUT(!train.empty(), "{} holds no train-split answers{}", file,
                   only_tasks.empty() ? "" : fmt::format(" for tasks {}", fmt::join(only_tasks, ",")));
  progress_line(fmt::format("sft: corpus {}: {} answers of {} train tasks, {} held-out answers of {} eval tasks",
                            file, train.size(), train_tasks, held_out.size(), eval_tasks));
}

void run_sft_command(const CommonOptions& o, const SftOptions& s) {
  KBRL_CHECK_INPUT(s.teacher.empty() + s.from_samples.empty() + s.corpus.empty() == 2,
                   "give the SFT data: --teacher heuristic|known-good, --from-samples FILE or --corpus FILE "
                   "(exactly one)");
  KBRL_CHECK_INPUT(s.corpus.empty() || is_lm_policy(o.policy.name),
                   "--corpus trains a language model on kernels written as text: use --policy lm:MODEL,style=file");
  KBRL_CHECK_INPUT(s.corpus.empty() || lm::parse_lm_spec(o.policy.name).prompt.style == TextStyle::file,
                   "--corpus: the corpus answers with candidate files: add style=file to the lm: spec");
  KBRL_CHECK_INPUT(s.teacher.empty() || s.teacher == "heuristic" || s.teacher == "known-good",
                   "unknown --teacher '{}': expected heuristic or known-good", s.teacher);
  KBRL_CHECK_INPUT(s.teacher != "known-good" || is_lm_policy(o.policy.name),
                   "--teacher known-good trains a language model on kernels written as text: use --policy lm:MODEL");
  KBRL_CHECK_INPUT(s.per_task >= 1, "--per-task must be >= 1 (got {})", s.per_task);
  nlohmann::json j;
  SftConfig c = read_config(o, false, read_sft_config, j);
  const bool lm_policy = is_lm_policy(o.policy.name);
  // The adapter SFT writes adapts the model as loaded: on top of another adapter (merged at load) it
  // would be a delta that no later load reproduces.
  KBRL_CHECK_INPUT(!lm_policy || (o.policy.adapter.empty() && lm::parse_lm_spec(o.policy.name).adapter.empty()),
                   "kbrl sft writes an adapter of the model as loaded: start from the base model, without --adapter "
                   "or adapter= (adapters do not stack)");
  if (lm_policy) {  // a language model trains a LoRA adapter only, kept apart: DIR/adapter.pt
    c.lora = true;
    c.merge_adapter = false;
  }
  check_out_dir(o.out, "sft");
  const Scale scale = parse_scale(o.eval.scale);
  std::vector<int> tasks;
  if (!o.tasks.ids.empty() || !o.tasks.split.empty()) {
    tasks = select_tasks(o.tasks.ids, o.tasks.split);
    tasks = o.tasks.split.empty() ? covered_only(tasks)
                                  : covered_only(tasks, [](const std::string& w) { progress_line("warning: " + w); });
  }
  KBRL_CHECK_INPUT(!s.teacher.empty() ? !tasks.empty() : true, "--teacher {} needs --task ID or --split NAME",
                   s.teacher);
  std::unique_ptr<TrainablePolicy> policy = make_trainable_policy(o.policy);
  const fs::path dir = prepare_out_dir(o.out, "sft", run_details(o, j));
  std::vector<TrainItem> data;
  if (!s.corpus.empty()) {
    items_from_corpus(s.corpus, tasks, *policy, lm::parse_lm_spec(o.policy.name), data, c.held_out);
  } else if (!s.from_samples.empty()) {
    data = items_from_samples(s.from_samples, tasks, scale, s.per_task, *policy);
  } else if (s.teacher == "known-good") {
    std::vector<int> used;
    data = known_good_items(tasks, scale, *policy, lm::parse_lm_spec(o.policy.name).prompt.style, &used);
    progress_line(fmt::format("sft: known-good kernels of tasks {}", fmt::join(used, ", ")));
  } else {
    KBRL_CHECK_INPUT(s.teacher_noise >= 0 && s.teacher_noise <= 1, "--teacher-noise must be in [0, 1] (got {})",
                     s.teacher_noise);
    EnvHandle env = make_env(o, scale);
    HeuristicPolicy teacher(s.teacher_noise);
    CsvTable teacher_csv(dir / "teacher_samples.csv", schemas::samples());
    for (int id : tasks) {
      const TaskSpec task = task_spec(id, scale);
      const std::vector<Sample> samples = teacher.sample(task, s.per_task, 1.0, derive_seed(c.seed, {id}));
      const std::vector<Rollout> rollouts = env.env->evaluate(task, samples, teacher.name());
      std::vector<Sample> correct;
      for (size_t i = 0; i < rollouts.size(); ++i) {
        teacher_csv.row(schemas::samples_row("sft_teacher", teacher.name(), static_cast<int>(i), rollouts[i]));
        if (rollouts[i].correct()) correct.push_back(rollouts[i].sample);
      }
      progress_line(fmt::format("sft: task {}: {} of {} teacher samples correct", id, correct.size(), samples.size()));
      const std::vector<TrainItem> more = sft_items(task, correct);
      data.insert(data.end(), more.begin(), more.end());
    }
    KBRL_CHECK_INPUT(!data.empty(), "no correct teacher samples to train on");
  }
  CsvTable epochs(dir / "sft_epochs.csv", schemas::sft_epochs());
  CsvTable steps(dir / "sft_steps.csv", schemas::sft_steps());
  const std::vector<SftEpoch> result = run_sft(*policy, data, c, &epochs, progress_line, &steps);
  const fs::path weights = dir / (lm_policy ? "adapter.pt" : "sft.pt");
  if (lm_policy)
    policy->save_adapter(weights);
  else
    policy->save_base(weights);
  std::cout << fmt::format("sft on {} items, {} epochs: nll/token {:.4f} -> {:.4f}\n", data.size(),
                           result.size() - 1, result.front().nll_per_token, result.back().nll_per_token);
  std::cout << "wrote " << epochs.path().string() << ", " << steps.path().string() << " and " << weights.string()
            << "\n";
}


}  // namespace

void add_sft_command(CLI::App& app) {
  auto o = std::make_shared<CommonOptions>();
  auto s = std::make_shared<SftOptions>();
  auto* cmd = app.add_subcommand("sft", "SFT of a trainable policy on teacher samples (DIR/sft_epochs.csv, "
                                        "DIR/sft_steps.csv; DIR/sft.pt, or DIR/adapter.pt for lm: policies)");
  add_common_options(cmd, *o,
                     {{"--epochs", "epochs", "passes over the data"},
                      {"--batch-size", "batch_size", "sequences per optimizer step"},
                      {"--learning-rate", "learning_rate", "Adam's learning rate"},
                      {"--temperature", "temperature", "the temperature of the log-likelihood"},
                      {"--seed", "seed", "shuffling and teacher sampling seed"},
                      {"--eval-every", "eval_every", "steps between held-out NLL measurements (--corpus's eval lines)"}});
  cmd->add_option("--teacher", s->teacher,
                  "heuristic: --per-task samples per task from the heuristic policy, scored in --env; the "
                  "correct ones are the data. known-good (lm policies): each task's known-good kernel as text");
  cmd->add_option("--from-samples", s->from_samples,
                  "a samples.csv (kbrl sample): its correct rows, fastest first, --per-task per task")
      ->check(CLI::ExistingFile);
  cmd->add_option("--corpus", s->corpus,
                  "a kbrl corpus (kbrl corpus; lm:MODEL,style=file policies): its train-split answers are the data, "
                  "its eval-split answers held out (their NLL per step in DIR/sft_steps.csv)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--per-task", s->per_task, "teacher samples (or rows) per task")->capture_default_str();
  cmd->add_option("--teacher-noise", s->teacher_noise, "the heuristic teacher's noise")->capture_default_str();
  cmd->callback([o, s] { run_sft_command(*o, *s); });
}

}  // namespace kbrl::cli
