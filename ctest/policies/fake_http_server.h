#pragma once
// A fake HTTP/1.1 server for tests: plain POSIX sockets on 127.0.0.1 (a free port the OS picks),
// one accept thread and one thread per connection, every read bounded by a timeout. Each request
// is recorded and answered by a handler (status, headers, body, optional delay), then the
// connection is closed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace kbrl::testing {

class FakeHttpServer {
 public:
  struct Request {
    std::string method, path, body;
    std::string authorization;  // the Authorization header's value, "" when absent
  };
  struct Reply {
    Reply() = default;
    Reply(int status_, std::string body_, std::vector<std::string> headers_ = {})
        : status(status_), body(std::move(body_)), headers(std::move(headers_)) {}
    int status = 200;
    std::string body;
    std::vector<std::string> headers;  // extra "Name: value" lines
    double delay_seconds = 0;          // waits before answering
  };
  using Handler = std::function<Reply(const Request&)>;

  explicit FakeHttpServer(Handler handler) : handler_(std::move(handler)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) throw std::runtime_error("socket failed");
    int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(fd_);
      throw std::runtime_error("bind/listen on 127.0.0.1 failed");
    }
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~FakeHttpServer() {
    stop_ = true;
    accept_thread_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mutex_);
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
    ::close(fd_);
  }
  FakeHttpServer(const FakeHttpServer&) = delete;
  FakeHttpServer& operator=(const FakeHttpServer&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  /// The recorded requests to `path`.
  std::vector<Request> requests(const std::string& path) const {
    std::vector<Request> out;
    for (auto& r : requests())
      if (r.path == path) out.push_back(r);
    return out;
  }
  /// The most requests the handler had in flight at once.
  int max_in_flight() const { return max_in_flight_; }

  /// A port on 127.0.0.1 where nothing listens (bound, then released).
  static int unused_port() {
    FakeHttpServer s([](const Request&) { return Reply{}; });
    return s.port();
  }

 private:
  void accept_loop() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard lock(mutex_);
      workers_.emplace_back([this, c] { serve(c); });
    }
  }

  static std::string lower(std::string s) {
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
  }

  void serve(int c) {
    timeval tv{5, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string data;
    char buf[65536];
    size_t header_end = std::string::npos;
    while ((header_end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return (void)::close(c);
      data.append(buf, static_cast<size_t>(n));
    }
    Request req;
    size_t content_length = 0;
    {
      const std::string head = data.substr(0, header_end);
      const size_t line_end = head.find("\r\n");
      const std::string first = head.substr(0, line_end);
      const size_t sp1 = first.find(' '), sp2 = first.find(' ', sp1 + 1);
      req.method = first.substr(0, sp1);
      req.path = first.substr(sp1 + 1, sp2 - sp1 - 1);
      size_t pos = line_end;
      while (pos != std::string::npos && pos < head.size()) {
        const size_t next = head.find("\r\n", pos + 2);
        const std::string line = head.substr(pos + 2, (next == std::string::npos ? head.size() : next) - pos - 2);
        const size_t colon = line.find(':');
        if (colon != std::string::npos) {
          const std::string name = lower(line.substr(0, colon));
          std::string value = line.substr(colon + 1);
          value.erase(0, value.find_first_not_of(' '));
          if (name == "content-length") content_length = std::stoul(value);
          if (name == "authorization") req.authorization = value;
        }
        pos = next;
      }
    }
    req.body = data.substr(header_end + 4);
    while (req.body.size() < content_length) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return (void)::close(c);
      req.body.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(req);
    }
    const int now = ++in_flight_;
    int seen = max_in_flight_;
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    Reply reply = handler_(req);
    if (reply.delay_seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(reply.delay_seconds));
    --in_flight_;  // counted while the handler works and the reply waits
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " Fake\r\nContent-Type: application/json\r\n" +
                      "Content-Length: " + std::to_string(reply.body.size()) + "\r\nConnection: close\r\n";
    for (auto& h : reply.headers) out += h + "\r\n";
    out += "\r\n" + reply.body;
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::send(c, out.data() + done, out.size() - done, MSG_NOSIGNAL);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::shutdown(c, SHUT_WR);
    ::close(c);
  }

  Handler handler_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::thread accept_thread_;
  mutable std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::vector<Request> requests_;
};

}  // namespace kbrl::testing
