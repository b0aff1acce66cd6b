#include "evaluator.h"
#include "evaluator_impl.h"

#include <algorithm>
#include <atomic>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <random>

#include <harness/compile/compile_cache.h>
#include <harness/compile/compile.h>
#include <harness/record/keyed_work.h>
#include <harness/record/rollout_log.h>
#include <harness/worker/gpu_protocol.h>
#include <harness/worker/worker.h>
#include <kbrl/error.h>
#include <kernels/candidate.h>
#include <reference/task_registry.h>

namespace kbrl {
namespace {

// The rollout log as KeyedWork's known records: a logged key is answered from the log (resume);
// a new record needs no remembering here, since finish() appends it to the log.
struct LoggedRecords {
  RolloutLog* log;
  std::optional<EvalRecord> find(const std::string& key) const { return log ? log->find(key) : std::nullopt; }
  void remember(const std::string&, const EvalRecord&) {}
};

std::string default_worker_program() {
  if (const char* env = std::getenv("KBRL_WORKER"); env && *env) return env;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& candidate : {self.parent_path() / "kbrl", self.parent_path() / "cli" / "kbrl",
                                  self.parent_path().parent_path() / "cli" / "kbrl",
                                  self.parent_path().parent_path().parent_path() / "cli" / "kbrl"}) {
      if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    }
  }
  return "kbrl";
}

uint64_t random_secret() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

double parse_tolerance(std::string_view text) {
  if (text == "strict") return 1e-4;
  if (text == "legacy") return 1e-2;
  throw InputError(fmt::format("unknown tolerance '{}': expected 'strict' (1e-4) or 'legacy' (1e-2)", text));
}

std::string_view to_string(InputChecks inputs) { return enum_name(inputs); }
InputChecks parse_input_checks(std::string_view text) { return parse_enum<InputChecks>(text); }

nlohmann::json EvalSettings::key_json() const {
  return {{"scale", std::string(to_string(scale))},
          {"inputs", std::string(to_string(inputs))},
          {"mode", std::string(to_string(mode))},
          {"trials", trials},
          {"atol", atol},
          {"rtol", rtol},
          {"reward", reward_spec(reward)},
          {"precision", std::string(to_string(reward.precision))},
          {"arch", arch}};
}

namespace {
std::atomic<int64_t> harness_errors{0};
}  // namespace

int64_t harness_errors_recorded() { return harness_errors.load(); }
void count_harness_errors(int64_t n) { harness_errors += n; }

Evaluator::Evaluator(EvalSettings settings) : settings_(std::move(settings)), impl_(std::make_unique<Impl>()) {
  KBRL_CHECK_INPUT(settings_.trials >= 1, "trials must be at least 1, not {}", settings_.trials);
  KBRL_CHECK_INPUT(settings_.atol >= 0 && settings_.rtol >= 0, "tolerances must not be negative");
  KBRL_CHECK_INPUT(settings_.job_timeout_seconds > 0, "the job timeout must be positive");
  KBRL_CHECK_INPUT(!settings_.compile_only || !settings_.arch.empty(),
                   "compiling without a GPU needs a target architecture: give --arch (e.g. sm_90)");
  impl_->secret = settings_.secret ? *settings_.secret : random_secret();
  impl_->peaks = settings_.peaks;
  if (!settings_.cache_dir.empty()) impl_->cache = std::make_unique<CompileCache>(settings_.cache_dir);
  WorkerOptions options;
  const std::string program =
      settings_.worker_program.empty() ? default_worker_program() : settings_.worker_program;
  options.argv = {program, "worker", "--device", std::to_string(settings_.device)};
  impl_->worker = std::make_unique<Worker>(std::move(options));
}

Evaluator::~Evaluator() = default;

const DeviceInfo& Evaluator::device() {
  if (!impl_->device) {
    CallResult started = impl_->worker->start();
    if (started.status != CallStatus::ok)
      throw Error("no GPU worker: " + started.detail);
    impl_->device = impl_->call_or_throw({{"op", "info"}}, 60).at("device").get<DeviceInfo>();
  }
  return *impl_->device;
}

const DevicePeaks& Evaluator::peaks() {
  if (!impl_->peaks) {
    device();
    impl_->peaks = impl_->call_or_throw({{"op", "peaks"}}, 300).at("peaks").get<DevicePeaks>();
  }
  return *impl_->peaks;
}

std::optional<RuntimeStats> Evaluator::reference_stats(int task_id) const {
  auto it = impl_->reference.find(task_id);
  if (it == impl_->reference.end()) return std::nullopt;
  return it->second;
}

int64_t Evaluator::worker_starts() const { return impl_->worker->starts(); }

std::string Evaluator::arch() {
  if (!settings_.arch.empty()) return settings_.arch;
  return device().arch;
}

std::string Evaluator::key(const Candidate& candidate, const std::string& observation) {
  nlohmann::json settings = settings_.key_json();
  settings["arch"] = arch();
  if (!observation.empty()) settings["observation"] = observation;
  return record_key(candidate, settings);
}

KeyedCandidate Evaluator::keyed(Candidate candidate, const std::string& observation) {
  std::string k = key(candidate, observation);
  return {std::move(candidate), std::move(k)};
}

EvalRecord Evaluator::evaluate(const Candidate& candidate, const std::string& raw_action,
                               const std::optional<std::string>& policy, const ActionInfo& action) {
  const TaskSpec spec = task_spec(candidate.task_id, settings_.scale);  // bad input before any work
  CompileOptions options;
  options.arch = arch();
  options.sandbox = settings_.compile_sandbox;
  const CompileResult compiled = compile(candidate, options, impl_->cache.get());
  return finish(spec, keyed(candidate), compiled, raw_action, policy, action);
}

EvalRecord Evaluator::new_record(const TaskSpec& spec, std::string key, const std::string& raw_action,
                                 const ActionInfo& action, const std::optional<std::string>& policy) const {
  EvalRecord record;
  record.key = std::move(key);
  record.task_id = spec.id;
  record.task_name = spec.name;
  record.scale = spec.scale;
  record.policy = policy;
  record.raw_action = raw_action;
  record.action = action;
  record.inputs = std::string(to_string(settings_.inputs));
  record.kbrl_version = std::string(kbrl_version());
  record.timestamp = utc_timestamp();
  return record;
}

std::string Evaluator::format_error_key(int task_id, const std::string& raw_action) {
  nlohmann::json settings = settings_.key_json();
  settings["arch"] = arch();
  return record_key(task_id, nlohmann::json{{"format_error", raw_action}}, settings);
}

EvalRecord Evaluator::format_error(int task_id, const std::string& raw_action, const ActionInfo& action,
                                   const std::string& detail, const std::optional<std::string>& policy,
                                   Outcome outcome) {
  const TaskSpec spec = task_spec(task_id, settings_.scale);
  const std::string key = format_error_key(task_id, raw_action);
  if (log_)
    if (std::optional<EvalRecord> logged = log_->find(key)) return std::move(*logged);  // resume
  EvalRecord record = new_record(spec, key, raw_action, action, policy);
  record.candidate.task_id = spec.id;
  record.outcome = outcome;
  record.outcome_detail = detail;
  record.reward = compute_reward({.task_id = spec.id}, settings_.reward).reward;
  if (log_) log_->append(record);
  return record;
}

std::vector<EvalRecord> Evaluator::evaluate_all(const std::vector<Candidate>& candidates,
                                                const std::optional<std::string>& policy,
                                                const std::vector<std::pair<std::string, ActionInfo>>& actions) {
  std::vector<KeyedCandidate> all;
  all.reserve(candidates.size());
  for (const Candidate& c : candidates) all.push_back(keyed(c));
  return evaluate_all(all, policy, actions);
}

std::vector<EvalRecord> Evaluator::evaluate_all(const std::vector<KeyedCandidate>& candidates,
                                                const std::optional<std::string>& policy,
                                                const std::vector<std::pair<std::string, ActionInfo>>& actions) {
  std::vector<std::optional<EvalRecord>> out(candidates.size());
  evaluate_each(
      candidates, [&](size_t i, const EvalRecord& r) { out[i] = r; }, {}, actions, policy);
  std::vector<EvalRecord> records;
  records.reserve(candidates.size());
  for (auto& r : out) records.push_back(std::move(*r));
  return records;
}

std::vector<size_t> Evaluator::evaluate_each(const std::vector<KeyedCandidate>& candidates,
                                             const std::function<void(size_t, const EvalRecord&)>& on_record,
                                             const std::function<bool()>& go_on,
                                             const std::vector<std::pair<std::string, ActionInfo>>& actions,
                                             const std::optional<std::string>& policy) {
  KBRL_ASSERT(actions.empty() || actions.size() == candidates.size(), "{} actions for {} candidates",
              actions.size(), candidates.size());
  std::map<int, TaskSpec> specs;  // each task looked up once; an unknown one is bad input before any work
  for (const auto& c : candidates)
    if (!specs.count(c.candidate.task_id))
      specs.emplace(c.candidate.task_id, task_spec(c.candidate.task_id, settings_.scale));
  if (!impl_->pool) {
    impl_->compile_options.arch = arch();
    impl_->compile_options.sandbox = settings_.compile_sandbox;
    impl_->pool = std::make_unique<CompilePool>(settings_.compile_threads, impl_->compile_options,
                                                impl_->cache.get());
  }
  // Logged candidates get their records from the log (resume), each distinct key is evaluated once
  // (a repeat gets the first one's record: KeyedWork), all compiles are queued before the first check.
  using Work = KeyedWork<size_t, LoggedRecords>;
  Work work(LoggedRecords{log_});
  std::vector<size_t> todo;
  std::vector<std::future<CompileResult>> compiles;
  for (size_t i = 0; i < candidates.size(); ++i) {
    std::optional<EvalRecord> logged;
    switch (work.claim(candidates[i].key, i, &logged)) {
      case Work::Claim::known: on_record(i, *logged); break;
      case Work::Claim::joined: break;
      case Work::Claim::leads:
        todo.push_back(i);
        compiles.push_back(impl_->pool->submit(candidates[i].candidate));
        break;
    }
  }
  size_t k = 0;
  for (; k < todo.size(); ++k) {
    if (k > 0 && go_on && !go_on()) break;
    const size_t i = todo[k];
    const KeyedCandidate& c = candidates[i];
    const TaskSpec& spec = specs.at(c.candidate.task_id);
    const EvalRecord record = actions.empty()
                                  ? finish(spec, c, compiles[k].get(), {}, policy)
                                  : finish(spec, c, compiles[k].get(), actions[i].first, policy, actions[i].second);
    for (size_t waiter : work.finish(c.key, record)) on_record(waiter, record);  // finish() logged it
  }
  std::vector<size_t> left;  // not started (go_on said stop): every submission of their keys
  for (; k < todo.size(); ++k)
    for (size_t waiter : work.release(candidates[todo[k]].key)) left.push_back(waiter);
  std::sort(left.begin(), left.end());
  return left;
}

}  // namespace kbrl
