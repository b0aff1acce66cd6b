#include "judge.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <kbrl/error.h>
#include <kbrl/utf8.h>
#include <kernels/action.h>
#include <policies/endpoint_policy.h>
#include <policies/endpoint_wire.h>
#include <kbrl/http_client.h>
#include <reference/task_semantics.h>


namespace kbrl {
namespace {

using nlohmann::json;
namespace wire = endpoint_wire;

/// The source with comments, string and character literals blanked (same length, newlines kept).
std::string code_only(std::string_view s) {
  std::string out(s);
  size_t i = 0;
  const auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      const size_t end = std::min(s.find('\n', i), s.size());
      blank(i, end);
      i = end;
    } else if (s.compare(i, 2, "/*") == 0) {
      const size_t close = s.find("*/", i + 2);
      const size_t end = close == std::string_view::npos ? s.size() : close + 2;
      blank(i, end);
      i = end;
    } else if (s[i] == '"' || s[i] == '\'') {
      const char quote = s[i];
      size_t k = i + 1;
      while (k < s.size() && s[k] != quote && s[k] != '\n') k += s[k] == '\\' ? 2 : 1;
      blank(i, std::min(k + 1, s.size()));
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

bool balanced(const std::string& code) {
  std::string stack;
  for (char c : code) {
    if (c == '{' || c == '(' || c == '[') {
      stack.push_back(c);
    } else if (c == '}' || c == ')' || c == ']') {
      const char open = c == '}' ? '{' : (c == ')' ? '(' : '[');
      if (stack.empty() || stack.back() != open) return false;
      stack.pop_back();
    }
  }
  return stack.empty();
}

bool has(const std::string& code, const std::regex& pattern) { return std::regex_search(code, pattern); }

double share(std::initializer_list<bool> checks) {
  double passed = 0;
  for (bool c : checks) passed += c;
  return passed / static_cast<double>(checks.size());
}

class RulesJudge final : public Judge {
 public:
  std::string name() const override { return "rules"; }
  std::vector<JudgeScores> score(const TaskSpec&, const std::vector<std::string>& sources) override {
    std::vector<JudgeScores> out;
    for (const std::string& s : sources) out.push_back(rules_judge_scores(s));
    return out;
  }
};

/// The schema the judge's answer must follow: the report's three floats and its reasoning string
/// (kept short: a small model's free text would run to max_tokens and cut the JSON).
json answer_format() {
  const json number = {{"type", "number"}, {"minimum", 0}, {"maximum", 1}};
  return {{"type", "json_schema"},
          {"json_schema",
           {{"name", "kernel_judgement"},
            {"schema",
             {{"type", "object"},
              {"properties",
               {{"correctness", number},
                {"compilability", number},
                {"speed", number},
                {"reasoning", {{"type", "string"}, {"maxLength", 300}}}}},
              {"required", {"correctness", "compilability", "speed", "reasoning"}},
              {"additionalProperties", false}}}}}};
}

class EndpointJudge final : public Judge {
 public:
  explicit EndpointJudge(EndpointOptions options)
      : options_(std::move(options)), http_(options_.http), base_(wire::base_url(options_.url)),
        headers_(wire::auth_headers(options_)) {
    KBRL_CHECK_INPUT(options_.url.starts_with("http://") || options_.url.starts_with("https://"),
                     "the URL '{}' must start with http:// or https://", wire::redact(options_.url));
  }
  std::string name() const override {
    return "endpoint:" + (options_.model.empty() ? wire::redact(base_) : options_.model);
  }
  std::vector<JudgeScores> score(const TaskSpec& task, const std::vector<std::string>& sources) override {
    std::vector<JudgeScores> out(sources.size());
    const std::string url = base_ + "/v1/chat/completions";
    // One request per candidate, up to the spec's `concurrency` in flight.
    for_each_request(sources.size(), options_.http.max_concurrent, [&](size_t i) {
      const std::string& source = sources[i];
      if (source.empty()) {
        out[i] = {0, 0, 0, false, "no candidate (format error)"};
        return;
      }
      // A model's answer may hold bytes that are not UTF-8, which JSON cannot carry: the judge reads
      // them as U+FFFD.
      json body = {{"messages", {{{"role", "user"}, {"content", judge_prompt(task, valid_utf8(source))}}}},
                   {"temperature", 0},
                   {"max_tokens", options_.max_tokens},
                   {"response_format", answer_format()}};
      if (!options_.model.empty()) body["model"] = options_.model;
      const HttpResponse r = http_.post_json(url, body.dump(), headers_);
      if (r.status != 200) wire::throw_status(r, wire::redact(url), options_.model);
      const json response = wire::parse_body(r, wire::redact(url));
      std::optional<std::string> content;
      if (response.contains("choices") && response["choices"].is_array() && !response["choices"].empty()) {
        const json message = response["choices"][0].value("message", json::object());
        if (message.contains("content") && message["content"].is_string()) content = message["content"].get<std::string>();
      }
      out[i] = content ? parse_judge_answer(*content)
                       : JudgeScores{0, 0, 0, false, "the response has no choices[0].message.content"};
    });
    return out;
  }

 private:
  EndpointOptions options_;
  HttpClient http_;
  std::string base_;
  std::vector<std::string> headers_;
};

/// The source realize() makes of a sample: the generated file of a knob configuration, the
/// candidate built from a model's text; "" when there is none.
std::string candidate_source(const TaskSpec& task, const Sample& sample) {
  try {
    Realized real = realize(task, sample.action());
    return real.candidate ? real.candidate->source : "";
  } catch (const InputError&) {
    return "";
  }
}

}  // namespace

JudgeScores rules_judge_scores(std::string_view source) {
  if (source.empty()) return {0, 0, 0, false, "no candidate (format error)"};
  static const std::regex global(R"(__global__)");
  static const std::regex host(R"(\bstd::|\btorch\b|\bat::|pybind)");
  static const std::regex thread_index_block(R"(\bblockIdx\b)");
  static const std::regex thread_index_thread(R"(\bthreadIdx\b)");
  static const std::regex guard(R"(\b(if|while)\s*\([^{]*[^<]<[^<]|\bfor\s*\([^{]*;[^{;]*[^<]<[^<])");
  static const std::regex store(R"(\w\s*\[[^\]]+\]\s*(=[^=]|\+=|-=|\*=))");
  static const std::regex vector(R"(\b(float2|float4|half2|int4|__ldg)\b)");
  static const std::regex reuse(R"(__shared__|__shfl)");
  static const std::regex loops(R"(#\s*pragma\s+unroll|gridDim\.x\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*gridDim\.x)");
  static const std::regex restrict_(R"(__restrict__)");
  const std::string code = code_only(source);
  JudgeScores s;
  s.compilability = share({balanced(code), has(code, global), !has(code, host)});
  s.correctness =
      share({has(code, thread_index_block) && has(code, thread_index_thread), has(code, guard), has(code, store)});
  s.speed = share({has(code, vector), has(code, reuse), has(code, loops), has(code, restrict_)});
  s.ok = true;
  return s;
}

std::string judge_prompt(const TaskSpec& task, std::string_view source) {
  std::string tensors;
  for (const auto& t : task.inputs) tensors += fmt::format("  input {} {}\n", t.name, format_shape(t.shape));
  for (const auto& t : task.outputs) tensors += fmt::format("  output {} {}\n", t.name, format_shape(t.shape));
  return fmt::format(
      "Evaluate the quality of a CUDA kernel implementation on three criteria.\n\n"
      "1. Correctness (0.0-1.0): Does the kernel implement the required functionality? Is the mathematical "
      "logic correct? Are the input and output tensors handled properly?\n"
      "2. Compilability (0.0-1.0): Will the code compile without errors? Are all CUDA functions and types "
      "properly defined? Is memory handled correctly?\n"
      "3. Speed (0.0-1.0): How well is the kernel optimized? Are memory access patterns efficient? Is "
      "thread utilization good? Are there obvious bottlenecks?\n\n"
      "The operator ({}): {}\nTensors (float32, contiguous):\n{}\n"
      "The CUDA kernel:\n```cuda\n{}\n```\n\n"
      "Answer with JSON only: {{\"correctness\": float, \"compilability\": float, \"speed\": float, "
      "\"reasoning\": str}}\n",
      task.name, task_semantics(task.id), tensors, source);
}

JudgeScores parse_judge_answer(std::string_view answer) {
  JudgeScores s;
  json j = json::parse(answer, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    const size_t open = answer.find('{'), close = answer.rfind('}');
    if (open != std::string_view::npos && close != std::string_view::npos && close > open)
      j = json::parse(answer.substr(open, close - open + 1), nullptr, false);
  }
  if (j.is_discarded() || !j.is_object()) {
    s.error = fmt::format("not a JSON object: {}", std::string(answer.substr(0, 120)));
    return s;
  }
  double* fields[] = {&s.correctness, &s.compilability, &s.speed};
  const char* names[] = {"correctness", "compilability", "speed"};
  for (int i = 0; i < 3; ++i) {
    if (!j.contains(names[i]) || !j[names[i]].is_number() || !std::isfinite(j[names[i]].get<double>())) {
      s = {};
      s.error = fmt::format("no number '{}' in the answer", names[i]);
      return s;
    }
    *fields[i] = std::clamp(j[names[i]].get<double>(), 0.0, 1.0);
  }
  s.ok = true;
  return s;
}

std::unique_ptr<Judge> make_judge(std::string_view spec) {
  if (spec == "rules") return std::make_unique<RulesJudge>();
  if (spec.starts_with("endpoint:")) {
    try {
      return std::make_unique<EndpointJudge>(parse_endpoint_spec(spec));
    } catch (const InputError& e) {
      throw InputError(fmt::format("--judge {}: {}", spec, e.what()));
    }
  }
  throw InputError(fmt::format("unknown judge '{}': rules (deterministic checks of the source) or "
                               "endpoint:<url>[,model=NAME,...] (a language model behind an OpenAI-compatible server)",
                               spec));
}

JudgedEnvironment::JudgedEnvironment(Environment& inner, std::unique_ptr<Judge> judge, double weight,
                                     CsvTable* scores_csv)
    : inner_(inner), judge_(std::move(judge)), weight_(weight), scores_csv_(scores_csv) {
  KBRL_CHECK_INPUT(std::isfinite(weight_) && weight_ >= 0, "--judge-weight must be >= 0 (got {})", weight_);
}

std::string JudgedEnvironment::name() const { return inner_.name() + "+judge:" + judge_->name(); }

std::vector<Rollout> JudgedEnvironment::evaluate(const TaskSpec& task, const std::vector<Sample>& samples,
                                                 const std::string& policy) {
  std::vector<Rollout> rollouts = inner_.evaluate(task, samples, policy);
  std::vector<std::string> sources;
  for (const Sample& s : samples) sources.push_back(candidate_source(task, s));
  const std::vector<JudgeScores> scores = judge_->score(task, sources);
  KBRL_ASSERT(scores.size() == rollouts.size(), "{} judge scores for {} rollouts", scores.size(), rollouts.size());
  for (size_t i = 0; i < rollouts.size(); ++i) {
    const JudgeScores& j = scores[i];
    failures_ += !j.ok && !sources[i].empty();
    const double kernel_reward = rollouts[i].reward;
    rollouts[i].reward += weight_ * j.mean();
    if (scores_csv_)
      scores_csv_->row({policy, cell(task.id), cell(static_cast<int64_t>(i)), std::string(to_string(rollouts[i].outcome())),
                        cell(j.correctness), cell(j.compilability), cell(j.speed), cell(j.mean()), cell(kernel_reward),
                        cell(rollouts[i].reward), j.ok ? "" : j.error});
  }
  return rollouts;
}

}  // namespace kbrl
