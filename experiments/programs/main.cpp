// kbrl-experiment: runs one experiment of the reports at a budget (see experiment.h), or lists them.
//   kbrl-experiment best_of_n --budget smoke --results build/results
// --env evaluator (the GPU), synthetic (a fixed reward table on the CPU) or auto (the evaluator where
// a GPU is usable, else the synthetic table: what `ctest -L experiments` runs). Synthetic results go
// to RESULTS/synthetic/BUDGET/NAME/, never beside measured ones in RESULTS/BUDGET/NAME/.
// Exit codes: 0 done, 2 bad input, 1 harness error, 77 skipped (no GPU for the evaluator; with
// --check-gpu: no GPU usable).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <harness/record/build_commit.h>
#include <harness/evaluator.h>
#include <harness/gpu/gpu_session.h>
#include <harness/record/rollout_log.h>
#include <experiments/judge.h>
#include <experiments/report_schemas.h>
#include <experiments/run_setup.h>
#include <kbrl/cli_main.h>
#include <kbrl/error.h>
#include <serve/client.h>
#include <serve/local_server.h>

#include "experiment.h"

namespace kbrl {
namespace {

constexpr int kSkipped = kbrl::cli::kExitSkipped;

struct Options {
  std::string name;
  std::string budget = "smoke";
  std::string results = "results";
  std::string env = "evaluator";
  std::string mode = "fast";
  std::string tolerance = "strict";
  std::string inputs = "robust";
  std::string reward;  // "" = the experiment's own (Experiment::reward), else speedup
  std::string judge;   // "" = the experiment's own (Experiment::judge); none = no judge
  double judge_weight = 0.5;
  std::string scale;  // default: kernelbench (evaluator) or small (synthetic)
  std::string seeds;  // "" = the budget's; else a comma-separated list (with_seeds)
  std::string policy;  // "" = the schedule policy; lm:MODEL[,...] or endpoint:URL[,...] = a language model
  std::string arch;    // NVRTC target; without a GPU, compile only for it
  std::string samples;  // a samples.csv for selection and length_control (default: best_of_n's)
  std::string evaluator;   // kbrl serve URL(s): evaluate there instead of in this process
  std::string token_file;  // their bearer token
  std::string gpus;        // "" = the evaluator in this process on device 0; else an in-process kbrl serve on these
  std::string from = "rlvr";     // where experiments start: rlvr (base_policy's checkpoint) or loaded (--policy as given)
  std::string overlap = "auto";  // sample the next task while one is evaluated: auto, on, off
  bool list = false;
  bool check_gpu = false;
};

// The environment --env names: auto is the evaluator where a GPU is usable (or where --arch or a
// language model asks for the evaluator's compile-only path), else the synthetic table; `reason`
// gets why there is no GPU when auto falls back.
std::string resolve_env(const Options& o, std::string* reason) {
  KBRL_CHECK_INPUT(o.env == "evaluator" || o.env == "synthetic" || o.env == "auto",
                   "unknown --env '{}' (evaluator, synthetic, auto)", o.env);
  if (!o.gpus.empty()) {
    KBRL_CHECK_INPUT(o.evaluator.empty(), "--gpus evaluates on this host's GPUs, --evaluator on a kbrl serve: not both");
    KBRL_CHECK_INPUT(o.env != "synthetic", "--gpus picks the evaluator's GPUs: not with --env synthetic");
    return "evaluator";
  }
  if (!o.evaluator.empty()) {
    KBRL_CHECK_INPUT(o.env != "synthetic", "--evaluator sends the samples to kbrl serve: not with --env synthetic");
    KBRL_CHECK_INPUT(o.arch.empty(), "--arch with --evaluator: the server compiles (start it with --arch)");
    return "served";
  }
  if (o.env != "auto" || !o.arch.empty() || !o.policy.empty()) return o.env == "auto" ? "evaluator" : o.env;
  return gpu_available(reason) ? "evaluator" : "synthetic";
}

// --overlap: on and off as said; auto overlaps where a language model in this process samples on a
// GPU the evaluator does not time on (--policy lm:...,device=cuda:N with an evaluator on other GPUs:
// --gpus not listing N, or the in-process evaluator on GPU 0 and N != 0). Anywhere else (a model on the
// CPU, a served model or evaluator whose GPUs this process cannot see) sampling waits for evaluation.
bool overlap_sampling(const Options& o, const std::string& env_name, const std::vector<int>& evaluator_gpus) {
  if (o.overlap != "auto") return o.overlap == "on";
  if (env_name != "evaluator" || !is_lm_policy(o.policy)) return false;
  PolicyOptions p;
  p.name = o.policy;
  const std::string device = policy_device(p);
  if (device.rfind("cuda", 0) != 0) return false;
  const int model_gpu = device.size() > 5 ? std::atoi(device.c_str() + 5) : 0;  // cuda or cuda:N
  const std::vector<int> timing = o.gpus.empty() ? std::vector<int>{0} : evaluator_gpus;
  return std::find(timing.begin(), timing.end(), model_gpu) == timing.end();
}

// --check-gpu: what --env auto would decide, for scripts (the plots case of ctest -L experiments).
int check_gpu() {
  std::string reason;
  if (gpu_available(&reason)) {
    std::printf("kbrl-experiment: a GPU is usable: --env auto runs the evaluator\n");
    return 0;
  }
  std::printf("kbrl-experiment: no GPU (%s): --env auto runs on the synthetic reward table\n", reason.c_str());
  return kSkipped;
}

void print_list() {
  for (const Experiment& e : experiments()) {
    std::string needs, loaded;  // loaded: what it needs with --from loaded (no base_policy)
    for (const auto& n : e.needs) {
      needs += (needs.empty() ? "" : ", ") + n;
      if (n != "base_policy") loaded += (loaded.empty() ? "" : ", ") + n;
    }
    if (e.starts_from_rlvr()) needs += "; with --from loaded: " + (loaded.empty() ? std::string("nothing") : loaded);
    std::printf("%-16s %s%s\n", e.name.c_str(), e.reproduces.c_str(),
                needs.empty() ? "" : ("  [needs: " + needs + "]").c_str());
  }
}

int run(const Options& o) {
  if (o.list) {
    print_list();
    return 0;
  }
  if (o.check_gpu) return check_gpu();
  KBRL_CHECK_INPUT(!o.name.empty(), "name an experiment (--list shows them)");
  const Experiment& experiment = experiment_named(o.name);
  ExperimentContext ctx;
  ctx.experiment = experiment.name;
  ctx.budget = experiment_budget(o.budget);
  if (!o.seeds.empty()) ctx.budget = with_seeds(ctx.budget, o.seeds);
  std::string no_gpu;
  const std::string env_name = resolve_env(o, &no_gpu);
  const bool synthetic = env_name == "synthetic";
  std::filesystem::path root = o.results;
  if (synthetic) root /= "synthetic";  // never beside measured results
  ctx.results = root / o.budget;
  ctx.dir = ctx.results / experiment.name;
  ctx.env_flag = o.env;
  // The evaluator's settings are recorded in settings.json: refuse a bad value even where no
  // evaluator runs (--env synthetic), so nothing records a setting that does not exist.
  parse_timing_mode(o.mode);
  parse_tolerance(o.tolerance);
  parse_input_checks(o.inputs);
  // The reward and judge: the flags', else the experiment's own (the GRPO report's experiment trains
  // on its composite reward with the judge), else the gated speedup and no judge.
  const std::string reward_name =
      !o.reward.empty() ? o.reward : (experiment.reward.empty() ? "speedup" : experiment.reward);
  const std::string judge_name = !o.judge.empty() ? (o.judge == "none" ? "" : o.judge) : experiment.judge;
  const RewardConfig reward = parse_reward(reward_name);
  std::unique_ptr<Judge> judge = judge_name.empty() ? nullptr : make_judge(judge_name);
  KBRL_CHECK_INPUT(std::isfinite(o.judge_weight) && o.judge_weight >= 0, "--judge-weight must be >= 0 (got {})",
                   o.judge_weight);
  ctx.policy_spec = o.policy;
  if (!o.samples.empty()) {
    KBRL_CHECK_INPUT(experiment.name == "selection" || experiment.name == "length_control",
                     "--samples is read by selection and length_control, not {}", experiment.name);
    KBRL_CHECK_INPUT(std::filesystem::is_regular_file(o.samples), "--samples {}: no such file", o.samples);
    ctx.samples_file = o.samples;
  }
  if (!o.policy.empty()) {
    KBRL_CHECK_INPUT(is_text_policy(o.policy),
                     "--policy takes a language model, lm:MODEL[,...] or endpoint:URL[,model=NAME,...] (got '{}'); "
                     "without it each experiment uses the schedule policy",
                     o.policy);
    KBRL_CHECK_INPUT(!is_endpoint_policy(o.policy) || experiment.takes_served_model,
                     "{} trains its policy, and a served model (--policy endpoint:...) cannot be trained here: "
                     "use --policy lm:MODEL (the model in this process), or run a served model in: {}",
                     experiment.name, fmt::join(served_model_experiments(), ", "));
    KBRL_CHECK_INPUT(!synthetic, "--env synthetic scores knob configurations, not a language model's text");
    ctx.budget = language_model_budget(ctx.budget);
  }
  KBRL_CHECK_INPUT(o.from == "rlvr" || o.from == "loaded", "unknown --from '{}' (rlvr, loaded)", o.from);
  if (o.from == "loaded") {
    std::vector<std::string> starting;
    for (const Experiment& e : experiments())
      if (e.starts_from_rlvr()) starting.push_back(e.name);
    KBRL_CHECK_INPUT(experiment.starts_from_rlvr(),
                     "--from loaded starts an experiment from the --policy as given instead of base_policy's RLVR "
                     "checkpoint; {} does not start from that checkpoint (--from applies to: {})",
                     experiment.name, fmt::join(starting, ", "));
    KBRL_CHECK_INPUT(is_lm_policy(o.policy),
                     "--from loaded samples a language model as given: name it with --policy lm:MODEL[,adapter=FILE] "
                     "(a served model is always sampled as served)");
    ctx.from_loaded = true;
  }
  KBRL_CHECK_INPUT(o.overlap == "auto" || o.overlap == "on" || o.overlap == "off",
                   "unknown --overlap '{}' (auto, on, off)", o.overlap);
  ctx.scale = parse_scale(o.scale.empty() ? (synthetic ? "small" : "kernelbench") : o.scale);
  const auto start = std::chrono::steady_clock::now();
  ctx.progress = [&](const std::string& line) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[%s %7.1f s] %s\n", experiment.name.c_str(), s, line.c_str());
  };

  check_inputs_finished(ctx, experiment);  // after the flags' checks, before anything is written or run
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<RolloutLog> log;
  std::unique_ptr<serving::LocalServer> local_server;  // --gpus: every listed GPU behind one queue
  std::vector<int> gpus;                               // their indices (settings.json)
  std::optional<bool> compile_only;                    // the evaluator in this process or --gpus: compiling only?
  EvalFlags flags;  // the evaluator's settings of this run (in process or on a server)
  flags.scale = std::string(to_string(ctx.scale));
  flags.mode = o.mode;
  flags.tolerance = o.tolerance;
  flags.inputs = o.inputs;
  flags.arch = o.arch;
  flags.reward = reward_name;
  std::unique_ptr<Environment> env;
  if (synthetic) {
    env = std::make_unique<SyntheticEnvironment>(20260301, 0.5, reward);
  } else if (env_name == "served") {
    env = std::make_unique<ServedEnvironment>(serving::parse_server_urls(o.evaluator),
                                              serving::read_token_file(o.token_file), eval_settings(flags));
  } else {
    std::string reason;
    const bool gpu = gpu_available(&reason);
    if (!gpu && o.arch.empty()) {
      std::printf("kbrl-experiment %s: SKIPPED: the experiments evaluate kernels on a GPU and none is "
                  "usable here (%s). Use --env synthetic for a CPU dry run of the plumbing, or --arch "
                  "sm_90 to compile only.\n",
                  experiment.name.c_str(), reason.c_str());
      return kSkipped;
    }
    EvalSettings s = eval_settings(flags);
    s.compile_only = !gpu;
    ctx.compile_only = !gpu;
    compile_only = !gpu;
    if (!gpu)
      std::fprintf(stderr, "kbrl-experiment %s: no GPU (%s): compiling only, for %s; compiled candidates get "
                   "outcome not_run\n", experiment.name.c_str(), reason.c_str(), o.arch.c_str());
    s.cache_dir = std::filesystem::path(o.results) / "compile_cache";  // shared by the experiments' runs
    if (const char* w = std::getenv("KBRL_WORKER"); w == nullptr || *w == 0) s.worker_program = KBRL_CLI;
    std::filesystem::create_directories(ctx.dir);
    if (!o.gpus.empty()) {
      // kbrl serve's scheduler in this process: one worker per GPU, one queue, the same rollout log.
      serving::SchedulerOptions scheduling;
      scheduling.gpus = serving::parse_gpu_list(o.gpus, s.compile_only);
      scheduling.log = ctx.dir / "rollouts.jsonl";
      gpus = scheduling.gpus;
      local_server = std::make_unique<serving::LocalServer>(s, scheduling);
      env = std::make_unique<ServedEnvironment>(std::vector<std::string>{local_server->url()}, "", s);
    } else {
      evaluator = std::make_unique<Evaluator>(s);
      log = std::make_unique<RolloutLog>(ctx.dir / "rollouts.jsonl");  // a rerun's records come back from it
      evaluator->attach_log(log.get());
      env = std::make_unique<EvaluatorEnvironment>(*evaluator);
    }
  }
  ctx.overlap_sampling = overlap_sampling(o, env_name, gpus);
  std::filesystem::create_directories(ctx.dir);
  std::unique_ptr<CsvTable> judge_csv;
  std::unique_ptr<JudgedEnvironment> judged;
  if (judge) {
    judge_csv = std::make_unique<CsvTable>(ctx.dir / "judge_scores.csv", schemas::judge_scores());
    judged = std::make_unique<JudgedEnvironment>(*env, std::move(judge), o.judge_weight, judge_csv.get());
  }
  ctx.env = judged ? static_cast<Environment*>(judged.get()) : env.get();
  if (o.env == "auto" && synthetic) {
    std::printf("kbrl-experiment %s: no GPU (%s): running on the synthetic reward table instead of the "
                "evaluator; its results in %s are not measurements\n",
                experiment.name.c_str(), no_gpu.c_str(), ctx.dir.string().c_str());
    std::fflush(stdout);
  }
  nlohmann::json settings;
  {
    settings = {{"experiment", experiment.name}, {"reproduces", experiment.reproduces},
                {"budget", o.budget},           {"env", env_name},
                {"env_requested", o.env},
                {"scale", std::string(to_string(ctx.scale))},
                {"mode", o.mode},               {"tolerance", o.tolerance},
                {"inputs", o.inputs},           {"reward", reward_name},
                {"judge", judge_name},          {"judge_weight", judge_name.empty() ? 0.0 : o.judge_weight},
                {"kbrl_version", std::string(kbrl_version())},
                {"commit", std::string(kbrl_commit())},
                {"policy", o.policy},           {"arch", o.arch},
                {"evaluator", o.evaluator},
                {"gpus", gpus},
                {"from", o.from},
                {"overlap", ctx.overlap_sampling},
                {"settings", budget_json(ctx.budget)}};
    if (compile_only) settings["compile_only"] = *compile_only;
    if (evaluator && !evaluator->settings().compile_only) settings["device"] = evaluator->device().name;
    // --gpus: each record in rollouts.jsonl names the GPU that evaluated it.
    if (synthetic) settings["note"] = "synthetic reward table (a fixed table in place of the GPU evaluator): not measurements";
    if (!no_gpu.empty()) settings["no_gpu"] = no_gpu;
    // false until the run returns: an experiment that reads this one's outputs refuses a run that
    // stopped part way (its CSVs may hold only headers).
    settings["finished"] = false;
    std::ofstream(ctx.dir / "settings.json") << settings.dump(2) << "\n";
  }
  ctx.progress(fmt::format("start: budget {}, env {}, scale {}, results in {}", o.budget, env_name,
                           to_string(ctx.scale), ctx.dir.string()));
  experiment.run(ctx);
  settings["finished"] = true;
  settings["wall_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ofstream(ctx.dir / "settings.json") << settings.dump(2) << "\n";
  ctx.progress(fmt::format("done ({} s of evaluation)", cell(env->evaluator_seconds())));
  if (judged && judged->failures() > 0)
    std::fprintf(stderr, "kbrl-experiment %s: the judge's answer was unusable for %lld candidates (scored 0; see "
                 "judge_scores.csv, column judge_error)\n", experiment.name.c_str(),
                 static_cast<long long>(judged->failures()));
  if (synthetic)
    std::printf("kbrl-experiment %s: done on the synthetic reward table: %s holds no measurements\n",
                experiment.name.c_str(), ctx.dir.string().c_str());
  return 0;
}

}  // namespace
}  // namespace kbrl

int main(int argc, char** argv) {
  kbrl::Options o;
  CLI::App app{"kbrl-experiment: reproduce one table of the reports (CSV under --results)"};
  app.add_option("name", o.name, "the experiment (see --list)");
  app.add_flag("--list", o.list, "list the experiments and the tables they reproduce");
  app.add_option("--budget", o.budget, "smoke (minutes), paper (the reports' settings) or tiny")->capture_default_str();
  app.add_option("--results", o.results,
                 "results root; outputs go to ROOT/BUDGET/NAME/ (synthetic: ROOT/synthetic/BUDGET/NAME/)")
      ->capture_default_str();
  app.add_option("--env", o.env,
                 "evaluator (GPU), synthetic (a fixed reward table, CPU) or auto (the evaluator where a GPU "
                 "is usable, else synthetic)")
      ->capture_default_str();
  app.add_flag("--check-gpu", o.check_gpu,
               "say whether a GPU is usable (what --env auto decides): exit 0 if so, 77 if not");
  app.add_option("--mode", o.mode, "timing mode of the evaluator: fast, full or adaptive")->capture_default_str();
  app.add_option("--tolerance", o.tolerance, "strict (1e-4) or legacy (1e-2, the reports' era)")->capture_default_str();
  app.add_option("--inputs", o.inputs,
                 "robust (KernelBench's inputs, a stress trial and mixes of the two) or kernelbench (KernelBench's only)")
      ->capture_default_str();
  app.add_option("--reward", o.reward,
                 "speedup (gated speedup), composite[:alpha,beta,gamma,r_max] (the GRPO report's Eq. 1, bare: "
                 "0.5,1,0.5,3; without a GPU only the compile term can be earned), normalized, or threshold:T "
                 "(1 above T times the reference's speed, else 0). Default: speedup, or the experiment's own "
                 "(base_policy: normalized, grpo_report: composite)");
  app.add_option("--judge", o.judge,
                 "add the GRPO report's LLM-as-a-judge bonus to every reward: rules (deterministic checks of the "
                 "source), endpoint:URL[,model=NAME,...] (a model behind an OpenAI-compatible server) or none. "
                 "Default: none, or the experiment's own (grpo_report: rules)");
  app.add_option("--judge-weight", o.judge_weight, "lambda: reward + lambda * the judge's mean score")
      ->capture_default_str();
  app.add_option("--seeds", o.seeds,
                 "the runs' seeds, comma-separated (default: the budget's, 42,43 at paper and 42,43,44 for SDPO): "
                 "best-of-N, selection, self-improvement and SDPO run each, the other experiments take the first");
  app.add_option("--scale", o.scale, "kernelbench or small (default: kernelbench; small with --env synthetic)");
  app.add_option("--policy", o.policy,
                 "a language model as the policy: lm:MODEL[,key=value...] (in this process, every experiment; "
                 "the reports' temperature 0.25, LoRA rank 16, lr 1e-5 at paper budget) or "
                 "endpoint:URL[,model=NAME,...] (served: policy_sweep, best_of_n, selection and length_control). "
                 "Default: the schedule policy");
  app.add_option("--samples", o.samples,
                 "selection and length_control: read this samples.csv (e.g. from kbrl sample) instead of "
                 "best_of_n's");
  app.add_option("--arch", o.arch, "NVRTC target, e.g. sm_90; without a GPU the experiment compiles only");
  app.add_option("--evaluator", o.evaluator,
                 "evaluate on kbrl serve instead of in this process: http://host:port (several, comma-separated, "
                 "are tried in turn); the server's scale and GPUs apply, --mode/--tolerance/--inputs/--reward travel "
                 "with each sample");
  app.add_option("--token-file", o.token_file, "a file holding the --evaluator servers' bearer token");
  app.add_option("--gpus", o.gpus,
                 "evaluate on these GPUs of this host (all, or indices like 0,1) through kbrl serve's scheduler in "
                 "this process: one worker per GPU, one queue (default: the evaluator in this process on GPU 0)");
  app.add_option("--from", o.from,
                 "where best_of_n and the adaptation experiments start: rlvr (base_policy's RLVR checkpoint, the "
                 "reports' setup) or loaded (the --policy lm:MODEL as given, e.g. with adapter=FILE; base_policy "
                 "need not run)")
      ->capture_default_str();
  app.add_option("--overlap", o.overlap,
                 "sample the next task while the last one's samples are evaluated: auto (where the language "
                 "model's GPU is not one the evaluator times on, e.g. device=cuda:0 with --gpus 1,2,3), on or off")
      ->capture_default_str();
  app.set_version_flag("--version", "kbrl-experiment " + std::string(kbrl::kbrl_version()));
  return kbrl::cli::run_program("kbrl-experiment", app, argc, argv, [&] {
    const int code = kbrl::run(o);
    kbrl::cli::fail_on_harness_errors(kbrl::harness_errors_recorded());
    return code;
  });
}
