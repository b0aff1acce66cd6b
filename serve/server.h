#pragma once
// `kbrl serve`'s HTTP/1.1 front end (Boost.Beast): routing, the bearer token, size limits, read
// timeouts for slow clients, and a graceful stop. The evaluation itself is the Scheduler's.
#include <cstdint>
#include <memory>
#include <string>

#include "api.h"
#include "connection_limits.h"
#include "scheduler.h"

namespace kbrl::serving {

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8750;  // 0: any free port (port() says which)
  std::string token;     // "" = none; required to bind anything but loopback
  ServeLimits limits;
  int http_threads = 4;
  double read_timeout_seconds = 30;       // a request's header and body must arrive within this
  double request_timeout_seconds = 3600;  // a synchronous evaluate waits at most this (then 504)
  ConnectionLimits connections;           // open connections, in all and per peer (connection_limits.h)
  std::string commit;                     // the build's, for /metrics' kbrl_build_info ("" = unknown)
};

/// The OpenAPI 3.0 document of the API (serve/openapi.json, embedded at build time).
const std::string& openapi_document();

/// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback(const std::string& host);

class Server {
 public:
  /// Binds and listens. Throws InputError for a non-loopback host without a token, a timeout that
  /// is not a positive number of seconds, an unusable address or a port in use.
  Server(ServerOptions options, Scheduler& scheduler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  /// Serves until stop() or SIGINT/SIGTERM (when `handle_signals`): the first signal drains (no new
  /// jobs, what is queued finishes and is answered), a second hands queued items back (their
  /// requests get 503 shutting_down) and stops after the running ones. A handler that throws ends
  /// its request with a 500 or its connection, never the server (reported on stderr).
  void run(bool handle_signals = true);
  /// Asks run() to return after draining; safe from any thread.
  void stop(bool hand_back = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl::serving
