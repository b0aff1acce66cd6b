#pragma once
// A `kbrl serve` process of this tree (KBRL_CLI) on a free loopback port, and raw HTTP/1.1 over
// TCP to it: for the tests that send what a hostile client would (any bytes), where a fault must
// show as a dead process, not as a crashed test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kbrl::serving::testing {

class ServeProcess {
 public:
  /// Starts `kbrl serve --host 127.0.0.1 --port 0 <args>` and reads the port from its first line.
  explicit ServeProcess(const std::vector<std::string>& args) {
    std::vector<std::string> all = {KBRL_CLI, "serve", "--host", "127.0.0.1", "--port", "0"};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;  // built before fork: the child only dup2s and execs
    for (std::string& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::close(out[0]);
      ::close(out[1]);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = ::fdopen(out[0], "r");
    char line[256] = {};
    if (stdout_ && std::fgets(line, sizeof line, stdout_)) {
      const char* colon = std::strrchr(line, ':');
      if (colon) port_ = static_cast<uint16_t>(std::atoi(colon + 1));
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && alive()) {
      ::kill(pid_, SIGTERM);  // drain, then hand back what is queued
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      ::kill(pid_, SIGTERM);
      for (int i = 0; i < 300 && alive(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (alive()) ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (stdout_) std::fclose(stdout_);
  }
  ServeProcess(const ServeProcess&) = delete;
  ServeProcess& operator=(const ServeProcess&) = delete;

  uint16_t port() const { return port_; }
  /// False once the process has exited (its status is then `exit_status`).
  bool alive() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return true;
    exited_ = true;
    exit_status = status;
    return false;
  }
  int exit_status = 0;

 private:
  pid_t pid_ = -1;
  FILE* stdout_ = nullptr;
  uint16_t port_ = 0;
  bool exited_ = false;
};

/// A TCP connection to 127.0.0.1:`port` from the loopback address `source` (127.0.0.2 is another
/// peer); -1 when it cannot connect.
inline int connect_to(uint16_t port, const char* source = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in from{};
  from.sin_family = AF_INET;
  ::inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct RawAnswer {
  int status = 0;    // 0: no HTTP answer (closed or timed out)
  std::string text;  // the whole answer, head and body
  std::string body() const {
    const size_t end = text.find("\r\n\r\n");
    return end == std::string::npos ? "" : text.substr(end + 4);
  }
};

/// Reads one answer from `fd`: until the connection closes, the body of its Content-Length has
/// come, or `timeout_seconds` pass.
inline RawAnswer read_answer(int fd, double timeout_seconds) {
  RawAnswer answer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  char buffer[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    answer.text.append(buffer, static_cast<size_t>(n));
    const size_t head_end = answer.text.find("\r\n\r\n");
    if (head_end == std::string::npos) continue;
    const size_t length_at = answer.text.find("Content-Length: ");
    if (length_at != std::string::npos && length_at < head_end &&
        answer.text.size() >= head_end + 4 + std::stoul(answer.text.substr(length_at + 16)))
      break;
  }
  if (answer.text.rfind("HTTP/1.1 ", 0) == 0 && answer.text.size() >= 12) answer.status = std::atoi(answer.text.c_str() + 9);
  return answer;
}

/// Sends all of `bytes` on `fd` (as much as the peer takes), then shuts the sending side.
inline void send_all_and_shut(int fd, std::string_view bytes) {
  for (size_t sent = 0; sent < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
}

/// Sends `bytes` on a fresh connection (then shuts the sending side) and reads the answer.
inline RawAnswer raw_request(uint16_t port, std::string_view bytes, double timeout_seconds = 10,
                             const char* source = "127.0.0.1") {
  const int fd = connect_to(port, source);
  if (fd < 0) return {};
  send_all_and_shut(fd, bytes);
  RawAnswer answer = read_answer(fd, timeout_seconds);
  ::close(fd);
  return answer;
}

/// raw_request, then waits (up to `timeout_seconds`) for the server to close the connection: once
/// it has, the server has given the connection's slot back, so the next request cannot race it.
inline RawAnswer raw_request_until_closed(uint16_t port, std::string_view bytes, double timeout_seconds = 10) {
  const int fd = connect_to(port);
  if (fd < 0) return {};
  send_all_and_shut(fd, bytes);
  RawAnswer answer = read_answer(fd, timeout_seconds);
  char rest[4096];
  pollfd p{fd, POLLIN, 0};
  while (::poll(&p, 1, static_cast<int>(timeout_seconds * 1000)) > 0 && ::recv(fd, rest, sizeof rest, 0) > 0) {
  }
  ::close(fd);
  return answer;
}

/// A GET of `target` (any bytes) with extra header lines ("Name: value\r\n" each).
inline std::string get_request(std::string_view target, std::string_view headers = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + std::string(headers) +
         "Connection: close\r\n\r\n";
}

/// A DELETE of `target` with extra header lines.
inline std::string delete_request(std::string_view target, std::string_view headers = "") {
  return "DELETE " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + std::string(headers) +
         "Connection: close\r\n\r\n";
}

/// A POST of a JSON `body` to `target` with extra header lines.
inline std::string post_request(std::string_view target, std::string_view body, std::string_view headers = "") {
  return "POST " + std::string(target) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         std::string(headers) + "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

}  // namespace kbrl::serving::testing
