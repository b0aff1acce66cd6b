#include "environment.h"

#include <chrono>
#include <cmath>
#include <set>

#include <harness/evaluate_actions.h>
#include <harness/evaluator.h>
#include <harness/record/rollout_log.h>
#include <kbrl/error.h>
#include <kbrl/splitmix64.h>
#include <kernels/action.h>
#include <serve/client.h>

namespace kbrl {
namespace {

uint64_t hash_text(uint64_t seed, std::string_view text) {
  uint64_t h = seed ^ 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return splitmix64(h);
}

/// A draw from N(0, 1) (Box-Muller) keyed by a hash.
double normal_of(uint64_t h) {
  uint64_t s = h;
  const double u1 = (static_cast<double>(splitmix64(s) >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = splitmix64_uniform01(s);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

/// A sample's rollout from its record; `compile_seconds` is charged to the one sample whose
/// evaluation compiled (`first`).
Rollout rollout_of(const Sample& sample, std::shared_ptr<const EvalRecord> r, std::string code, bool first) {
  const double seconds = first && !r->compile.cache_hit ? r->compile.seconds : 0.0;
  return rollout_from(sample, std::move(r), std::move(code), seconds);
}

bool unsafe(const Config& c) {
  auto is = [&](const char* knob, const char* value) { return c.has(knob) && c.at(knob) == value; };
  return (c.has("precision") && c.at("precision") != "fp32") || is("fast_math", "on") ||
         is("tail", "dropped");
}

}  // namespace

Rollout rollout_from(Sample sample, std::shared_ptr<const EvalRecord> record, std::string code,
                     double compile_seconds) {
  KBRL_ASSERT(record != nullptr, "a rollout of task {} without a record", sample.task_id);
  const double reward = record->reward;
  // Every member given: the default record (an allocation) is not made only to be replaced.
  return Rollout{.sample = std::move(sample), .record = std::move(record), .code = std::move(code),
                 .reward = reward, .compile_seconds = compile_seconds};
}

Rollout rollout_from(Sample sample, EvalRecord record, std::string code, double compile_seconds) {
  return rollout_from(std::move(sample), std::make_shared<const EvalRecord>(std::move(record)), std::move(code),
                      compile_seconds);
}

EvaluatorEnvironment::EvaluatorEnvironment(Evaluator& evaluator) : evaluator_(evaluator) {}

std::vector<Rollout> EvaluatorEnvironment::evaluate(const TaskSpec& task,
                                                    const std::vector<Sample>& samples,
                                                    const std::string& policy) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<ActionSubmission> submissions;
  for (const Sample& s : samples) submissions.push_back({s.action(), s.token_count(), s.prompt_version});
  const std::vector<SubmittedAction> done = evaluate_actions(evaluator_, task, submissions, policy, observation_, memo_);
  std::map<std::string, std::shared_ptr<const EvalRecord>> records;  // one copy per candidate of this call
  std::vector<Rollout> out;
  for (size_t i = 0; i < samples.size(); ++i) {
    std::shared_ptr<const EvalRecord>& record = records[done[i].key];
    if (!record) record = std::make_shared<const EvalRecord>(memo_.at(done[i].key));
    out.push_back(rollout_of(samples[i], record, done[i].code, done[i].evaluated_now));
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

struct ServedEnvironment::Impl {
  std::unique_ptr<serving::Client> client;
  nlohmann::json settings;  // what travels with every item
};

ServedEnvironment::ServedEnvironment(std::vector<std::string> urls, std::string token, const EvalSettings& settings)
    : impl_(std::make_unique<Impl>()) {
  serving::ClientOptions options;
  options.urls = std::move(urls);
  options.token = std::move(token);
  options.client_name = "kbrl-experiment";
  impl_->client = std::make_unique<serving::Client>(std::move(options));
  impl_->settings = {{"mode", std::string(to_string(settings.mode))},
                     {"tolerance", settings.atol >= 1e-2 ? "legacy" : "strict"},
                     {"inputs", std::string(to_string(settings.inputs))},
                     {"reward", reward_spec(settings.reward)}};
}

ServedEnvironment::~ServedEnvironment() = default;

void ServedEnvironment::set_observation(const std::string& id) {
  if (id.empty())
    impl_->settings.erase("observation");
  else
    impl_->settings["observation"] = id;  // the server keys the item with it (serve/api.h)
}

std::vector<Rollout> ServedEnvironment::evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                                 const std::string& policy) {
  if (samples.empty()) return {};
  const auto start = std::chrono::steady_clock::now();
  nlohmann::json items = nlohmann::json::array();
  for (const Sample& s : samples) {
    nlohmann::json item = impl_->settings;
    item["task_id"] = task.id;
    if (s.kind == ActionKind::text) {
      item["text"] = s.text;
    } else {
      nlohmann::json config = nlohmann::json::object();
      for (const auto& [knob, value] : s.config.entries()) config[knob] = value;
      item["config"] = std::move(config);
    }
    items.push_back(std::move(item));
  }
  std::vector<EvalRecord> records = impl_->client->evaluate(items);
  std::vector<Rollout> out;
  std::set<std::string> seen;
  for (size_t i = 0; i < samples.size(); ++i) {
    auto r = std::make_shared<const EvalRecord>(std::move(records[i]));
    KBRL_CHECK_INPUT(r->scale == task.scale,
                     "the server evaluates task {} at scale {}, the run at {}: start kbrl serve with --scale {}",
                     task.id, to_string(r->scale), to_string(task.scale), to_string(task.scale));
    const bool first = seen.insert(r->key).second;
    std::string code = r->action.code;
    out.push_back(rollout_of(samples[i], std::move(r), std::move(code), first));
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (void)policy;  // the server's records carry no policy name
  return out;
}

SyntheticEnvironment::SyntheticEnvironment(uint64_t seed, double effect_scale, RewardConfig reward)
    : seed_(seed), effect_scale_(effect_scale), reward_(std::move(reward)) {}

Rollout SyntheticEnvironment::score(const TaskSpec& task, const Sample& sample) const {
  KBRL_CHECK_INPUT(sample.kind == ActionKind::knobs,
                   "the synthetic environment scores knob configurations, not text: evaluate a language "
                   "model's samples with --env evaluator (on a GPU, or with --arch to compile only)");
  const std::string prefix = std::to_string(task.id) + "/";
  double log_speedup = 0;
  for (const auto& [knob, value] : sample.config.entries())
    log_speedup += effect_scale_ * normal_of(hash_text(seed_, prefix + knob + "=" + value));
  const bool wrong = unsafe(sample.config) && (hash_text(seed_, prefix + sample.config.str()) & 1);
  RewardInput in;
  in.task_id = task.id;
  in.compiled = true;
  in.correct = !wrong;
  in.reference_ms = 1.0;
  in.candidate_ms = std::exp(-log_speedup);
  const RewardResult r = compute_reward(in, reward_);
  EvalRecord record;
  record.task_id = task.id;
  record.outcome = wrong ? Outcome::wrong_answer : Outcome::ok;
  record.compile.ok = true;
  record.speedup = r.speedup;
  if (!wrong) record.speedup_ci = SpeedupInterval{r.speedup, r.speedup};  // no timing noise in a table
  record.reward = r.reward;
  record.flags = r.flags;
  return rollout_from(sample, std::move(record));
}

std::vector<Rollout> SyntheticEnvironment::evaluate(const TaskSpec& task,
                                                    const std::vector<Sample>& samples,
                                                    const std::string& policy) {
  std::vector<Rollout> out;
  for (const Sample& s : samples) out.push_back(score(task, s));
  return out;
}

double SyntheticEnvironment::expected_reward(Policy& policy, const TaskSpec& task,
                                             double temperature) const {
  const KnobSpace& space = knob_space_of(task);
  std::vector<std::vector<int>> tokens;
  std::vector<Sample> samples;
  for (const Config& c : space.enumerate()) {
    Sample s;
    s.task_id = task.id;
    s.config = c;
    s.tokens = space.tokenize(c);
    tokens.push_back(s.tokens);
    samples.push_back(std::move(s));
  }
  const auto logprobs = policy.logprob(task, tokens, temperature);
  double expected = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    double lp = 0;
    for (double x : logprobs[i]) lp += x;
    expected += std::exp(lp) * score(task, samples[i]).reward;
  }
  return expected;
}

}  // namespace kbrl
