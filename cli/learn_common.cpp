#include "learn_common.h"

#include <iostream>

#include <fmt/format.h>

#include <harness/gpu/gpu_session.h>

namespace kbrl::cli {

namespace fs = std::filesystem;

void progress_line(const std::string& line) { std::cerr << "kbrl: " << line << "\n" << std::flush; }

std::vector<int> tasks_of(const std::vector<int>& tasks, const nlohmann::json& j) {
  KBRL_CHECK_INPUT(!tasks.empty(), "no tasks: give --task ID or --split NAME (or 'tasks' or 'split' in the config)");
  if (j.contains("split")) return covered_only(tasks, [](const std::string& w) { progress_line("warning: " + w); });
  return covered_only(tasks);
}

EnvHandle make_env(const CommonOptions& o, Scale scale) {
  EvalFlags flags = o.eval;
  flags.scale = std::string(to_string(scale));
  const EvalSettings settings = eval_settings(flags);  // checks the flags in either case
  EnvHandle h;
  if (o.env == "synthetic") {
    KBRL_CHECK_INPUT(o.log_path.empty(),
                     "--log records the evaluator's rollouts: it does not go with --env synthetic");
    h.env = std::make_unique<SyntheticEnvironment>(o.env_seed, 0.5, settings.reward);
    return h;
  }
  KBRL_CHECK_INPUT(o.env == "evaluator", "unknown --env '{}': expected evaluator or synthetic", o.env);
  EvalSettings run_settings = settings;
  std::string reason;
  if (!gpu_available(&reason)) {
    if (o.eval.arch.empty())
      throw Error(fmt::format("--env evaluator needs a GPU (no GPU: {}); give --arch (e.g. sm_90) to compile "
                              "only, or --env synthetic for a CPU reward table",
                              reason));
    run_settings.compile_only = true;
    progress_line(fmt::format("no GPU ({}): compiling only, for {}; a candidate that compiles gets outcome not_run",
                              reason, o.eval.arch));
  }
  h.evaluator = std::make_unique<Evaluator>(run_settings);
  if (!o.log_path.empty()) {
    h.log = std::make_unique<RolloutLog>(o.log_path);
    h.evaluator->attach_log(h.log.get());
  }
  h.env = std::make_unique<EvaluatorEnvironment>(*h.evaluator);  // logged candidates come back from the log
  return h;
}

nlohmann::json run_details(const CommonOptions& o, const nlohmann::json& config) {
  return {{"config", config},
                      {"policy",
                       {{"name", o.policy.name},
                        {"checkpoint", o.policy.checkpoint},
                        {"adapter", policy_adapter(o.policy)},
                        {"noise", o.policy.noise},
                        {"device", policy_device(o.policy)},
                        {"seed", o.policy.seed}}},
                      {"env", o.env},
                      {"env_seed", o.env_seed}};
}

void add_common_options(CLI::App* cmd, CommonOptions& o,
                        const std::vector<std::tuple<std::string, std::string, std::string>>& key_flags,
                        bool policy_flags, std::string_view resume_help) {
  cmd->add_option("--config", o.config_path, "JSON config (flat snake_case keys); flags override it")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", o.sets, "override any config key: KEY=VALUE (repeatable)");
  for (const auto& entry : key_flags) {
    // Each flag's text becomes the config key's value (typed by the config reader).
    const std::string key = std::get<1>(entry);
    cmd->add_option_function<std::string>(
        std::get<0>(entry), [&o, key](const std::string& v) { o.flag_overrides.emplace_back(key, v); },
        std::get<2>(entry) + " (config key " + key + ")");
  }
  add_task_flags(cmd, o.tasks);
  if (policy_flags) {
    cmd->add_option("--policy", o.policy.name,
                    "schedule, uniform, heuristic, endpoint:URL[,model=NAME,...] (a language model on an "
                    "OpenAI-compatible server) or lm:MODEL[,key=value...] (a .gguf file or Hugging Face folder "
                    "run and trained in the process); README: Bring your own model")
        ->capture_default_str();
    cmd->add_option("--checkpoint", o.policy.checkpoint, "schedule or lm policy: base weights (.pt) to start from");
    cmd->add_option("--adapter", o.policy.adapter, "schedule or lm policy: a LoRA adapter (.pt) to load on top");
    cmd->add_option("--noise", o.policy.noise, "heuristic policy: the chance of a random value per knob")
        ->capture_default_str();
    cmd->add_option("--policy-device", o.policy.device, "schedule or lm policy's device: cpu or cuda[:N] (lm: unless its spec names a GPU)")
        ->capture_default_str();
    cmd->add_option("--policy-seed", o.policy.seed, "schedule policy: weight initialization seed")
        ->capture_default_str();
  }
  cmd->add_option("--env", o.env, "evaluator (the GPU) or synthetic (a CPU reward table)")->capture_default_str();
  cmd->add_option("--env-seed", o.env_seed, "synthetic environment's seed")->capture_default_str();
  cmd->add_option_function<std::string>(
      "--scale", [&o](const std::string& s) { o.eval.scale = s; o.scale_given = true; },
      "kernelbench or small (default: the config's, else kernelbench)");
  add_eval_flags(cmd, o.eval);
  cmd->add_option("--log", o.log_path, "the evaluator's rollout log (JSONL; a rerun takes what it holds from it and evaluates nothing twice)");
  add_out_flags(cmd, o.out, resume_help);
}

}  // namespace kbrl::cli
