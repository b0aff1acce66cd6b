// `kbrl eval` (one candidate file, with a human summary), `kbrl replay` (re-evaluate a rollout log
// and report agreement) and `kbrl worker` (the GPU worker process the evaluator starts).
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <kbrl/cli_main.h>
#include <kbrl/error.h>

#include "commands.h"
#include "json_output.h"
#include "out_dir.h"
#include "run_options.h"
#include <harness/compile/compile.h>
#include <harness/evaluate_actions.h>
#include <harness/evaluator.h>
#include <harness/worker/gpu_protocol.h>
#include <harness/record/json_text.h>
#include <harness/record/kernelbench_result.h>
#include <harness/record/rollout_log.h>
#include <kernels/action.h>
#include <kernels/candidate_file.h>
#include <kernels/kernelbench_import.h>
#include <reference/task_registry.h>
#include <serve/client.h>

namespace kbrl::cli {
namespace {

struct EvalOptions {
  int task = 0;
  std::string kernel;
  std::string json_path;
  std::string kernelbench_json_path;  // KernelBench's result fields
  std::string log_path;
  std::string server;      // "" = evaluate here; else kbrl serve URL(s)
  std::string token_file;  // the server's bearer token
  EvalFlags flags;  // the scale is flags.scale
};

EvalSettings settings_from(const EvalOptions& o) { return eval_settings(o.flags); }

/// The NVRTC target `kbrl eval` compiles for on a machine without a GPU when no --arch is given.
constexpr const char* kDefaultCompileOnlyArch = "sm_90";

/// The summary, the --json file and the exit code of one evaluated candidate.
void report(const EvalOptions& o, const EvalRecord& record, JsonOutputFile& json);

void print_summary(const EvalRecord& r, const std::string& file) {
  std::cout << fmt::format("task {} ({}), scale {}\n", r.task_id, r.task_name, to_string(r.scale));
  std::cout << fmt::format("  compile   {} in {:.3f} s{}\n", r.compile.ok ? "ok" : "FAILED", r.compile.seconds,
                           r.compile.cache_hit ? " (cached)" : "");
  for (const auto& f : r.compile.precision_findings) std::cout << "  precision " << f << "\n";
  for (const auto& t : r.trials) {
    const std::string accuracy =
        t.f64_error && t.f64_reference_error
            ? fmt::format("  vs float64 {:.3g} (float32 reference {:.3g})", *t.f64_error, *t.f64_reference_error)
            : "";
    std::cout << fmt::format("  trial {:<2} {:<18} {}  max abs err {:.3g}  max rel err {:.3g}{}{}\n", t.trial, t.seed_id,
                             t.passed ? "pass" : "FAIL", t.max_abs_error, t.max_rel_error, accuracy,
                             t.passed ? "" : "  " + t.failure);
  }
  if (r.runtime)
    std::cout << fmt::format("  candidate median {:.4f} ms (n={}, IQR {:.4f})\n", r.runtime->median_ms,
                             r.runtime->n, r.runtime->iqr_ms);
  if (r.reference)
    std::cout << fmt::format("  reference median {:.4f} ms (n={}, IQR {:.4f})\n", r.reference->median_ms,
                             r.reference->n, r.reference->iqr_ms);
  std::cout << fmt::format("  outcome   {}{}\n", to_string(r.outcome),
                           r.outcome_detail.empty() ? "" : ": " + log_naming_file(r.outcome_detail, file));
  std::cout << fmt::format("  speedup   {:.3f}x   reward {:.4f}{}\n", r.speedup, r.reward,
                           r.flags.empty() ? "" : fmt::format("   flags {}", fmt::join(r.flags, ",")));
  if (r.speedup_ci)
    std::cout << fmt::format("  95% CI    [{:.3f}, {:.3f}]x   fast_1 {}   sig_fast_1 {}\n", r.speedup_ci->low,
                             r.speedup_ci->high, is_fast(r) ? "yes" : "no", is_significantly_fast(r) ? "yes" : "no");
  if (!r.device.empty()) std::cout << "  device    " << r.device << "\n";
  if (!r.gpu_stage_ms.empty()) {
    std::string stages;
    for (const char* stage : {"accuracy", "load", "check", "time"})
      if (auto it = r.gpu_stage_ms.find(stage); it != r.gpu_stage_ms.end())
        stages += fmt::format("{}{} {:.1f} ms", stages.empty() ? "" : ", ", stage, it->second);
    std::cout << "  gpu time  " << stages << "\n";
  }
  if (!r.compile.ok && !r.compile.log.empty()) std::cout << "--- compile log ---\n" << log_naming_file(r.compile.log, file) << "\n";
}

/// The record of the candidate file evaluated by a `kbrl serve` (its scale and evaluator flags are
/// the server's; mode, tolerance, inputs and reward travel with the item).
EvalRecord evaluate_on_server(const EvalOptions& o, const std::string& raw) {
  KBRL_CHECK_INPUT(o.flags.scale == "kernelbench" || o.flags.scale.empty(),
                   "--scale with --server: the server's scale applies (start it with --scale)");
  KBRL_CHECK_INPUT(is_valid_utf8(raw), "--server: {} is not UTF-8 text, which is all a JSON request carries: "
                   "evaluate it here (without --server)", o.kernel);
  serving::ClientOptions client;
  client.urls = serving::parse_server_urls(o.server);
  client.token = serving::read_token_file(o.token_file);
  // A KernelBench-format answer is a model's text: the server imports it as realize() does here.
  const nlohmann::json item = {{"task_id", o.task},          {is_kernelbench_answer(raw) ? "text" : "candidate", raw},
                               {"mode", o.flags.mode},       {"tolerance", o.flags.tolerance},
                               {"inputs", o.flags.inputs},   {"reward", o.flags.reward}};
  return serving::Client(client).evaluate(nlohmann::json::array({item})).at(0);
}

void run_eval(const EvalOptions& o) {
  JsonOutputFile json(o.json_path, o.kernel);  // refused or failing before anything is evaluated
  if (!o.server.empty()) {
    const EvalRecord record = evaluate_on_server(o, read_candidate_file(o.kernel));
    if (!o.log_path.empty()) RolloutLog(o.log_path).append(record);
    return report(o, record, json);
  }
  const TaskSpec spec = task_spec(o.task, parse_scale(o.flags.scale));
  // Read once (a regular file of at most 16 MiB, else InputError): the record's raw action is the
  // text the candidate was parsed from.
  const std::string raw = read_candidate_file(o.kernel);
  // A KernelBench-format answer (Python ModelNew with load_inline) is imported as a model's text is.
  std::optional<PreparedAction> answer;
  if (is_kernelbench_answer(raw)) answer = prepare_action(spec, {{ActionKind::text, {}, raw}, 0, ""});
  const std::optional<Candidate> candidate =
      answer ? answer->real.candidate
             : std::optional(parse_candidate_file(raw, spec, std::filesystem::path(o.kernel).filename().string()));
  EvalSettings settings = settings_from(o);
  if (std::string why; !gpu_available(&why)) {
    // Without a GPU, still say whether the kernel compiles: for --arch, else for an H100.
    settings.compile_only = true;
    if (settings.arch.empty()) settings.arch = kDefaultCompileOnlyArch;
    std::cerr << fmt::format("kbrl eval: no GPU ({}): compiling {} for {} only\n", why, o.kernel, settings.arch);
  }
  Evaluator evaluator(settings);
  std::unique_ptr<RolloutLog> log;
  if (!o.log_path.empty()) {
    log = std::make_unique<RolloutLog>(o.log_path);
    evaluator.attach_log(log.get());
  }
  if (!candidate) {
    std::cerr << fmt::format("kbrl eval: {}: {}\n", o.kernel, answer->real.format_error);
    return report(o, record_without_candidate(evaluator, spec.id, *answer, std::nullopt), json);
  }
  if (answer) return report(o, evaluator.evaluate(*candidate, raw, std::nullopt, answer->info), json);
  report(o, evaluator.evaluate(*candidate, raw), json);
}

void report(const EvalOptions& o, const EvalRecord& record, JsonOutputFile& json) {
  print_summary(record, o.kernel);
  // The record's strings are UTF-8, with the exact bytes of any that were not beside them
  // (json_text.h): a candidate file in any encoding is written.
  if (!o.json_path.empty()) json.write(nlohmann::json(record).dump(2) + "\n");
  if (!o.kernelbench_json_path.empty())
    write_whole_file(o.kernelbench_json_path, kernelbench_result(record).dump(2) + "\n");
  // The candidate's verdict is the exit code: 0 correct (or, compiling only, compiled), 4 anything else.
  if (record.outcome != Outcome::ok && record.outcome != Outcome::not_run)
    command_exit_code() = kExitCandidateFailed;
}

/// A logged record evaluated again. A text action is realized again from its raw text (the one
/// place text becomes a candidate), so a change in code extraction shows as a different outcome.
EvalRecord replay_one(Evaluator& evaluator, const EvalRecord& logged) {
  if (logged.action.kind != ActionKind::text)
    return evaluator.evaluate(logged.candidate, logged.raw_action, logged.policy, logged.action);
  const TaskSpec task = task_spec(logged.task_id, logged.scale);
  const Realized real = realize(task, {ActionKind::text, {}, logged.raw_action});
  if (!real.candidate)
    return evaluator.format_error(logged.task_id, logged.raw_action, logged.action, real.format_error, logged.policy,
                                  real.failure);
  if (!(*real.candidate == logged.candidate))
    std::cerr << fmt::format("kbrl: replay: task {}: the text now makes another candidate than the logged one\n",
                             logged.task_id);
  return evaluator.evaluate(*real.candidate, logged.raw_action, logged.policy, logged.action);
}

void run_replay(const EvalOptions& o, const std::string& log_path) {
  const std::vector<EvalRecord> records = read_rollout_log(log_path);
  KBRL_CHECK_INPUT(!records.empty(), "{} holds no records", log_path);
  int agree = 0;
  std::cout << fmt::format("{:>4} {:>4}  {:<16} {:<16} {:>9} {:>9}\n", "#", "task", "logged outcome",
                           "replayed", "logged x", "replay x");
  std::unique_ptr<Evaluator> evaluator;
  for (size_t i = 0; i < records.size(); ++i) {
    const EvalRecord& logged = records[i];
    EvalOptions same = o;
    same.flags.scale = std::string(to_string(logged.scale));
    if (!evaluator || evaluator->settings().scale != logged.scale)
      evaluator = std::make_unique<Evaluator>(settings_from(same));
    const EvalRecord now = replay_one(*evaluator, logged);
    const bool same_outcome = now.outcome == logged.outcome;
    agree += same_outcome;
    std::cout << fmt::format("{:>4} {:>4}  {:<16} {:<16} {:>9.3f} {:>9.3f}{}\n", i, logged.task_id,
                             to_string(logged.outcome), to_string(now.outcome), logged.speedup, now.speedup,
                             same_outcome ? "" : "  DIFFERS");
  }
  std::cout << fmt::format("{} of {} records replayed to the same outcome\n", agree, records.size());
  if (agree != static_cast<int>(records.size()))
    throw Error(fmt::format("{} records replayed to a different outcome", records.size() - agree));
}

void add_eval_options(CLI::App* cmd, EvalOptions& o) { add_eval_flags(cmd, o.flags); }

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto* cmd = app.add_subcommand("eval", "Compile, check, time and reward one candidate kernel file");
  cmd->add_option("--task", o->task, "KernelBench level-1 task id")->required();
  cmd->add_option("--kernel", o->kernel, "candidate .cu file with `// kbrl:` launch lines, or a KernelBench-format "
                                         "answer (Python ModelNew with load_inline: imported, docs/kernelbench.md)")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--scale", o->flags.scale, "kernelbench or small")->capture_default_str();
  cmd->add_option("--json", o->json_path,
                  "write the full record as JSON here (not the --kernel file; opened before evaluating: a file "
                  "that cannot be opened or written exits 1)");
  cmd->add_option("--kernelbench-json", o->kernelbench_json_path,
                  "write KernelBench's result fields here too (compiled, correctness, runtime, ref_runtime, "
                  "runtime_stats, ref_runtime_stats, metadata)");
  cmd->add_option("--log", o->log_path, "append the record to this rollout log (JSONL)");
  cmd->add_option("--server", o->server,
                  "evaluate on a kbrl serve instead of here: http://host:port (several, comma-separated, "
                  "are tried in turn)");
  cmd->add_option("--token-file", o->token_file, "a file holding the server's bearer token");
  add_eval_options(cmd, *o);
  cmd->footer(
      "Exit codes: 0 correct (compiling only: compiled), 4 evaluated and not correct, 2 bad input (nothing "
      "evaluated), 1 a fault of the machine or the harness, or a --json file that cannot be opened or written, "
      "3 a bug in kbrl.");
  cmd->callback([o] { run_eval(*o); });
}

void add_replay_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  auto log_path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("replay", "Re-evaluate every record of a rollout log and report agreement");
  cmd->add_option("log", *log_path, "the rollout log (JSONL)")->required()->check(CLI::ExistingFile);
  add_eval_options(cmd, *o);
  cmd->callback([o, log_path] { run_replay(*o, *log_path); });
}

void add_worker_command(CLI::App& app) {
  auto device = std::make_shared<int>(0);
  auto* cmd = app.add_subcommand("worker", "(internal) the GPU worker process the evaluator starts");
  cmd->group("");  // hidden from --help
  cmd->add_option("--device", *device, "CUDA device index");
  cmd->callback([device] { std::exit(run_gpu_worker(*device)); });
}

}  // namespace kbrl::cli
