#pragma once
// The answers of `kbrl serve` that wait for no evaluation: health (/healthz) and readiness
// (/readyz), /metrics, the tasks and their prompts, the OpenAPI document, and async jobs (GET polls,
// DELETE cancels or forgets). server.cpp reads requests, checks tokens and answers POST
// /v1/evaluate itself; errors are ApiExceptions, as everywhere in serve/.
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "prometheus.h"
#include "scheduler.h"

namespace kbrl::serving {

struct RouteRequest {
  std::string_view method;  // "GET", "DELETE", ...
  std::string_view path;
  const std::map<std::string, std::string>& params;
  std::string client;  // who owns the jobs it asks for (server.cpp's client())
};

struct Reply {
  int status = 200;
  std::string body;
  std::string type = "application/json";
};

/// Paths a health checker asks without a token, even from a connection in a reserve slot.
bool is_health_path(std::string_view path);

/// The answer, or nullopt for POST /v1/evaluate and /v1/openrlhf/reward (the server's). Throws ApiException: 404 for an unknown path or
/// job, 410 for a job dropped to make room, 405 for another method (`allow` then names the path's
/// methods, for the Allow header), 400 for an unknown parameter.
/// `commit` is the build's, for /metrics.
std::optional<Reply> answer(const RouteRequest& request, Scheduler& scheduler, const HttpMetrics& http,
                            std::string_view commit, std::string& allow);

}  // namespace kbrl::serving
