#include "server.h"

#include <atomic>
#include <csignal>
#include <map>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include <harness/record/json_text.h>
#include <kbrl/error.h>

#include "prometheus.h"
#include "request_parts.h"
#include "routes.h"

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
constexpr double kReserveReadTimeoutSeconds = 2;  // an idle connection in a reserve slot is closed sooner

std::chrono::milliseconds as_duration(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
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
  ConnectionCounter connections{options.connections};  // before ioc: sessions it destroys give slots back
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  net::signal_set signals{ioc};
  std::atomic<int> stop_requests{0};
  // run() returns only on ioc.stop(), after the drain has answered everything: not when the io
  // context runs out of handlers (the acceptor closed and no session open, while jobs still run).
  net::executor_work_guard<net::io_context::executor_type> keep_running = net::make_work_guard(ioc);
  std::mutex drainer_mutex;  // the stopping thread starts the drainer; run() and ~Server join it
  std::thread drainer;
  mutable std::mutex http_mutex;
  HttpMetrics http;  // answers by status, their latency

  Impl(ServerOptions o, Scheduler& s) : options(std::move(o)), scheduler(s) {}

  void count(int status, double seconds) {
    std::lock_guard lock(http_mutex);
    ++http.requests[status];
    http.request_seconds.observe(seconds);
  }
  HttpMetrics http_metrics() const {
    std::lock_guard lock(http_mutex);
    return http;
  }

  class Session;
  void accept();
  void request_stop(bool hand_back, bool announce);  // announce: say so on stderr (a signal)
  void join_drainer() {
  std::lock_guard lock(drainer_mutex);
    if (drainer.joinable()) drainer.join();
  }
};

class Server::Impl::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Impl& server, tcp::socket socket, std::string peer, std::unique_ptr<ConnectionCounter::Ticket> slot)
      : server_(server), stream_(std::move(socket)), peer_(std::move(peer)), slot_(std::move(slot)) {}

  void start() { read(); }

 private:
  bool in_reserve() const { return !slot_ || slot_->slot() == ConnectionCounter::Slot::reserve; }

  double read_timeout() const {
    return in_reserve() ? std::min(server_.options.read_timeout_seconds, kReserveReadTimeoutSeconds)
                        : server_.options.read_timeout_seconds;
  }

  void read() {
    parser_.emplace();
    parser_->body_limit(server_.options.limits.max_body_bytes);
    parser_->header_limit(kMaxHeaderBytes);
    stream_.expires_after(as_duration(read_timeout()));
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  /// Runs a handler; what it throws ends this request with an error answer, or, when even that
  /// fails, closes the connection: never the server.
  template <typename Handler>
  void guarded(Handler&& handler) {
    try {
      try {
        handler();
      } catch (const ApiException& e) {
        send_error(e.error(), request_.keep_alive());
      } catch (const std::exception& e) {
        send_error({500, "internal", fmt::format("internal error: {}", e.what()), {}, true, 0}, false);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "kbrl serve: a request from %s failed: %s\n", peer_.c_str(), e.what());
      close();
    }
  }

  void on_read(beast::error_code ec, size_t bytes) {
    guarded([&] { handle_read(ec, bytes); });
  }

  void handle_read(beast::error_code ec, size_t) {
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
    received_ = std::chrono::steady_clock::now();
    route();
  }

  void route() {
    const auto target = request_.target();
    const auto [path, params] = split_target(std::string_view(target.data(), target.size()));
    allow_.clear();
    if (in_reserve() && !is_health_path(path) && !(has_token() && token_matches())) {
      request_.keep_alive(false);
      throw ApiException(ApiError{503, "too_many_connections",
                                  "this server holds as many connections as it takes (from your address or in all): "
                                  "close idle ones and retry",
                                  {}, true, 1});
    }
    if (!is_health_path(path)) authorize();
    const auto method = request_.method_string();
    const RouteRequest r{std::string_view(method.data(), method.size()), path, params, client()};
    if (std::optional<Reply> reply = answer(r, server_.scheduler, server_.http_metrics(), server_.options.commit, allow_))
      return send(reply->status, std::move(reply->body), reply->type);
    if (path == "/v1/openrlhf/reward") {  // OpenRLHF's remote reward model protocol
      check_params(params, {});
      return evaluate(parse_openrlhf_request(request_.body(), server_.scheduler.defaults(), server_.options.limits),
                      false, Shape::openrlhf);
    }
    check_params(params, {"async", "format"});  // POST /v1/evaluate
    evaluate(parse_evaluate_request(request_.body(), server_.scheduler.defaults(), server_.options.limits),
             parse_flag(params, "async"), kernelbench_format(params) ? Shape::kernelbench : Shape::records);
  }

  bool has_token() const { return !server_.options.token.empty(); }

  bool token_matches() const {
    const auto header = request_[http::field::authorization];
    return bearer_matches(std::string_view(header.data(), header.size()), server_.options.token);
  }

  void authorize() {
    if (has_token() && !token_matches())
      throw ApiException(ApiError{401, "unauthorized", "this server needs 'Authorization: Bearer <token>'", {}, false, 0});
  }

  std::string client() const {
    const auto named = request_["X-Kbrl-Client"];
    if (!named.empty() && named.size() <= kMaxClientName) return "name:" + std::string(named);
    return "peer:" + peer_;
  }

  enum class Shape { records, kernelbench, openrlhf };  // what a synchronous answer holds

  void evaluate(std::vector<PreparedItem> items, bool async, Shape shape) {
    if (async) {
      auto job = server_.scheduler.submit(client(), std::move(items));
      const std::string status_url = "/v1/jobs/" + job->id();
      auto res = std::make_shared<Response>(http::status::accepted, 11);
      res->set(http::field::location, status_url);  // RFC 9110: where the job's status is
      return write(std::move(res), dump_lossy(Json{{"job", job->id()}, {"status_url", status_url}}),
                   "application/json", request_.keep_alive());
    }
    auto self = shared_from_this();
    auto executor = stream_.get_executor();
    auto job = server_.scheduler.submit(client(), std::move(items), [self, executor, shape](const Job& done) {
      // On a dispatcher thread: the answer is written on this connection's strand.
      std::optional<ApiError> error = done.error();
      Json body;
      if (!error)
        body = shape == Shape::openrlhf ? openrlhf_rewards_json(done.answers())
                                        : records_json(done.answers(), shape == Shape::kernelbench);
      net::post(executor, [self, error = std::move(error), body = std::move(body)]() mutable {
        self->guarded([&] {
          self->deadline_.reset();
          if (error) return self->send_error(*error, self->request_.keep_alive());
          self->send_json(200, body);
        });
      });
    });
    deadline_.emplace(stream_.get_executor());
    deadline_->expires_after(as_duration(server_.options.request_timeout_seconds));
    deadline_->async_wait([self, job](beast::error_code ec) {
      if (ec) return;  // answered in time
      self->server_.scheduler.cancel(
          job, {504, "deadline_exceeded",
                fmt::format("no answer within {} s: the items still queued were dropped; send fewer at once",
                            self->server_.options.request_timeout_seconds),
                {}, true, 0});
    });
  }

  // dump_lossy: a string that is not UTF-8 (none should be left: records keep their exact bytes
  // beside, json_text.h) is written with U+FFFD rather than throwing.
  void send_json(int status, const Json& body) { send(status, dump_lossy(body), "application/json"); }

  void send_error(const ApiError& error, bool keep_alive) {
    auto res = std::make_shared<Response>(static_cast<http::status>(error.status), 11);
    if (error.retry_after_seconds > 0) res->set(http::field::retry_after, std::to_string(error.retry_after_seconds));
    if (error.status == 405) res->set(http::field::allow, allow_);
    write(std::move(res), dump_lossy(error_json(error)), "application/json", keep_alive);
  }

  void send(int status, std::string body, std::string_view type) {
    write(std::make_shared<Response>(static_cast<http::status>(status), 11), std::move(body), type,
          request_.keep_alive());
  }

  void write(std::shared_ptr<Response> res, std::string body, std::string_view type, bool keep_alive) {
    server_.count(static_cast<int>(res->result_int()),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - received_).count());
    res->set(http::field::server, "kbrl");
    res->set(http::field::content_type, std::string(type));
    res->keep_alive(keep_alive && !server_.scheduler.draining());
    res->body() = std::move(body);
    res->prepare_payload();
    stream_.expires_after(as_duration(read_timeout()));
    http::async_write(stream_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec || !res->keep_alive()) return self->close();
      self->read();
    });
  }

  // The slot is given back before the peer can see the connection end: a client that reconnects
  // at once finds it free, rather than racing this session's destruction.
  void close() {
    slot_.reset();
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  Impl& server_;
  beast::tcp_stream stream_;
  std::string peer_;
  std::unique_ptr<ConnectionCounter::Ticket> slot_;  // its place among the open connections
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Request request_;
  std::string allow_;  // the methods of the path being answered (a 405's Allow header)
  std::chrono::steady_clock::time_point received_ = std::chrono::steady_clock::now();  // the request's last byte
  std::optional<net::steady_timer> deadline_;
};

void Server::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      boost::system::error_code peer_ec;
      const auto peer = socket.remote_endpoint(peer_ec);
      std::string address = peer_ec ? "unknown" : peer.address().to_string();
      if (auto slot = connections.admit(address)) {
        std::make_shared<Session>(*this, std::move(socket), std::move(address), std::move(slot))->start();
      } else {
        boost::system::error_code ignored;
        socket.close(ignored);  // over every limit: refused at once, the client retries
      }
    }
    accept();
  });
}

void Server::Impl::request_stop(bool hand_back, bool announce) {
  const int n = ++stop_requests;
  if (n == 1 && !hand_back) {
    if (announce)
      std::fprintf(stderr, "kbrl serve: draining: no new jobs; answering what is queued (again to hand it back)\n");
  } else {
    if (announce)
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
  constexpr double kMaxTimeout = 1e7;  // seconds (115 days): more overflows the timers
  KBRL_CHECK_INPUT(o.request_timeout_seconds > 0 && o.request_timeout_seconds <= kMaxTimeout,
                   "--request-timeout {}: must be a positive number of seconds, at most {}", o.request_timeout_seconds,
                   kMaxTimeout);
  KBRL_CHECK_INPUT(o.read_timeout_seconds > 0 && o.read_timeout_seconds <= kMaxTimeout,
                   "the read timeout {} must be a positive number of seconds, at most {}", o.read_timeout_seconds,
                   kMaxTimeout);
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
      impl_->request_stop(false, true);
      impl_->signals.async_wait(on_signal);
    };
    impl_->signals.async_wait(on_signal);
  }
  impl_->accept();
  // A handler that throws past its own guard leaves ioc.run(): report it and go on serving.
  auto serve = [this] {
    for (;;) {
      try {
        impl_->ioc.run();
        return;
      } catch (const std::exception& e) {
        std::fprintf(stderr, "kbrl serve: a handler failed (the server goes on): %s\n", e.what());
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < impl_->options.http_threads; ++i) threads.emplace_back(serve);
  serve();
  for (auto& t : threads) t.join();
  impl_->join_drainer();
}

void Server::stop(bool hand_back) { impl_->request_stop(hand_back, false); }

}  // namespace kbrl::serving
