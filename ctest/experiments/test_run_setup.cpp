// The run setup the learning commands and the experiment programs share (experiments/run_setup.h):
// JSON configs (keys, types, ranges, overrides), task selection, policies, the sweep's sample and
// the evaluator's flags.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <kbrl/error.h>
#include <experiments/run_setup.h>
#include <kernels/generator.h>

namespace kbrl::testing {
namespace {

namespace fs = std::filesystem;

/// A task id no generator covers (0 when every task is covered).
int uncovered_task() {
  const std::vector<int> covered = covered_tasks();
  for (int id = 1; id <= 100; ++id)
    if (std::find(covered.begin(), covered.end(), id) == covered.end()) return id;
  return 0;
}

/// A fresh directory for one test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("kbrl-run-setup-" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

fs::path write_json(const std::string& name, const std::string& text) {
  const fs::path file = scratch("json") / name;
  std::ofstream(file) << text;
  return file;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

TEST(RunSetup, ReadsAGoodConfig) {
  const fs::path file = write_json("rlvr.json", R"({
    "tasks": [19, 23], "scale": "small", "tasks_per_batch": 2, "group_size": 6, "steps": 3,
    "temperature": 0.7, "learning_rate": 0.002, "lora_rank": 4, "lora_alpha": 8, "normalize_std": false,
    "clip_epsilon": 0.3, "aggregation": "token_mean", "kl_coef": 0.05, "checkpoint_every": 2, "seed": 11,
    "run": "mine"})");
  const RlvrConfig c = read_rlvr_config(read_json_file(file), file.string());
  EXPECT_EQ(c.tasks, (std::vector<int>{19, 23}));
  EXPECT_EQ(c.scale, Scale::small);
  EXPECT_EQ(c.tasks_per_batch, 2);
  EXPECT_EQ(c.group_size, 6);
  EXPECT_EQ(c.steps, 3);
  EXPECT_DOUBLE_EQ(c.temperature, 0.7);
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate, 0.002);
  EXPECT_EQ(c.lora_config.rank, 4);
  EXPECT_DOUBLE_EQ(c.lora_config.alpha, 8);
  EXPECT_FALSE(c.grpo.normalize_std);
  EXPECT_DOUBLE_EQ(c.grpo.update.clip_epsilon, 0.3);
  EXPECT_EQ(c.grpo.update.aggregation, Aggregation::token_mean);
  EXPECT_DOUBLE_EQ(c.grpo.update.kl_coef, 0.05);
  EXPECT_EQ(c.checkpoint_every, 2);
  EXPECT_EQ(c.seed, 11u);
  EXPECT_EQ(c.run, "mine");

  // Missing keys keep the struct's defaults.
  const RlvrConfig d = read_rlvr_config(nlohmann::json::object(), "x");
  const RlvrConfig defaults;
  EXPECT_EQ(d.steps, defaults.steps);
  EXPECT_DOUBLE_EQ(d.optimizer.learning_rate, defaults.optimizer.learning_rate);

  const TttConfig t = read_ttt_config(
      nlohmann::json{{"split", "subset1"}, {"k", 4}, {"update", "sdpo"}, {"teacher", "prompt_only"},
                     {"sdpo_beta", 0.5}, {"patience", 2}},
      "inline");
  EXPECT_EQ(t.tasks, (std::vector<int>{4, 5, 12, 14, 15}));
  EXPECT_EQ(t.k, 4);
  EXPECT_EQ(t.update, TttUpdate::sdpo);
  EXPECT_EQ(t.teacher, SdpoTeacher::prompt_only);
  EXPECT_DOUBLE_EQ(t.sdpo_beta, 0.5);
  EXPECT_EQ(t.patience, 2);

  const SftConfig s = read_sft_config(nlohmann::json{{"epochs", 7}, {"batch_size", 3}, {"lora", true}}, "inline");
  EXPECT_EQ(s.epochs, 7);
  EXPECT_EQ(s.batch_size, 3);
  EXPECT_TRUE(s.lora);
  EXPECT_DOUBLE_EQ(s.optimizer.learning_rate, SftConfig{}.optimizer.learning_rate);
}

TEST(RunSetup, RejectsUnknownKeysWrongTypesAndBadValues) {
  const fs::path file = write_json("bad_key.json", R"({"steps": 3, "lerning_rate": 0.1})");
  std::string e = error_of([&] { read_rlvr_config(read_json_file(file), file.string()); });
  EXPECT_NE(e.find("unknown config key 'lerning_rate'"), std::string::npos) << e;
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("learning_rate"), std::string::npos) << e;  // among the valid keys

  const fs::path typed = write_json("bad_type.json", R"({"steps": "3"})");
  e = error_of([&] { read_rlvr_config(read_json_file(typed), typed.string()); });
  EXPECT_NE(e.find("'steps' must be an integer"), std::string::npos) << e;
  EXPECT_NE(e.find(typed.string()), std::string::npos) << e;
  e = error_of([] { read_rlvr_config(nlohmann::json{{"steps", 2.5}}, "f"); });
  EXPECT_NE(e.find("'steps' must be an integer"), std::string::npos) << e;
  e = error_of([] { read_rlvr_config(nlohmann::json{{"normalize_std", 1}}, "f"); });
  EXPECT_NE(e.find("'normalize_std' must be true or false"), std::string::npos) << e;

  e = error_of([] { read_rlvr_config(nlohmann::json{{"group_size", 1}}, "f"); });
  EXPECT_NE(e.find("'group_size' must be an integer >= 2"), std::string::npos) << e;
  e = error_of([] { read_rlvr_config(nlohmann::json{{"temperature", 0}}, "f"); });
  EXPECT_NE(e.find("'temperature'"), std::string::npos) << e;
  e = error_of([] { read_rlvr_config(nlohmann::json{{"aggregation", "median"}}, "f"); });
  EXPECT_NE(e.find("'aggregation'"), std::string::npos) << e;
  e = error_of([] { read_ttt_config(nlohmann::json{{"update", "ppo"}}, "f"); });
  EXPECT_NE(e.find("'update'"), std::string::npos) << e;
  e = error_of([] { read_ttt_config(nlohmann::json{{"teacher", "oracle"}}, "f"); });
  EXPECT_NE(e.find("'teacher'"), std::string::npos) << e;
  e = error_of([] { read_ttt_config(nlohmann::json{{"tasks", nlohmann::json::array({19})}, {"split", "train"}}, "f"); });
  EXPECT_NE(e.find("not both"), std::string::npos) << e;
  e = error_of([] { read_ttt_config(nlohmann::json{{"tasks", nlohmann::json::array({19, 500})}}, "f"); });
  EXPECT_NE(e.find("unknown task id 500"), std::string::npos) << e;
  // Keys of one loop are not keys of another.
  e = error_of([] { read_sft_config(nlohmann::json{{"group_size", 4}}, "f"); });
  EXPECT_NE(e.find("unknown config key 'group_size'"), std::string::npos) << e;
  e = error_of([] { read_rlvr_config(nlohmann::json::array(), "f"); });
  EXPECT_NE(e.find("JSON object"), std::string::npos) << e;

  const fs::path broken = write_json("broken.json", R"({"steps": )");
  e = error_of([&] { read_json_file(broken); });
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
}

TEST(RunSetup, OverridesAreTyped) {
  nlohmann::json j = {{"steps", 4}};
  set_config_value(j, "steps", "9");
  set_config_value(j, "temperature", "0.5");
  set_config_value(j, "update", "sdpo");
  set_config_value(j, "normalize_std", "false");
  EXPECT_EQ(j.at("steps"), 9);
  EXPECT_EQ(j.at("temperature"), 0.5);
  EXPECT_EQ(j.at("update"), "sdpo");
  EXPECT_EQ(j.at("normalize_std"), false);
}

TEST(RunSetup, TasksAndPolicies) {
  EXPECT_EQ(select_tasks({23, 19, 23}, ""), (std::vector<int>{23, 19}));
  EXPECT_EQ(select_tasks({}, "subset2"), (std::vector<int>{18, 28, 29, 30, 32}));
  EXPECT_NE(error_of([] { select_tasks({19}, "train"); }).find("exactly one"), std::string::npos);
  EXPECT_NE(error_of([] { select_tasks({}, ""); }).find("exactly one"), std::string::npos);
  EXPECT_NE(error_of([] { select_tasks({}, "nope"); }).find("unknown split 'nope'"), std::string::npos);
  EXPECT_NE(error_of([] { select_tasks({0}, ""); }).find("unknown task id 0"), std::string::npos);

  std::vector<std::string> warnings;
  const std::vector<int> all = select_tasks({}, "all");
  const std::vector<int> kept = covered_only(all, [&](const std::string& w) { warnings.push_back(w); });
  EXPECT_EQ(kept, covered_tasks());
  EXPECT_EQ(warnings.size(), all.size() - kept.size());
  if (const int id = uncovered_task()) {
    EXPECT_NE(error_of([&] { covered_only({19, id}); }).find("no generator covers task " + std::to_string(id)),
              std::string::npos);
  }

  const auto named = [](const std::string& name) {
    PolicyOptions o;
    o.name = name;
    return o;
  };
  EXPECT_EQ(make_policy(named("uniform"))->name(), "uniform");
  EXPECT_EQ(make_policy(named("schedule"))->name(), "schedule");
  PolicyOptions heuristic = named("heuristic");
  heuristic.noise = 0.1;
  EXPECT_EQ(make_policy(heuristic)->name().rfind("heuristic", 0), 0u);
  heuristic.noise = 1.5;
  EXPECT_NE(error_of([&] { make_policy(heuristic); }).find("noise"), std::string::npos);
  const std::string e = error_of([&] { make_policy(named("random")); });
  EXPECT_NE(e.find("unknown policy 'random'"), std::string::npos) << e;
  EXPECT_NE(e.find("schedule, uniform, heuristic"), std::string::npos) << e;
  PolicyOptions with_weights = named("uniform");
  with_weights.checkpoint = "x.pt";
  EXPECT_NE(error_of([&] { make_policy(with_weights); }).find("no weights"), std::string::npos);
  EXPECT_NE(error_of([&] { make_trainable_policy(named("heuristic")); }).find("cannot be trained"),
            std::string::npos);
  PolicyOptions missing = named("schedule");
  missing.checkpoint = "/no/such.pt";
  EXPECT_NE(error_of([&] { make_policy(missing); }).find("does not exist"), std::string::npos);

  // Where a policy computes (what run.json records): a language model's spec device= names a GPU
  // over --policy-device; the knob policies take --policy-device.
  PolicyOptions lm = named("lm:random:1x64,device=cuda:1");
  EXPECT_EQ(policy_device(lm), "cuda:1");
  lm.device = "cuda:0";
  EXPECT_EQ(policy_device(lm), "cuda:1");
  lm.name = "lm:random:1x64";
  EXPECT_EQ(policy_device(lm), "cuda:0");
  PolicyOptions schedule = named("schedule");
  EXPECT_EQ(policy_device(schedule), "cpu");
  schedule.device = "cuda";
  EXPECT_EQ(policy_device(schedule), "cuda");

  // The adapter it loads last: --adapter over a spec's adapter=.
  lm.name = "lm:random:1x64,adapter=/runs/sft/adapter.pt";
  EXPECT_EQ(policy_adapter(lm), "/runs/sft/adapter.pt");
  lm.adapter = "/runs/rlvr/adapter.pt";
  EXPECT_EQ(policy_adapter(lm), "/runs/rlvr/adapter.pt");
  EXPECT_EQ(policy_adapter(schedule), "");
}

TEST(RunSetup, SweepSampleIsUniformWithoutReplacementAndKeepsTheExpert) {
  EXPECT_EQ(sweep_sample(5, 3, 0, 1, 19), (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(sweep_sample(5, 3, 9, 1, 19), (std::vector<size_t>{0, 1, 2, 3, 4}));
  std::vector<int> hits(100, 0);
  for (uint64_t seed = 0; seed < 400; ++seed) {
    const std::vector<size_t> s = sweep_sample(100, 42, 10, seed, 19);
    ASSERT_EQ(s.size(), 10u);
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    EXPECT_EQ(std::adjacent_find(s.begin(), s.end()), s.end());  // no repeats
    EXPECT_TRUE(std::binary_search(s.begin(), s.end(), 42u));
    EXPECT_EQ(s, sweep_sample(100, 42, 10, seed, 19));  // reproducible
    for (size_t i : s) ++hits[i];
  }
  EXPECT_NE(sweep_sample(100, 42, 10, 1, 19), sweep_sample(100, 42, 10, 2, 19));
  EXPECT_NE(sweep_sample(100, 42, 10, 1, 19), sweep_sample(100, 42, 10, 1, 23));
  // Every other index is drawn with probability 9/99: 400 * 9/99 = 36.4 expected hits each.
  EXPECT_EQ(hits[42], 400);
  for (size_t i = 0; i < 100; ++i)
    if (i != 42) {
      EXPECT_TRUE(hits[i] > 10 && hits[i] < 70) << i << ": " << hits[i];
    }
  EXPECT_NE(error_of([] { sweep_sample(10, 0, -1, 0, 19); }).find("--max-configs"), std::string::npos);
}

TEST(RunSetup, EvalSettingsFromFlags) {
  EvalFlags flags;
  flags.mode = "full";
  flags.scale = "small";
  flags.tolerance = "legacy";
  flags.trials = 3;
  const EvalSettings s = eval_settings(flags);
  EXPECT_EQ(s.mode, TimingMode::full);
  EXPECT_EQ(s.scale, Scale::small);
  EXPECT_DOUBLE_EQ(s.atol, 1e-2);
  EXPECT_EQ(s.trials, 3);
  flags.mode = "slow";
  EXPECT_NE(error_of([&] { eval_settings(flags); }).find("slow"), std::string::npos);
  flags.mode = "fast";
  flags.trials = 0;
  EXPECT_NE(error_of([&] { eval_settings(flags); }).find("--trials"), std::string::npos);
}

}  // namespace
}  // namespace kbrl::testing
