#pragma once
// What the learning commands (cli/cmd_learn.cpp: sample, train, ttt; cli/cmd_sft.cpp: sft) share:
// their common options, the config they read (file, --set, flags), the environment they score
// rollouts in, and the run's folder and run.json.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <kbrl/error.h>
#include <nlohmann/json.hpp>

#include <experiments/environment.h>
#include <experiments/run_setup.h>
#include <harness/evaluator.h>
#include <harness/record/rollout_log.h>
#include "out_dir.h"
#include <reference/task_registry.h>
#include "run_options.h"

namespace kbrl::cli {

/// What every learning command takes.
struct CommonOptions {
  std::string config_path;
  std::vector<std::string> sets;                      // --set KEY=VALUE
  std::vector<std::pair<std::string, std::string>> flag_overrides;  // (config key, value text)
  TaskFlags tasks;
  PolicyOptions policy;
  std::string env = "evaluator";
  uint64_t env_seed = 0;
  EvalFlags eval;
  bool scale_given = false;
  std::string log_path;
  OutDirFlags out;
};

/// One progress line on stderr ("kbrl: ...").
void progress_line(const std::string& line);

/// The config object: the file's (or {}), then --set, then the named flags, then --task/--split
/// and --scale (`with_tasks`: the config has tasks/split/scale keys), read by `reader`. The file is
/// read alone first, so that an error in it names the file and one in an override names the
/// command line.
template <class Config>
Config read_config(const CommonOptions& o, bool with_tasks,
                   Config (*reader)(const nlohmann::json&, const std::string&), nlohmann::json& j) {
  j = nlohmann::json::object();
  if (!o.config_path.empty()) {
    j = read_json_file(o.config_path);
    reader(j, o.config_path);
  }
  for (const std::string& kv : o.sets) {
    const size_t eq = kv.find('=');
    KBRL_CHECK_INPUT(eq != std::string::npos, "--set takes KEY=VALUE (got '{}')", kv);
    set_config_value(j, kv.substr(0, eq), kv.substr(eq + 1));
  }
  for (const auto& [key, value] : o.flag_overrides) set_config_value(j, key, value);
  if (with_tasks) {
    if (!o.tasks.ids.empty() || !o.tasks.split.empty()) {
      select_tasks(o.tasks.ids, o.tasks.split);  // a bad id or split name is the flag's error
      j.erase("tasks");
      j.erase("split");
      if (!o.tasks.ids.empty()) j["tasks"] = o.tasks.ids;
      if (!o.tasks.split.empty()) j["split"] = o.tasks.split;
    }
    if (o.scale_given) j["scale"] = o.eval.scale;
  }
  return reader(j, o.config_path.empty() ? "the command line"
                                         : "the command line's overrides of " + o.config_path);
}

/// The tasks of a config: InputError when none were given; tasks no generator covers are an error
/// when named by id and skipped with a warning when they come from a split.
std::vector<int> tasks_of(const std::vector<int>& tasks, const nlohmann::json& j);

/// An environment and what it needs alive.
struct EnvHandle {
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<RolloutLog> log;
  std::unique_ptr<Environment> env;
};

/// The environment of --env (the evaluator, compiling only with --arch where there is no GPU, or
/// the synthetic table), with --log attached.
EnvHandle make_env(const CommonOptions& o, Scale scale);

/// What run.json records of a learning run beside its command (prepare_out_dir writes it): the
/// resolved config, the policy and the environment.
nlohmann::json run_details(const CommonOptions& o, const nlohmann::json& config);

/// Adds the options every learning command takes; `key_flags` are (flag, config key, help);
/// `resume_help`, when given, adds --resume with that help.
void add_common_options(CLI::App* cmd, CommonOptions& o,
                        const std::vector<std::tuple<std::string, std::string, std::string>>& key_flags,
                        bool policy_flags = true, std::string_view resume_help = {});

}  // namespace kbrl::cli
