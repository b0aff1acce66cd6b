#include "api.h"

#include "request_parts.h"

#include <cmath>

#include <fmt/format.h>

#include <harness/record/json_text.h>
#include <harness/record/kernelbench_result.h>
#include <kbrl/outcome.h>
#include <kbrl/error.h>
#include <kernels/action.h>
#include <kernels/candidate_file.h>
#include <kernels/prompt.h>
#include <reference/splits.h>
#include <reference/task_registry.h>

namespace kbrl::serving {
namespace {

using Json = nlohmann::json;

std::string_view json_type(const Json& j) { return j.type_name(); }

/// The value of an enum-like field through its parser (InputError names the legal values).
template <typename Parse>
auto parse_field(const Json& value, const std::string& field, Parse parse) {
  if (!value.is_string())
    throw ApiException(bad_request(fmt::format("{} must be a string, not {}", field, json_type(value)), field));
  try {
    return parse(value.get<std::string>());
  } catch (const InputError& e) {
    throw ApiException(bad_request(fmt::format("{}: {}", field, e.what()), field));
  }
}

/// A knob configuration: {"name": value}, each value an integer or a non-empty string. Whether
/// the knobs and values are the task's is realize()'s question (a format error when not).
Config parse_config(const Json& value, const std::string& field) {
  if (!value.is_object())
    throw ApiException(bad_request(fmt::format("{} must be an object of knob values, not {}", field, json_type(value)), field));
  Config config;
  for (const auto& [name, v] : value.items()) {
    const std::string f = fmt::format("{}.{}", field, name);
    if (v.is_number_integer()) {
      config.set(name, v.dump());
    } else if (v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>())) {
      config.set(name, fmt::format("{:.0f}", v.get<double>()));  // an integer beyond 64 bits: no knob's value
    } else if (v.is_string() && !v.get<std::string>().empty()) {
      config.set(name, v.get<std::string>());
    } else {
      throw ApiException(bad_request(fmt::format("{} must be an integer or a non-empty string", f), f));
    }
  }
  return config;
}

const std::string& text_field(const Json& value, const std::string& field, const ServeLimits& limits) {
  if (!value.is_string())
    throw ApiException(bad_request(fmt::format("{} must be a string, not {}", field, json_type(value)), field));
  const std::string& text = value.get_ref<const std::string&>();
  if (text.size() > limits.max_text_bytes)
    throw ApiException(field_too_large(
        fmt::format("{} holds {} bytes; at most {} are read", field, text.size(), limits.max_text_bytes), field));
  return text;
}

// Gives the item the exact bytes of a text or candidate that is not UTF-8, in place: JSON carries it
// as UTF-8 with U+FFFD for each bad byte and its bytes in text_base64 (candidate_base64) beside it,
// as kbrl's client sends a model's output (json_text.h).
void restore_item_bytes(Json& item, size_t index) {
  if (!item.is_object()) return;
  try {
    restore_exact_bytes(item);
  } catch (const InputError& e) {
    throw ApiException(bad_request(fmt::format("items[{}]: {}", index, e.what())));
  }
}

PreparedItem parse_item(const Json& item, size_t index, const EvalSettings& defaults, const ServeLimits& limits) {
  const std::string at = fmt::format("items[{}]", index);
  if (!item.is_object())
    throw ApiException(bad_request(fmt::format("{} must be an object, not {}", at, json_type(item)), at));
  PreparedItem out;
  out.settings = defaults;
  int actions = 0;
  for (const auto& [name, value] : item.items()) {
    const std::string field = at + "." + name;
    if (name == "task_id" || name == "problem_id") {  // problem_id: KernelBench's name for it
      if (item.contains("task_id") && item.contains("problem_id"))
        throw ApiException(bad_request(fmt::format("{} has task_id and problem_id: give one", at), field));
      if (!value.is_number_integer())
        throw ApiException(bad_request(fmt::format("{} must be an integer, not {}", field, json_type(value)), field));
      const int64_t id = value.get<int64_t>();
      if (id < 0 || id > 1'000'000 || !has_task(static_cast<int>(id)))
        throw ApiException(bad_request(fmt::format("{}: no task {} (tasks are 1..100; GET /v1/tasks lists them)",
                                                   field, id), field));
      out.task_id = static_cast<int>(id);
    } else if (name == "level") {  // KernelBench's level: kbrl has level 1
      if (!value.is_number_integer() || value.get<int64_t>() != 1)
        throw ApiException(bad_request(fmt::format("{} must be 1: kbrl has KernelBench's level-1 tasks only", field), field));
    } else if (name == "text" || name == "candidate" || name == "config") {
      ++actions;
    } else if (name == "mode") {
      out.settings.mode = parse_field(value, field, parse_timing_mode);
    } else if (name == "tolerance") {
      out.settings.atol = out.settings.rtol = parse_field(value, field, parse_tolerance);
    } else if (name == "inputs") {
      out.settings.inputs = parse_field(value, field, parse_input_checks);
    } else if (name == "observation") {
      if (!value.is_string() || value.get_ref<const std::string&>().size() > 200)
        throw ApiException(bad_request(fmt::format("{} must be a string of at most 200 bytes", field), field));
      out.observation = value.get<std::string>();
    } else if (name == "reward") {
      out.settings.reward =
          parse_field(value, field, [&](const std::string& spec) { return parse_reward(spec, out.settings.reward); });
    } else {
      throw ApiException(bad_request(
          fmt::format("{}: unknown field (an item has task_id (or KernelBench's problem_id, with level 1), one of text, "
                      "candidate or config, and optionally "
                      "mode, tolerance, inputs, reward, observation)", field), field));
    }
  }
  if (!item.contains("task_id") && !item.contains("problem_id"))
    throw ApiException(bad_request(fmt::format("{}.task_id is missing", at), at + ".task_id"));
  if (actions != 1)
    throw ApiException(bad_request(
        fmt::format("{} must hold exactly one of text, candidate or config (it holds {})", at, actions), at));
  out.settings_id = out.settings.key_json().dump();

  const TaskSpec task = task_spec(out.task_id, defaults.scale);
  PreparedAction& prepared = out.prepared;
  if (item.contains("text")) {
    const std::string& text = text_field(item["text"], at + ".text", limits);
    prepared = prepare_action(task, {{ActionKind::text, {}, text}, 0, ""});
  } else if (item.contains("candidate")) {  // a candidate file as it is: no extraction
    const std::string& text = text_field(item["candidate"], at + ".candidate", limits);
    prepared.real.raw = text;
    prepared.info = {ActionKind::text, text, 0, ""};
    try {
      prepared.real.candidate = parse_candidate_file(text, task, "candidate");
    } catch (const InputError& e) {
      prepared.real.format_error = e.what();
    }
  } else {
    const Config config = parse_config(item["config"], at + ".config");
    const ActionSubmission submission{{ActionKind::knobs, config, {}}, static_cast<int64_t>(config.size()), ""};
    try {
      prepared = prepare_action(task, submission);
    } catch (const InputError& e) {  // not a configuration of the task's space: the action's fault
      prepared.real.raw = config.str();
      prepared.info = {ActionKind::knobs, "", submission.token_count, ""};
      prepared.real.format_error = e.what();
    }
  }
  return out;
}

}  // namespace

ApiError bad_request(std::string message, std::string field) {
  return {400, "bad_request", std::move(message), std::move(field), false, 0};
}
ApiError too_large(std::string message, std::string field) {
  return {413, "too_large", std::move(message), std::move(field), false, 0};
}
ApiError field_too_large(std::string message, std::string field) {
  return {400, "too_large", std::move(message), std::move(field), false, 0};
}
ApiError not_found(std::string message) { return {404, "not_found", std::move(message), {}, false, 0}; }

nlohmann::json error_json(const ApiError& error) {
  // A message or field may quote the request (a path, a parameter): any bytes, made UTF-8 here.
  Json e = {{"code", error.code}, {"message", valid_utf8(error.message)}, {"retryable", error.retryable}};
  if (!error.field.empty()) e["field"] = valid_utf8(error.field);
  return {{"error", e}};
}

std::vector<PreparedItem> parse_evaluate_request(std::string_view body, const EvalSettings& defaults,
                                                 const ServeLimits& limits) {
  if (body.size() > limits.max_body_bytes)
    throw ApiException(too_large(fmt::format("the body holds {} bytes; at most {}", body.size(), limits.max_body_bytes)));
  Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    throw ApiException(bad_request("the body is not JSON: send {\"items\": [{\"task_id\": 19, \"text\": \"...\"}]}"));
  if (!doc.is_object()) throw ApiException(bad_request(fmt::format("the body must be an object, not {}", json_type(doc))));
  for (const auto& [name, value] : doc.items())
    if (name != "items")
      throw ApiException(bad_request(fmt::format("{}: unknown field (the body has only \"items\")", name), name));
  if (!doc.contains("items")) throw ApiException(bad_request("items is missing", "items"));
  Json& items = doc["items"];
  if (!items.is_array())
    throw ApiException(bad_request(fmt::format("items must be an array, not {}", json_type(items)), "items"));
  if (items.empty()) throw ApiException(bad_request("items is empty: send at least one item", "items"));
  if (items.size() > limits.max_items)
    throw ApiException(field_too_large(
        fmt::format("items holds {} items; at most {} a request (split it, or use ?async=1 for each part)",
                    items.size(), limits.max_items), "items"));
  std::vector<PreparedItem> out;
  out.reserve(items.size());
  size_t readable = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    try {
      restore_item_bytes(items[i], i);
      out.push_back(parse_item(items[i], i, defaults, limits));
      ++readable;
    } catch (const ApiException& e) {  // this item's fault: answered in its place, the others go on
      PreparedItem bad;
      bad.error = e.error();
      out.push_back(std::move(bad));
    }
  }
  if (readable == 0) throw ApiException(*out.front().error);
  return out;
}

std::vector<PreparedItem> parse_openrlhf_request(std::string_view body, const EvalSettings& defaults,
                                                 const ServeLimits& limits) {
  if (body.size() > limits.max_body_bytes)
    throw ApiException(too_large(fmt::format("the body holds {} bytes; at most {}", body.size(), limits.max_body_bytes)));
  const Json doc = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    throw ApiException(bad_request("the body is not a JSON object: send {\"query\": [...], \"labels\": [task ids]}"));
  auto strings = [&](const char* name, bool required) -> const Json* {
    if (!doc.contains(name)) {
      if (required) throw ApiException(bad_request(fmt::format("{} is missing", name), name));
      return nullptr;
    }
    const Json& a = doc[name];
    if (!a.is_array()) throw ApiException(bad_request(fmt::format("{} must be an array, not {}", name, json_type(a)), name));
    return &a;
  };
  const Json& queries = *strings("query", true);
  const Json* prompts = strings("prompts", false);
  const Json* labels = strings("labels", false);
  if (!labels)
    throw ApiException(bad_request("labels is missing: each query's label is its kbrl task id (KernelBench's problem_id)",
                                   "labels"));
  if (queries.empty()) throw ApiException(bad_request("query is empty", "query"));
  if (queries.size() > limits.max_items)
    throw ApiException(field_too_large(fmt::format("query holds {} items; at most {} a request", queries.size(),
                                                   limits.max_items), "query"));
  for (const auto* a : {prompts, labels})
    if (a && a->size() != queries.size())
      throw ApiException(bad_request(fmt::format("{} queries but {} {}", queries.size(), a->size(),
                                                 a == labels ? "labels" : "prompts"), a == labels ? "labels" : "prompts"));
  std::vector<PreparedItem> out;
  out.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    const std::string field = fmt::format("query[{}]", i);
    if (!queries[i].is_string()) throw ApiException(bad_request(fmt::format("{} must be a string", field), field));
    std::string response = queries[i].get<std::string>();
    if (prompts && (*prompts)[i].is_string()) {
      const std::string& prompt = (*prompts)[i].get_ref<const std::string&>();
      if (response.rfind(prompt, 0) == 0) response.erase(0, prompt.size());
    }
    const Json& label = (*labels)[i];
    Json task = label;
    if (label.is_string()) {
      const std::optional<int> id = parse_task_id(label.get<std::string>());
      if (!id) throw ApiException(bad_request(fmt::format("labels[{}] is not a task id", i), fmt::format("labels[{}]", i)));
      task = *id;
    }
    out.push_back(parse_item(Json{{"task_id", task}, {"text", std::move(response)}}, i, defaults, limits));
  }
  return out;
}

nlohmann::json openrlhf_rewards_json(const std::vector<ItemAnswer>& answers) {
  Json rewards = Json::array(), outcomes = Json::array();
  for (const ItemAnswer& a : answers) {
    const EvalRecord* r = std::get_if<EvalRecord>(&a);
    rewards.push_back(r && std::isfinite(r->reward) ? r->reward : 0.0);
    outcomes.push_back(r ? std::string(to_string(r->outcome)) : std::string("error"));
  }
  return {{"rewards", std::move(rewards)}, {"outcomes", std::move(outcomes)}};
}

nlohmann::json tasks_json() {
  Json tasks = Json::array();
  for (int id : task_ids()) {
    const TaskSpec spec = task_spec(id, Scale::kernelbench);
    Json in_splits = Json::array();
    for (const Split& s : splits())
      if (std::find(s.ids.begin(), s.ids.end(), id) != s.ids.end()) in_splits.push_back(s.name);
    tasks.push_back({{"id", id}, {"name", spec.name}, {"family", std::string(to_string(spec.family))},
                     {"splits", in_splits}});
  }
  return {{"tasks", tasks}};
}

nlohmann::json prompt_json(int task_id, std::string_view style, Scale scale) {
  if (!has_task(task_id)) throw ApiException(not_found(fmt::format("no task {} (tasks are 1..100)", task_id)));
  PromptOptions options;
  try {
    options.style = parse_text_style(style);
  } catch (const InputError& e) {
    throw ApiException(bad_request(fmt::format("style: {}", e.what()), "style"));
  }
  const Prompt prompt = build_prompt(task_spec(task_id, scale), options);
  return {{"task_id", task_id}, {"version", prompt.version}, {"system", prompt.system}, {"user", prompt.user}};
}

bool kernelbench_format(const std::map<std::string, std::string>& params) {
  auto it = params.find("format");
  if (it == params.end() || it->second == "kbrl") return false;
  if (it->second == "kernelbench") return true;
  throw ApiException(bad_request(fmt::format("format={}: kbrl or kernelbench", it->second.substr(0, 40)), "format"));
}

nlohmann::json answer_json(const ItemAnswer& answer, bool kernelbench) {
  if (const ApiError* e = std::get_if<ApiError>(&answer)) return error_json(*e);
  const EvalRecord& r = std::get<EvalRecord>(answer);
  return kernelbench ? kernelbench_result(r) : Json(r);
}

nlohmann::json records_json(const std::vector<ItemAnswer>& answers, bool kernelbench) {
  nlohmann::json out = nlohmann::json::array();
  for (const ItemAnswer& a : answers) out.push_back(answer_json(a, kernelbench));
  return {{kernelbench ? "results" : "records", std::move(out)}};
}

}  // namespace kbrl::serving
