// The parent side of process isolation (see worker.h).
#include "worker.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <thread>
#include <utility>

#include <kbrl/error.h>

#include "worker_process.h"

// For a POSIX call whose failure was detected after other checks (errno in `err`).
#define KBRL_POSIX_FAIL(call, err)                                                          \
  throw ::kbrl::ApiError("OS", call, ::fmt::format("{} (errno {})", ::strerror(err), err), \
                         __FILE__, __LINE__)

namespace kbrl {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using detail::ProcessEnd;
using detail::UniqueFd;

constexpr milliseconds kReapTimeout{5'000};  // for a SIGKILLed worker to be reaped
constexpr milliseconds kDrainTimeout{200};   // for its last output after death
constexpr milliseconds kPollSlice{10};

// now + timeout, saturating instead of overflowing for huge timeouts.
Clock::time_point deadline_after(milliseconds timeout) {
  const auto now = Clock::now();
  const auto room = std::chrono::duration_cast<milliseconds>(Clock::time_point::max() - now);
  return timeout >= room ? Clock::time_point::max() : now + timeout;
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT_MAX));
}

enum class Io { done, timeout, eof, protocol };
struct IoResult {
  Io kind = Io::done;
  std::string detail;   // for eof and protocol
  std::string payload;  // for done
};

std::string printable_prefix(const std::string& bytes, size_t count) {
  std::string out;
  for (unsigned char c : bytes.substr(0, count))
    out += (c >= 0x20 && c < 0x7f) ? std::string(1, static_cast<char>(c))
                                   : fmt::format("\\x{:02x}", c);
  return out;
}

}  // namespace

std::string_view to_string(CallStatus status) { return enum_name(status); }

struct Worker::Impl {
  WorkerOptions options;
  pid_t pid = -1;
  UniqueFd request;  // we write requests
  UniqueFd reply;    // we read replies
  UniqueFd log;      // we read the worker's stdout and stderr
  detail::OutputTail tail;
  int64_t starts = 0;
  bool retiring = false;  // the handler asked for a restart: stop before the next call
  std::vector<pid_t> unreaped;

  explicit Impl(WorkerOptions opts)
      : options(std::move(opts)), tail(options.stderr_tail_lines) {}
  ~Impl() { terminate(options.exit_grace); }

  // Reads what the worker printed, a bounded amount per call so a flood cannot starve replies.
  void read_log() noexcept {
    char buffer[65536];
    for (int round = 0; log && round < 16; ++round) {
      const ssize_t got = ::read(log.get(), buffer, sizeof buffer);
      if (got > 0) {
        tail.feed(std::string_view(buffer, static_cast<size_t>(got)));
      } else if (got < 0 && errno == EINTR) {
        continue;
      } else if (got < 0 && errno == EAGAIN) {
        return;
      } else {  // end of output (every writer gone) or an error: stop listening
        tail.flush();
        log.reset();
      }
    }
  }

  // Waits up to `slice` for output (or just sleeps when the log is closed).
  void wait_on_log(milliseconds slice) noexcept {
    if (!log) {
      std::this_thread::sleep_for(slice);
      return;
    }
    pollfd fd{log.get(), POLLIN, 0};
    if (::poll(&fd, 1, static_cast<int>(slice.count())) > 0) read_log();
  }

  void reap_leftovers() noexcept {
    std::erase_if(unreaped, [](pid_t p) { return ::waitpid(p, nullptr, WNOHANG) != 0; });
  }

  void spawn() {
    reap_leftovers();
    detail::WorkerProcess process = detail::spawn_worker_process(options.argv);
    pid = process.pid;
    request = std::move(process.request);
    reply = std::move(process.reply);
    log = std::move(process.output);
    tail.reset_partial();
    retiring = false;
    ++starts;
  }

  // Writes `out` (when given) and reads one reply frame, until `deadline`.
  IoResult exchange(const std::string* out, Clock::time_point deadline) {
    std::string in;
    size_t written = 0;
    bool writing = out != nullptr && !out->empty();
    char buffer[65536];
    for (;;) {
      if (in.size() >= 4) {
        const uint32_t size = decode_frame_length(reinterpret_cast<const unsigned char*>(in.data()));
        if (size > kMaxFrameBytes)
          return {Io::protocol,
                  fmt::format("a reply header announces {} bytes (limit {}); it begins \"{}\"",
                              size, kMaxFrameBytes, printable_prefix(in, 24)), {}};
        if (in.size() > 4 + size)
          return {Io::protocol, fmt::format("{} unexpected bytes after a reply frame",
                                            in.size() - 4 - size), {}};
        if (in.size() == 4 + size) return {Io::done, {}, in.substr(4)};
      }
      pollfd fds[3];
      nfds_t count = 0;
      fds[count++] = {reply.get(), POLLIN, 0};
      const nfds_t write_at = writing ? count++ : 0;
      if (writing) fds[write_at] = {request.get(), POLLOUT, 0};
      const nfds_t log_at = log ? count++ : 0;
      if (log) fds[log_at] = {log.get(), POLLIN, 0};
      const int wait = remaining_ms(deadline);
      if (wait == 0) return {Io::timeout, {}, {}};
      const int ready = ::poll(fds, count, wait);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) KBRL_POSIX_FAIL("poll", errno);
      if (log_at != 0 && fds[log_at].revents != 0) read_log();
      if (write_at != 0 && fds[write_at].revents != 0) {
        const ssize_t w = ::write(request.get(), out->data() + written, out->size() - written);
        if (w > 0) {
          written += static_cast<size_t>(w);
          writing = written < out->size();
        } else if (w < 0 && errno == EPIPE) {
          return {Io::eof, "the worker stopped reading requests", {}};
        } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
          KBRL_POSIX_FAIL("write", errno);
        }
      }
      if (fds[0].revents != 0) {
        const ssize_t got = ::read(reply.get(), buffer, sizeof buffer);
        if (got > 0) {
          in.append(buffer, static_cast<size_t>(got));
        } else if (got == 0) {
          return {Io::eof,
                  in.empty() ? std::string("the reply pipe closed")
                             : fmt::format("the reply pipe closed after {} bytes of a reply",
                                           in.size()),
                  {}};
        } else if (errno != EAGAIN && errno != EINTR) {
          KBRL_POSIX_FAIL("read", errno);
        }
      }
    }
  }

  // Ends the worker: closes its request pipe, gives it `grace` to exit, SIGKILLs its process group
  // (before reaping, so the group id cannot have been reused), reaps it and drains its output.
  ProcessEnd terminate(milliseconds grace) noexcept {
    ProcessEnd ended;
    if (pid < 0) return ended;
    request.reset();
    bool exited = false;
    const auto grace_end = deadline_after(grace);
    for (;;) {
      siginfo_t info{};
      const int r = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (r == 0 && info.si_pid == pid) {
        exited = true;
        if (info.si_code == CLD_EXITED) ended.exit_code = info.si_status;
        else ended.signal = info.si_status;
        break;
      }
      if ((r < 0 && errno != EINTR) || Clock::now() >= grace_end) break;
      wait_on_log(std::min(kPollSlice, std::chrono::ceil<milliseconds>(grace_end - Clock::now())));
    }
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    const auto reap_end = Clock::now() + kReapTimeout;
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        if (!exited && WIFEXITED(status)) ended.exit_code = WEXITSTATUS(status);
        if (!exited && WIFSIGNALED(status)) ended.signal = WTERMSIG(status);
        break;
      }
      if (r < 0 && errno != EINTR) break;
      if (Clock::now() >= reap_end) {
        unreaped.push_back(pid);
        break;
      }
      wait_on_log(kPollSlice);
    }
    const auto drain_end = Clock::now() + kDrainTimeout;
    while (log && Clock::now() < drain_end) wait_on_log(kPollSlice);
    tail.flush();
    reply.reset();
    log.reset();
    pid = -1;
    retiring = false;
    return ended;
  }

  std::string failure_detail(const std::string& what, const ProcessEnd& ended, pid_t who) const {
    std::string detail = fmt::format("{}; {}", what, ended.describe(who));
    if (!tail.lines().empty()) {
      detail += "; last output lines:";
      for (const std::string& line : tail.lines()) detail += "\n" + line;
    }
    return detail;
  }

  // Turns a failed exchange into a result, ending the worker.
  CallResult fail(const IoResult& io, const std::string& context, milliseconds timeout) {
    CallResult result;
    const pid_t who = pid;
    std::string what;
    ProcessEnd ended;
    switch (io.kind) {
      case Io::timeout:
        result.status = CallStatus::timeout;
        ended = terminate(milliseconds(0));
        what = fmt::format("{}: no reply within {} ms", context, timeout.count());
        break;
      case Io::eof:
        result.status = CallStatus::crashed;
        ended = terminate(options.exit_grace);
        what = fmt::format("{}: {}", context, io.detail);
        break;
      case Io::protocol:
      case Io::done:
        result.status = CallStatus::protocol_error;
        ended = terminate(milliseconds(0));
        what = fmt::format("{}: {}", context, io.detail);
        break;
    }
    result.exit_code = ended.exit_code;
    result.term_signal = ended.signal;
    result.detail = failure_detail(what, ended, who);
    return result;
  }

  CallResult start() {
    if (retiring) terminate(options.exit_grace);
    if (pid >= 0) return {};
    spawn();
    const IoResult io = exchange(nullptr, deadline_after(options.start_timeout));
    CallResult result;
    if (io.kind == Io::done) {
      const Json hello = Json::parse(io.payload, nullptr, false);
      if (hello.is_object() && hello.contains("kbrl_worker") && hello["kbrl_worker"] == "ready") {
        result.started_worker = true;
        return result;
      }
      result = fail({Io::protocol, fmt::format("not a hello frame: {}", printable_prefix(
                                                                             io.payload, 80)), {}},
                    "starting the worker", options.start_timeout);
    } else {
      result = fail(io, "starting the worker", options.start_timeout);
    }
    result.started_worker = true;
    return result;
  }
};

Worker::Worker(WorkerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {
  detail::ignore_sigpipe();
}

Worker::~Worker() = default;
Worker::Worker(Worker&&) noexcept = default;
Worker& Worker::operator=(Worker&&) noexcept = default;

CallResult Worker::start() {
  const auto begin = Clock::now();
  impl_->tail.clear();
  CallResult result = impl_->start();
  result.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
  return result;
}

CallResult Worker::call(const Json& request, milliseconds timeout) {
  const auto begin = Clock::now();
  const auto finish = [&](CallResult result) {
    result.seconds = std::chrono::duration<double>(Clock::now() - begin).count();
    return result;
  };
  const std::string frame = encode_frame(request);
  impl_->tail.clear();
  const bool starting = impl_->retiring || impl_->pid < 0;
  if (starting) {
    CallResult started = impl_->start();
    if (started.status != CallStatus::ok) return finish(std::move(started));
  }
  const IoResult io = impl_->exchange(&frame, deadline_after(timeout));
  CallResult result;
  if (io.kind != Io::done) {
    result = impl_->fail(io, "the job failed", timeout);
  } else if (Json reply = Json::parse(io.payload, nullptr, false); reply.is_discarded()) {
    result = impl_->fail({Io::protocol, fmt::format("a reply that is not JSON: \"{}\"",
                                                    printable_prefix(io.payload, 80)), {}},
                         "the job failed", timeout);
  } else {
    if (reply.is_object()) {
      const auto restart = reply.find(std::string(kRestartWorkerKey));
      if (restart != reply.end()) {
        result.restart_requested = restart->is_boolean() && restart->get<bool>();
        reply.erase(restart);
      }
      if (reply.contains(std::string(kWorkerErrorKey))) {
        result.status = CallStatus::handler_error;
        result.detail = fmt::format("the worker's handler failed: {}",
                                    reply[std::string(kWorkerErrorKey)].dump());
      }
    }
    result.reply = std::move(reply);
    if (result.restart_requested) {
      impl_->retiring = true;  // serve() exits after this reply; reaped at the next call
      impl_->request.reset();
    }
  }
  result.started_worker = starting;
  return finish(std::move(result));
}

void Worker::stop() {
  if (impl_) impl_->terminate(impl_->options.exit_grace);
}

bool Worker::running() const { return impl_ && impl_->pid >= 0 && !impl_->retiring; }
pid_t Worker::pid() const { return running() ? impl_->pid : -1; }
int64_t Worker::starts() const { return impl_ ? impl_->starts : 0; }
const std::vector<std::string>& Worker::stderr_tail() const {
  static const std::vector<std::string> none;
  return impl_ ? impl_->tail.lines() : none;
}

}  // namespace kbrl
