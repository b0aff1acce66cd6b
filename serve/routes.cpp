#include "routes.h"

#include <fmt/format.h>

#include <harness/record/json_text.h>

#include "api.h"
#include "request_parts.h"
#include "server.h"

namespace kbrl::serving {
namespace {

using Json = nlohmann::json;

Reply json_reply(int status, const Json& body) { return {status, dump_lossy(body), "application/json"}; }

/// The path's methods: `allow` names them; another method is a 405.
void only(const RouteRequest& r, std::initializer_list<std::string_view> methods, std::string_view names,
          std::string& allow) {
  allow = names;
  for (std::string_view m : methods)
    if (r.method == m) return;
  throw ApiException(ApiError{405, "method_not_allowed", fmt::format("{} takes {} only", r.path, names), {}, false, 0});
}

Reply readiness(const Scheduler& scheduler) {
  const SchedulerMetrics m = scheduler.metrics();
  Json gpus = Json::array();
  for (const GpuState& g : m.per_gpu) {
    Json one = {{"device", g.device}, {"worker", g.state}};
    if (!g.detail.empty()) one["detail"] = g.detail;
    gpus.push_back(std::move(one));
  }
  const bool ready = scheduler.ready();
  const std::string status = scheduler.draining() ? "draining" : ready ? "ready" : "not_ready";
  return json_reply(ready ? 200 : 503, {{"status", status}, {"gpus", std::move(gpus)}});
}

Reply job(const RouteRequest& r, Scheduler& scheduler, std::string& allow) {
  only(r, {"GET", "DELETE"}, "GET, DELETE", allow);
  check_params(r.params, {"format"});
  const bool kernelbench = kernelbench_format(r.params);
  const std::string id(r.path.substr(9));
  JobStore::Lookup found;
  if (is_hex_id(id)) found = r.method == "DELETE" ? scheduler.delete_job(id, r.client) : scheduler.find_job(id, r.client);
  if (found.gone)
    throw ApiException(ApiError{410, "gone", fmt::format("job '{}' finished and was dropped to make room for newer "
                                                         "ones: poll sooner, or evaluate its items again", id),
                                {}, false, 0});
  if (!found.job)
    throw ApiException(not_found(fmt::format("no job '{}' of yours (jobs are kept a while after they finish, until "
                                             "deleted)", id)));
  Json j = found.job->to_json();
  if (kernelbench && j.contains("records")) {
    j.erase("records");
    j.update(records_json(found.job->answers(), true));
  }
  return json_reply(200, j);
}

}  // namespace

bool is_health_path(std::string_view path) { return path == "/healthz" || path == "/readyz"; }

std::optional<Reply> answer(const RouteRequest& r, Scheduler& scheduler, const HttpMetrics& http, std::string_view commit,
                            std::string& allow) {
  const std::string_view p = r.path;
  if (p == "/healthz") {
    only(r, {"GET"}, "GET", allow);
    check_params(r.params, {});
    const SchedulerMetrics m = scheduler.metrics();
    return json_reply(200, {{"status", scheduler.draining() ? "draining" : "ok"},
                            {"gpus", m.gpus}, {"queued", m.queued}, {"running", m.running}});
  }
  if (p == "/readyz") {
    only(r, {"GET"}, "GET", allow);
    check_params(r.params, {});
    return readiness(scheduler);
  }
  if (p == "/v1/evaluate" || p == "/v1/openrlhf/reward") {
    only(r, {"POST"}, "POST", allow);
    return std::nullopt;
  }
  if (p == "/v1/tasks") {
    only(r, {"GET"}, "GET", allow);
    check_params(r.params, {});
    static const std::string tasks = tasks_json().dump();
    return Reply{200, tasks, "application/json"};
  }
  if (p == "/v1/openapi.json") {
    only(r, {"GET"}, "GET", allow);
    check_params(r.params, {});
    return Reply{200, openapi_document(), "application/json"};
  }
  if (p == "/metrics") {
    only(r, {"GET"}, "GET", allow);
    check_params(r.params, {});
    return Reply{200, prometheus(scheduler.metrics(), http, commit), "text/plain; version=0.0.4"};
  }
  if (p.starts_with("/v1/jobs/")) return job(r, scheduler, allow);
  if (p.starts_with("/v1/tasks/") && p.ends_with("/prompt")) {
    only(r, {"GET"}, "GET", allow);
    check_params(r.params, {"style"});
    const auto id = parse_task_id(p.substr(10, p.size() - 10 - 7));
    if (!id) throw ApiException(not_found(fmt::format("no task '{}' (tasks are 1..100)", p.substr(10, p.size() - 17))));
    auto style = r.params.find("style");
    return json_reply(200, prompt_json(*id, style == r.params.end() ? "body" : style->second,
                                       scheduler.defaults().scale));
  }
  throw ApiException(not_found(fmt::format("no such path: {} (GET /v1/openapi.json lists the API)", p)));
}

}  // namespace kbrl::serving
