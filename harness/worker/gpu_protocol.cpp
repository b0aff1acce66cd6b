#include "gpu_protocol.h"

#include <cstdio>

#include <harness/stage_values_json.h>  // a trial's JSON on the wire is the one the record keeps
#include <kbrl/base64.h>
#include <kbrl/error.h>
#include <kernels/candidate.h>

#include "worker.h"

namespace kbrl {

void to_json(nlohmann::json& j, const DeviceInfo& d) {
  j = {{"name", d.name},         {"arch", d.arch},       {"sm_count", d.sm_count},
       {"l2_bytes", d.l2_bytes}, {"memory_bytes", d.memory_bytes},
       {"cc_major", d.cc_major}, {"cc_minor", d.cc_minor}};
}
void from_json(const nlohmann::json& j, DeviceInfo& d) {
  j.at("name").get_to(d.name);
  j.at("arch").get_to(d.arch);
  j.at("sm_count").get_to(d.sm_count);
  j.at("l2_bytes").get_to(d.l2_bytes);
  j.at("memory_bytes").get_to(d.memory_bytes);
  j.at("cc_major").get_to(d.cc_major);
  j.at("cc_minor").get_to(d.cc_minor);
}

void to_json(nlohmann::json& j, const DevicePeaks& p) {
  j = {{"copy_bytes_per_s", p.copy_bytes_per_s},
       {"fp32_flops_per_s", p.fp32_flops_per_s},
       {"tf32_flops_per_s", p.tf32_flops_per_s}};
}
void from_json(const nlohmann::json& j, DevicePeaks& p) {
  j.at("copy_bytes_per_s").get_to(p.copy_bytes_per_s);
  j.at("fp32_flops_per_s").get_to(p.fp32_flops_per_s);
  j.at("tf32_flops_per_s").get_to(p.tf32_flops_per_s);
}

void to_json(nlohmann::json& j, const TimingSettings& t) {
  j = {{"target_rel_std", t.stop.target_rel_std},
       {"min_samples", t.stop.min_samples},
       {"max_samples", t.stop.max_samples},
       {"window", t.stop.window},
       {"time_budget_s", t.stop.time_budget.count()},
       {"warmups", t.warmups},
       {"time_reference", t.time_reference}};
}
void from_json(const nlohmann::json& j, TimingSettings& t) {
  j.at("target_rel_std").get_to(t.stop.target_rel_std);
  j.at("min_samples").get_to(t.stop.min_samples);
  j.at("max_samples").get_to(t.stop.max_samples);
  j.at("window").get_to(t.stop.window);
  t.stop.time_budget = std::chrono::duration<double>(j.at("time_budget_s").get<double>());
  j.at("warmups").get_to(t.warmups);
  j.at("time_reference").get_to(t.time_reference);
}

void to_json(nlohmann::json& j, const GpuJob& job) {
  j = {{"task_id", job.task_id},
       {"scale", std::string(to_string(job.scale))},
       {"candidate", job.candidate},
       {"cubin_base64", base64_encode(job.cubin)},
       {"trials", job.check.trials},
       {"robust_inputs", job.check.robust_inputs},
       {"atol", job.check.atol},
       {"rtol", job.check.rtol},
       {"secret", job.check.secret},
       {"timing", job.timing}};
}
void from_json(const nlohmann::json& j, GpuJob& job) {
  j.at("task_id").get_to(job.task_id);
  job.scale = parse_scale(j.at("scale").get<std::string>());
  job.candidate = candidate_from_json(j.at("candidate"));
  job.cubin = base64_decode(j.at("cubin_base64").get<std::string>());
  j.at("trials").get_to(job.check.trials);
  j.at("robust_inputs").get_to(job.check.robust_inputs);
  j.at("atol").get_to(job.check.atol);
  j.at("rtol").get_to(job.check.rtol);
  j.at("secret").get_to(job.check.secret);
  j.at("timing").get_to(job.timing);
}


void to_json(nlohmann::json& j, const GpuJobResult& r) {
  j = {{"outcome", std::string(to_string(r.outcome))},
       {"detail", r.detail},
       {"trials", r.trials},
       {"candidate_ms", r.candidate_ms},
       {"reference_ms", r.reference_ms},
       {"timed_runs_checked", r.timed_runs_checked},
       {"restart_worker", r.restart_worker},
       {"stage_ms", r.stage_ms}};
}
void from_json(const nlohmann::json& j, GpuJobResult& r) {
  r.outcome = parse_outcome(j.at("outcome").get<std::string>());
  j.at("detail").get_to(r.detail);
  j.at("trials").get_to(r.trials);
  j.at("candidate_ms").get_to(r.candidate_ms);
  j.at("reference_ms").get_to(r.reference_ms);
  j.at("timed_runs_checked").get_to(r.timed_runs_checked);
  r.restart_worker = j.value("restart_worker", false);
  if (j.contains("stage_ms")) j.at("stage_ms").get_to(r.stage_ms);
}

nlohmann::json handle_gpu_request(GpuSession& session, const nlohmann::json& request) {
  const std::string op = request.at("op").get<std::string>();
  if (op == "info") return {{"device", session.device()}};
  if (op == "peaks") return {{"peaks", session.measure_peaks()}};
  if (op == "run") {
    const GpuJobResult result = session.run(request.at("job").get<GpuJob>());
    nlohmann::json reply = {{"result", result}};
    if (result.restart_worker) reply[std::string(kRestartWorkerKey)] = true;
    return reply;
  }
  if (op == "time_reference") {
    return {{"samples_ms", session.time_reference(request.at("task_id").get<int>(),
                                                  parse_scale(request.at("scale").get<std::string>()),
                                                  request.at("timing").get<TimingSettings>(),
                                                  request.at("seed").get<uint64_t>())}};
  }
  throw InputError("unknown worker op '" + op + "'");
}

int run_gpu_worker(int device) {
  try {
    GpuSession session(device);
    return serve(kWorkerRequestFd, kWorkerReplyFd,
                 [&](const nlohmann::json& request) { return handle_gpu_request(session, request); });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbrl worker: %s\n", e.what());
    return 3;
  }
}

}  // namespace kbrl
