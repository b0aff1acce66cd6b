// One candidate through the evaluator's stages (harness/README.md): compile (its result given),
// preflight (harness/compile/compile.h), the run on the worker's GPU (check and time beside the reference),
// reward, record. Each stage's value decides whether the next one runs; every end is a record,
// appended to the rollout log.
#include <optional>
#include <string>
#include <vector>

#include <harness/record/rollout_log.h>
#include <harness/worker/gpu_protocol.h>

#include "evaluator.h"
#include "evaluator_impl.h"

namespace kbrl {
namespace {

std::vector<std::string> findings_text(const PrecisionAudit& audit) {
  std::vector<std::string> out;
  for (const auto& f : audit.findings)
    out.push_back(fmt::format("{} ({} line {}: {})", to_string(f.category), f.where, f.line, f.evidence));
  return out;
}

/// The run stage's input: `candidate` compiled as `module`, checked and timed beside the reference
/// under `settings`, its warm-ups drawn from the run's secret and the candidate's key.
GpuJob gpu_job(const TaskSpec& spec, const Candidate& candidate, const CompiledModule& module,
               const EvalSettings& settings, uint64_t secret, const std::string& key) {
  GpuJob job;
  job.task_id = spec.id;
  job.scale = spec.scale;
  job.candidate = candidate;
  job.cubin = module.cubin;
  job.check.trials = settings.trials;
  job.check.robust_inputs = settings.inputs == InputChecks::robust;
  job.check.atol = settings.atol;
  job.check.rtol = settings.rtol;
  job.check.secret = secret;
  job.timing.stop = stop_config(settings.mode);
  job.timing.warmups = warmups_for(secret, key);
  job.timing.time_reference = true;  // paired with every candidate, never reused from another
  return job;
}

/// The run stage's result: the worker's, or the outcome its failure means for the candidate (a
/// timeout, a crash, or a harness fault that a rerun evaluates again).
GpuJobResult run_result(const CallResult& call, double timeout_seconds) {
  GpuJobResult result;
  switch (call.status) {
    case CallStatus::ok:
      result = call.reply.at("result").get<GpuJobResult>();
      if (result.outcome == Outcome::harness_error) count_harness_errors(1);  // e.g. the GPU out of memory
      break;
    case CallStatus::timeout:
      result.outcome = Outcome::timeout;
      result.detail = fmt::format("no result within {} s: the worker was killed and will be restarted",
                                  timeout_seconds);
      break;
    case CallStatus::crashed:
    case CallStatus::protocol_error:
      result.outcome = Outcome::runtime_error;
      result.detail = fmt::format("the worker {} while running the candidate: {}", to_string(call.status),
                                  call.detail);
      break;
    case CallStatus::handler_error:  // the worker lives on; the batch goes on
      result.outcome = Outcome::harness_error;
      count_harness_errors(1);
      result.detail = fmt::format("the GPU worker failed on this candidate (a harness fault, not the candidate's; a "
                                  "rerun evaluates it again): {}",
                                  call.reply.dump());
      break;
  }
  return result;
}

}  // namespace

EvalRecord Evaluator::finish(const TaskSpec& spec, const KeyedCandidate& keyed_candidate,
                             const CompileResult& compiled, const std::string& raw_action,
                             const std::optional<std::string>& policy, const ActionInfo& action) {
  const Candidate& candidate = keyed_candidate.candidate;
  EvalRecord record = new_record(spec, keyed_candidate.key, raw_action, action, policy);
  record.candidate = candidate;
  record.compile.ok = compiled.ok();
  record.compile.log = compiled.log;
  record.compile.seconds = compiled.seconds;
  record.compile.cache_hit = compiled.cache_hit;
  auto done = [&](EvalRecord& r) -> EvalRecord {
    if (log_) log_->append(r);
    return r;
  };

  if (!compiled.ok()) {
    record.outcome = Outcome::compile_error;
    record.outcome_detail = compiled.error();
    record.reward = compute_reward({.task_id = spec.id}, settings_.reward).reward;
    return done(record);
  }
  const CompiledModule& module = compiled.module();
  const PrecisionAudit& audit = module.audit;
  record.compile.precision_findings = findings_text(audit);
  if (const std::optional<std::string> unlaunchable = preflight(candidate, module)) {
    record.outcome = Outcome::launch_error;
    record.outcome_detail = *unlaunchable + " (refused before any launch)";
    record.reward = compute_reward({.task_id = spec.id, .compiled = true}, settings_.reward).reward;
    return done(record);
  }
  if (settings_.compile_only) {
    record.outcome = Outcome::not_run;
    record.outcome_detail = fmt::format("compiled for {}; no GPU to run it", settings_.arch);
    record.reward = compute_reward({.task_id = spec.id, .compiled = true}, settings_.reward).reward;
    return done(record);
  }
  record.device = device().name;

  const CallResult call =
      impl_->call({{"op", "run"}, {"job", gpu_job(spec, candidate, module, settings_, impl_->secret, record.key)}},
                  settings_.job_timeout_seconds);
  const GpuJobResult result = run_result(call, settings_.job_timeout_seconds);
  record.outcome = result.outcome;
  record.outcome_detail = result.detail;
  record.trials = result.trials;
  record.gpu_stage_ms = result.stage_ms;
  if (!result.reference_ms.empty()) {
    record.reference = summarize(result.reference_ms);
    impl_->reference[spec.id] = *record.reference;
  }
  if (!result.candidate_ms.empty()) record.runtime = summarize(result.candidate_ms);

  RewardInput input;
  input.task_id = spec.id;
  input.compiled = true;
  input.correct = result.outcome == Outcome::ok && record.runtime.has_value();
  input.reference_ms = record.reference ? record.reference->median_ms : 0.0;
  input.candidate_ms = record.runtime ? record.runtime->median_ms : 0.0;
  input.reduced_precision = audit.reduced_precision();
  if (input.correct) {
    const bool tf32 = audit.has(PrecisionCategory::tf32);
    input.floor_ms = floor_ms(spec.flops, spec.min_bytes, peaks(), tf32);
  }
  const RewardResult reward = compute_reward(input, settings_.reward);
  record.speedup = reward.speedup;
  record.reward = reward.reward;
  record.flags = reward.flags;
  if (reward.accepted && result.candidate_ms.size() >= 2 && result.reference_ms.size() == result.candidate_ms.size())
    record.speedup_ci = paired_speedup_interval(result.reference_ms, result.candidate_ms);
  if (reward.impossible) {
    record.outcome = Outcome::impossible;
    record.outcome_detail = fmt::format(
        "median {:.4g} ms is below the speed-of-light floor {:.4g} ms ({:.3g} GFLOP, {:.3g} GB at the "
        "measured peaks) by more than {:.0f}%",
        input.candidate_ms, input.floor_ms, spec.flops / 1e9, spec.min_bytes / 1e9,
        settings_.reward.sol_margin * 100);
  }
  return done(record);
}

}  // namespace kbrl
