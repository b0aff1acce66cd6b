#include "server.h"

#include <atomic>
#include <csignal>
#include <map>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <kbrl/error.h>

namespace kbrl::serving {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Json = nlohmann::json;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

constexpr size_t kMaxHeaderBytes = 16 << 10;
constexpr size_t kMaxClientName = 64;

/// Splits "/path?a=1&b=2" into the path and its parameters (no percent-decoding: none of ours
/// needs it).
std::pair<std::string, std::map<std::string, std::string>> split_target(std::string_view target) {
  std::map<std::string, std::string> params;
  const size_t q = target.find('?');
  const std::string path(target.substr(0, q));
  if (q == std::string_view::npos) return {path, params};
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    if (!pair.empty()) params[std::string(pair.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(pair.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return {path, params};
}

void check_params(const std::map<std::string, std::string>& params, std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : params)
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw ApiException(bad_request(fmt::format("unknown query parameter '{}'", name), name));
}

bool parse_flag(const std::map<std::string, std::string>& params, const std::string& name) {
  auto it = params.find(name);
  if (it == params.end()) return false;
  if (it->second == "1") return true;
  if (it->second == "0") return false;
  throw ApiException(bad_request(fmt::format("{} must be 0 or 1, not '{}'", name, it->second), name));
}

bool is_hex_id(std::string_view id) {
  return !id.empty() && id.size() <= 32 &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

std::optional<int> parse_task_id(std::string_view text) {
  if (text.empty() || text.size() > 6) return std::nullopt;
  int id = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
  }
  return id;
}

/// Constant-time comparison of the bearer token.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

std::string prometheus(const SchedulerMetrics& m, const std::map<int, int64_t>& requests) {
  struct Single {
    const char* name;
    const char* type;
    const char* help;
    double value;
  };
  const Single singles[] = {
      {"kbrl_queue_items", "gauge", "Items waiting for a GPU.", static_cast<double>(m.queued)},
      {"kbrl_running_items", "gauge", "Items a GPU dispatcher holds.", static_cast<double>(m.running)},
      {"kbrl_gpus", "gauge", "GPUs this server evaluates on.", static_cast<double>(m.gpus)},
      {"kbrl_deduplicated_total", "counter", "Items answered by another item's evaluation.",
       static_cast<double>(m.deduplicated)},
      {"kbrl_compile_seconds_total", "counter", "NVRTC compile time of the evaluated candidates.", m.compile_seconds},
      {"kbrl_gpu_seconds_total", "counter", "Time the GPU dispatchers spent evaluating (compile, check, time).",
       m.gpu_seconds},
      {"kbrl_kernel_seconds_total", "counter", "Timed runs of candidates and their paired references.",
       m.kernel_seconds},
      {"kbrl_worker_restarts_total", "counter", "GPU worker processes started again after a crash or timeout.",
       static_cast<double>(m.worker_restarts)},
      {"kbrl_jobs_failed_total", "counter", "Groups of items failed by an infrastructure fault.",
       static_cast<double>(m.jobs_failed)},
  };
  std::string out;
  auto header = [&out](std::string_view name, std::string_view type, std::string_view help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  for (const Single& s : singles) {
    header(s.name, s.type, s.help);
    out += fmt::format("{} {}\n", s.name, s.value);
  }
  header("kbrl_evaluations_total", "counter", "Records answered, by outcome.");
  for (const auto& [outcome, n] : m.evaluations) out += fmt::format("kbrl_evaluations_total{{outcome=\"{}\"}} {}\n", outcome, n);
  header("kbrl_http_requests_total", "counter", "HTTP requests answered, by status.");
  for (const auto& [status, n] : requests) out += fmt::format("kbrl_http_requests_total{{code=\"{}\"}} {}\n", status, n);
  return out;
}

}  // namespace

bool is_loopback(const std::string& host) {
  if (host == "localhost") return true;
  boost::system::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  return !ec && address.is_loopback();
}

struct Server::Impl {
  ServerOptions options;
  Scheduler& scheduler;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::signal_set signals{ioc};
  std::atomic<size_t> connections{0};
  std::atomic<int> stop_requests{0};
  // run() returns only on ioc.stop(), after the drain has answered everything: not when the io
  // context runs out of handlers (the acceptor closed and no session open, while jobs still run).
  net::executor_work_guard<net::io_context::executor_type> keep_running = net::make_work_guard(ioc);
  std::mutex drainer_mutex;  // the stopping thread starts the drainer; run() and ~Server join it
  std::thread drainer;
  std::mutex requests_mutex;
  std::map<int, int64_t> requests;  // answered, by status

  Impl(ServerOptions o, Scheduler& s) : options(std::move(o)), scheduler(s) {}

  void count(int status) {
    std::lock_guard lock(requests_mutex);
    ++requests[status];
  }

  class Session;
  void accept();
  void request_stop(bool hand_back);
  void join_drainer() {
  std::lock_guard lock(drainer_mutex);
    if (drainer.joinable()) drainer.join();
  }
};

class Server::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {
    boost::system::error_code ec;
    const auto peer = stream_.socket().remote_endpoint(ec);
    peer_ = ec ? "unknown" : peer.address().to_string();
    ++server_.connections;
  }
  ~Session() { --server_.connections; }

  void start() { read(); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(server_.options.limits.max_body_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(server_.options.read_timeout_seconds * 1000)));
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, size_t) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == net::error::operation_aborted ||
        ec == net::error::connection_reset || ec == net::error::eof)
      return close();
    if (ec == http::error::body_limit)
      return send_error(too_large(fmt::format("the body is over {} bytes", server_.options.limits.max_body_bytes)), false);
    if (ec == http::error::header_limit)
      return send_error(too_large(fmt::format("the header is over {} bytes", kMaxHeaderBytes)), false);
    if (ec) return send_error(bad_request(fmt::format("not an HTTP/1.1 request: {}", ec.message())), false);
    stream_.expires_never();  // an evaluation may take long; the request timeout covers it
    request_ = parser_->release();
    try {
      route();
    } catch (const ApiException& e) {
      send_error(e.error(), request_.keep_alive());
    } catch (const std::exception& e) {
      send_error({500, "internal", fmt::format("internal error: {}", e.what()), {}, true, 0}, request_.keep_alive());
    }
  }

  void route() {
    const auto target = request_.target();
    const auto [path, params] = split_target(std::string_view(target.data(), target.size()));
    const auto method = request_.method();
    auto only = [&](http::verb verb, std::string_view allow) {
      allow_ = allow;
      if (method != verb)
        throw ApiException(ApiError{405, "method_not_allowed", fmt::format("{} takes {} only", path, allow), {}, false, 0});
    };
    if (path == "/healthz") {
      only(http::verb::get, "GET");
      check_params(params, {});
      const SchedulerMetrics m = server_.scheduler.metrics();
      return send_json(200, {{"status", server_.scheduler.draining() ? "draining" : "ok"},
                             {"gpus", m.gpus}, {"queued", m.queued}, {"running", m.running}});
    }
    authorize();
    if (path == "/v1/evaluate") {
      only(http::verb::post, "POST");
      check_params(params, {"async"});
      return evaluate(parse_flag(params, "async"));
    }
    if (path == "/v1/tasks") {
      only(http::verb::get, "GET");
      check_params(params, {});
      static const std::string tasks = tasks_json().dump();
      return send(200, tasks, "application/json");
    }
    if (path == "/v1/openapi.json") {
      only(http::verb::get, "GET");
      check_params(params, {});
      return send(200, openapi_document(), "application/json");
    }
    if (path == "/metrics") {
      only(http::verb::get, "GET");
      check_params(params, {});
      std::map<int, int64_t> requests;
      {
        std::lock_guard lock(server_.requests_mutex);
        requests = server_.requests;
      }
      return send(200, prometheus(server_.scheduler.metrics(), requests), "text/plain; version=0.0.4");
    }
    const std::string_view p = path;
    if (p.starts_with("/v1/jobs/")) {
      only(http::verb::get, "GET");
      check_params(params, {});
      const std::string id(p.substr(9));
      auto job = is_hex_id(id) ? server_.scheduler.job(id) : nullptr;
      if (!job) throw ApiException(not_found(fmt::format("no job '{}' (jobs are kept a while after they finish)", id)));
      return send_json(200, job->to_json());
    }
    if (p.starts_with("/v1/tasks/") && p.ends_with("/prompt")) {
      only(http::verb::get, "GET");
      check_params(params, {"style"});
      const auto id = parse_task_id(p.substr(10, p.size() - 10 - 7));
      if (!id) throw ApiException(not_found(fmt::format("no task '{}' (tasks are 1..100)", p.substr(10, p.size() - 17))));
      auto style = params.find("style");
      return send_json(200, prompt_json(*id, style == params.end() ? "body" : style->second,
                                        server_.scheduler.defaults().scale));
    }
    throw ApiException(not_found(fmt::format("no such path: {} (GET /v1/openapi.json lists the API)", path)));
  }

  void authorize() {
    const std::string& token = server_.options.token;
    if (token.empty()) return;
    const auto header = request_[http::field::authorization];
    constexpr std::string_view bearer = "Bearer ";
    if (header.size() <= bearer.size() || std::string_view(header.data(), bearer.size()) != bearer ||
        !same_secret(std::string_view(header.data() + bearer.size(), header.size() - bearer.size()), token))
      throw ApiException(ApiError{401, "unauthorized", "this server needs 'Authorization: Bearer <token>'", {}, false, 0});
  }

  std::string client() const {
    const auto named = request_["X-Kbrl-Client"];
    if (!named.empty() && named.size() <= kMaxClientName) return "name:" + std::string(named);
    return "peer:" + peer_;
  }

  void evaluate(bool async) {
    std::vector<PreparedItem> items =
        parse_evaluate_request(request_.body(), server_.scheduler.defaults(), server_.options.limits);
    if (async) {
      auto job = server_.scheduler.submit(client(), std::move(items));
      return send_json(202, {{"job", job->id()}, {"status_url", "/v1/jobs/" + job->id()}});
    }
    auto self = shared_from_this();
    auto executor = stream_.get_executor();
    auto job = server_.scheduler.submit(client(), std::move(items), [self, executor](const Job& done) {
      // On a dispatcher thread: the answer is written on this connection's strand.
      std::optional<ApiError> error = done.error();
      Json body;
      if (!error) body = {{"records", done.records()}};
      net::post(executor, [self, error = std::move(error), body = std::move(body)]() mutable {
        self->deadline_.reset();
        if (error) return self->send_error(*error, self->request_.keep_alive());
        self->send_json(200, body);
      });
    });
    deadline_.emplace(stream_.get_executor());
    deadline_->expires_after(
        std::chrono::milliseconds(static_cast<int64_t>(server_.options.request_timeout_seconds * 1000)));
    deadline_->async_wait([self, job](beast::error_code ec) {
      if (ec) return;  // answered in time
      self->server_.scheduler.cancel(
          job, {504, "deadline_exceeded",
                fmt::format("no answer within {} s: the items still queued were dropped; send fewer at once",
                            self->server_.options.request_timeout_seconds),
                {}, true, 0});
    });
  }

  void send_json(int status, const Json& body) { send(status, body.dump(), "application/json"); }

  void send_error(const ApiError& error, bool keep_alive) {
    auto res = std::make_shared<Response>(static_cast<http::status>(error.status), 11);
    if (error.retry_after_seconds > 0) res->set(http::field::retry_after, std::to_string(error.retry_after_seconds));
    if (error.status == 405) res->set(http::field::allow, allow_);
    write(std::move(res), error_json(error).dump(), "application/json", keep_alive);
  }

  void send(int status, std::string body, std::string_view type) {
    write(std::make_shared<Response>(static_cast<http::status>(status), 11), std::move(body), type,
          request_.keep_alive());
  }

  void write(std::shared_ptr<Response> res, std::string body, std::string_view type, bool keep_alive) {
    server_.count(static_cast<int>(res->result_int()));
    res->set(http::field::server, "kbrl");
    res->set(http::field::content_type, std::string(type));
    res->keep_alive(keep_alive && !server_.scheduler.draining());
    res->body() = std::move(body);
    res->prepare_payload();
    stream_.expires_after(std::chrono::milliseconds(static_cast<int64_t>(server_.options.read_timeout_seconds * 1000)));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) return self->close();
      self->read();
    });
  }

  void close() {
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Request request_;
  std::string peer_;
  std::string allow_;  // the methods of the path being answered (a 405's Allow header)
  std::optional<net::steady_timer> deadline_;
};

void Server::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      if (connections >= options.max_connections) {
        boost::system::error_code ignored;
        socket.close(ignored);  // over the limit: refused at once, the client retries
      } else {
        std::make_shared<Session>(*this, std::move(socket))->start();
      }
    }
    accept();
  });
}

void Server::Impl::request_stop(bool hand_back) {
  const int n = ++stop_requests;
  if (n == 1 && !hand_back) {
    std::fprintf(stderr, "kbrl serve: draining: no new jobs; answering what is queued (again to hand it back)\n");
  } else {
    std::fprintf(stderr, "kbrl serve: handing queued items back (503 shutting_down); stopping after the running ones\n");
    scheduler.hand_back();
  }
  if (n > 1) return;
  net::post(ioc, [this] {
    boost::system::error_code ignored;
    acceptor.close(ignored);
  });
  // Draining joins the dispatchers: off the io threads, which still write the answers.
  std::lock_guard lock(drainer_mutex);
  drainer = std::thread([this] {
    scheduler.drain();
    net::post(ioc, [this] {
      // Answers posted by the last dispatcher run before this: give their writes a moment.
      auto timer = std::make_shared<net::steady_timer>(ioc, std::chrono::milliseconds(500));
      timer->async_wait([this, timer](beast::error_code) { ioc.stop(); });
    });
  });
}

Server::Server(ServerOptions options, Scheduler& scheduler) : impl_(std::make_unique<Impl>(std::move(options), scheduler)) {
  auto& o = impl_->options;
  KBRL_CHECK_INPUT(is_loopback(o.host) || !o.token.empty(),
                   "binding {} (not loopback) needs a bearer token: give --token-file", o.host);
  KBRL_CHECK_INPUT(o.http_threads >= 1, "the server needs at least one HTTP thread");
  boost::system::error_code ec;
  const auto address = net::ip::make_address(o.host == "localhost" ? "127.0.0.1" : o.host, ec);
  KBRL_CHECK_INPUT(!ec, "--host {}: not an IP address ({})", o.host, ec.message());
  const tcp::endpoint endpoint(address, o.port);
  auto& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  KBRL_CHECK_INPUT(!ec, "cannot listen on {}:{}: {}", o.host, o.port, ec.message());
}

Server::~Server() {
  impl_->ioc.stop();
  impl_->join_drainer();
}

uint16_t Server::port() const { return impl_->acceptor.local_endpoint().port(); }

void Server::run(bool handle_signals) {
  if (handle_signals) {
    impl_->signals.add(SIGINT);
    impl_->signals.add(SIGTERM);
    std::function<void(beast::error_code, int)> on_signal = [this, &on_signal](beast::error_code ec, int) {
      if (ec) return;
      impl_->request_stop(false);
      impl_->signals.async_wait(on_signal);
    };
    impl_->signals.async_wait(on_signal);
  }
  impl_->accept();
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->options.http_threads; ++i) threads.emplace_back([this] { impl_->ioc.run(); });
  impl_->ioc.run();
  for (auto& t : threads) t.join();
  impl_->join_drainer();
}

void Server::stop(bool hand_back) { impl_->request_stop(hand_back); }

}  // namespace kbrl::serving
