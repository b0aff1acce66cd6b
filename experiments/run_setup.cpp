#include "run_setup.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include <harness/compile/compile_cache.h>
#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <kernels/generator.h>
#include <policies/baseline_policies.h>
#include <policies/endpoint_policy.h>
#include <policies/lm/lm_policy.h>
#include <policies/schedule_policy.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl {

// ---- policies ----

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = {"schedule", "uniform", "heuristic", "endpoint:URL[,model=NAME,...]",
                                                 "lm:MODEL[,key=value...]"};
  return names;
}

bool is_endpoint_policy(const std::string& name) { return name.rfind("endpoint:", 0) == 0; }
bool is_lm_policy(const std::string& name) { return lm::is_lm_spec(name); }
bool is_text_policy(const std::string& name) { return is_endpoint_policy(name) || is_lm_policy(name); }

std::string policy_device(const PolicyOptions& o) {
  if (!is_lm_policy(o.name)) return o.device;
  const std::string spec = lm::parse_lm_spec(o.name).model_options.device;
  return spec != "cpu" ? spec : o.device;
}

std::string policy_adapter(const PolicyOptions& o) {
  if (!o.adapter.empty() || !is_lm_policy(o.name)) return o.adapter;
  return lm::parse_lm_spec(o.name).adapter;
}

std::unique_ptr<Policy> make_policy(const PolicyOptions& o) {
  if (is_endpoint_policy(o.name)) {
    KBRL_CHECK_INPUT(o.checkpoint.empty() && o.adapter.empty(),
                     "an endpoint policy's weights live in its server: --checkpoint and --adapter go with the "
                     "schedule policy (name an adapter served by the server with model=NAME)");
    EndpointOptions e = parse_endpoint_spec(o.name);
    if (!o.response_log.empty()) e.response_log = o.response_log;  // else the spec's log=, if any
    return std::make_unique<EndpointPolicy>(std::move(e));
  }
  if (is_lm_policy(o.name)) {
    lm::LmOptions l = lm::parse_lm_spec(o.name);
    l.model_options.device = policy_device(o);
    auto policy = std::make_unique<lm::LmPolicy>(std::move(l));
    if (!o.checkpoint.empty()) policy->load_base(o.checkpoint);
    if (!o.adapter.empty()) policy->load_adapter(o.adapter);
    return policy;
  }
  KBRL_CHECK_INPUT(std::find(policy_names().begin(), policy_names().end(), o.name) != policy_names().end(),
                   "unknown policy '{}': expected one of {}", o.name, fmt::join(policy_names(), ", "));
  if (o.name != "schedule") {
    KBRL_CHECK_INPUT(o.checkpoint.empty() && o.adapter.empty(),
                     "the {} policy has no weights: a checkpoint or adapter goes with the schedule policy",
                     o.name);
  }
  if (o.name == "uniform") return std::make_unique<UniformPolicy>();
  if (o.name == "heuristic") {
    KBRL_CHECK_INPUT(o.noise >= 0 && o.noise <= 1, "heuristic noise must be in [0, 1] (got {})", o.noise);
    return std::make_unique<HeuristicPolicy>(o.noise);
  }
  KBRL_CHECK_INPUT(o.device == "cpu" || o.device.rfind("cuda", 0) == 0,
                   "unknown policy device '{}': expected cpu or cuda[:N]", o.device);
  ScheduleNetConfig net;
  net.seed = o.seed;
  net.device = o.device;
  auto policy = std::make_unique<SchedulePolicy>(net);
  if (!o.checkpoint.empty()) {
    KBRL_CHECK_INPUT(std::filesystem::is_regular_file(o.checkpoint), "checkpoint {} does not exist",
                     o.checkpoint);
    policy->load_base(o.checkpoint);
  }
  if (!o.adapter.empty()) {
    KBRL_CHECK_INPUT(std::filesystem::is_regular_file(o.adapter), "adapter {} does not exist", o.adapter);
    policy->load_adapter(o.adapter);
  }
  return policy;
}

std::unique_ptr<TrainablePolicy> make_trainable_policy(const PolicyOptions& o) {
  std::unique_ptr<Policy> p = make_policy(o);
  auto* trainable = dynamic_cast<TrainablePolicy*>(p.get());
  KBRL_CHECK_INPUT(trainable != nullptr,
                   "the {} policy cannot be trained{}: use the schedule policy or lm:<model>", o.name,
                   is_endpoint_policy(o.name) ? " (an endpoint only samples; gradients need the model in the process)" : "");
  p.release();
  std::unique_ptr<TrainablePolicy> out(trainable);
  if (out->has_adapter()) out->merge_adapter();
  return out;
}

// ---- tasks ----

std::vector<int> select_tasks(const std::vector<int>& ids, const std::string& split_name) {
  if (ids.empty() == split_name.empty()) {
    std::vector<std::string> names;
    for (const Split& s : splits()) names.push_back(s.name);
    throw InputError(fmt::format("give task ids or a split name (exactly one of them); split names: {}",
                                 fmt::join(names, ", ")));
  }
  if (!split_name.empty()) return split(split_name).ids;
  std::vector<int> out;
  std::set<int> seen;
  for (int id : ids) {
    task_spec(id, Scale::small);  // InputError for an unknown id
    if (seen.insert(id).second) out.push_back(id);
  }
  return out;
}

std::vector<int> covered_only(const std::vector<int>& ids, const std::function<void(const std::string&)>& warn) {
  std::vector<int> out;
  for (int id : ids) {
    bool covered = false;
    for (const Generator* g : generators()) covered = covered || g->covers(id);
    if (covered) {
      out.push_back(id);
      continue;
    }
    const std::string message = fmt::format("no generator covers task {}", id);
    if (!warn)
      throw InputError(fmt::format("{}; covered tasks: {}", message, fmt::join(covered_tasks(), ", ")));
    warn(message + ": skipped");
  }
  KBRL_CHECK_INPUT(!out.empty(), "no generator covers any of the tasks {}; covered tasks: {}",
                   fmt::join(ids, ", "), fmt::join(covered_tasks(), ", "));
  return out;
}

std::vector<size_t> sweep_sample(size_t size, size_t must_include, int max_configs, uint64_t seed, int task_id) {
  KBRL_CHECK_INPUT(max_configs >= 0, "--max-configs must be >= 0 (got {})", max_configs);
  KBRL_ASSERT(must_include < size, "sweep_sample: index {} of {} configurations", must_include, size);
  std::vector<size_t> all(size);
  for (size_t i = 0; i < size; ++i) all[i] = i;
  if (max_configs == 0 || static_cast<size_t>(max_configs) >= size) return all;
  // The expert's index first, then a seeded shuffle of the others: the first n are the draw.
  std::swap(all[0], all[must_include]);
  std::vector<size_t> others(all.begin() + 1, all.end());
  uint64_t state = derive_seed(seed, {task_id});
  shuffle(others, state);
  std::copy(others.begin(), others.end(), all.begin() + 1);
  const size_t n = static_cast<size_t>(max_configs);
  all.resize(n);
  std::sort(all.begin(), all.end());
  return all;
}

// ---- the evaluator ----

EvalSettings eval_settings(const EvalFlags& f) {
  EvalSettings s;
  s.scale = parse_scale(f.scale);
  s.mode = parse_timing_mode(f.mode);
  s.atol = s.rtol = parse_tolerance(f.tolerance);
  s.inputs = parse_input_checks(f.inputs);
  s.reward = parse_reward(f.reward, s.reward);
  s.reward.precision = parse_precision_policy(f.precision);
  KBRL_CHECK_INPUT(f.trials >= 1, "--trials must be >= 1 (got {})", f.trials);
  KBRL_CHECK_INPUT(f.timeout > 0, "--timeout must be > 0 seconds (got {})", f.timeout);
  KBRL_CHECK_INPUT(f.device >= 0, "--device must be >= 0 (got {})", f.device);
  s.trials = f.trials;
  s.job_timeout_seconds = f.timeout;
  s.arch = f.arch;
  s.device = f.device;
  s.cache_dir = CompileCache::default_dir();
  return s;
}

}  // namespace kbrl
