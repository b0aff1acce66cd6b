// The wire format shared by both sides and the worker side's serve loop (see worker.h).
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

#include <kbrl/error.h>

#include "worker.h"

namespace kbrl {
namespace {

using Json = nlohmann::json;

enum class ReadStatus { ok, eof, truncated, error };

ReadStatus read_exact(int fd, char* data, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t r = ::read(fd, data + got, size - got);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0) {
      return got == 0 ? ReadStatus::eof : ReadStatus::truncated;
    } else if (errno != EINTR) {
      return ReadStatus::error;
    }
  }
  return ReadStatus::ok;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w > 0) {
      done += static_cast<size_t>(w);
    } else if (w < 0 && errno != EINTR) {
      return false;
    }
  }
  return true;
}

int complain(const std::string& what) {
  std::fprintf(stderr, "kbrl worker %d: %s\n", static_cast<int>(::getpid()), what.c_str());
  std::fflush(stderr);
  return 1;
}

bool wants_restart(const Json& reply) {
  if (!reply.is_object()) return false;
  const auto it = reply.find(std::string(kRestartWorkerKey));
  return it != reply.end() && it->is_boolean() && it->get<bool>();
}

}  // namespace

std::string encode_frame(const Json& message) {
  std::string text = message.dump(-1, ' ', false, Json::error_handler_t::replace);
  KBRL_CHECK_INPUT(text.size() <= kMaxFrameBytes,
                   "a worker message of {} bytes exceeds the frame limit of {} bytes", text.size(),
                   kMaxFrameBytes);
  const auto n = static_cast<uint32_t>(text.size());
  std::string frame{static_cast<char>((n >> 24) & 0xff), static_cast<char>((n >> 16) & 0xff),
                    static_cast<char>((n >> 8) & 0xff), static_cast<char>(n & 0xff)};
  frame += text;
  return frame;
}

uint32_t decode_frame_length(const unsigned char* header) {
  return (uint32_t{header[0]} << 24) | (uint32_t{header[1]} << 16) | (uint32_t{header[2]} << 8) |
         uint32_t{header[3]};
}

std::string describe_signal(int signal) {
  const char* abbrev = ::sigabbrev_np(signal);
  const char* description = ::sigdescr_np(signal);
  if (abbrev == nullptr) return fmt::format("signal {}", signal);
  return description ? fmt::format("SIG{} ({})", abbrev, description) : fmt::format("SIG{}", abbrev);
}

int serve(int in_fd, int out_fd, const std::function<Json(const Json&)>& handler) {
  ::signal(SIGPIPE, SIG_IGN);
  const Json hello = {{"kbrl_worker", "ready"}, {"pid", static_cast<int64_t>(::getpid())}};
  if (!write_all(out_fd, encode_frame(hello)))
    return complain(fmt::format("cannot send hello: {}", ::strerror(errno)));
  for (;;) {
    char header[4];
    switch (read_exact(in_fd, header, sizeof header)) {
      case ReadStatus::ok: break;
      case ReadStatus::eof: return 0;  // the parent closed the request pipe
      case ReadStatus::truncated: return complain("request pipe closed inside a frame header");
      case ReadStatus::error:
        return complain(fmt::format("cannot read a request: {}", ::strerror(errno)));
    }
    const uint32_t size = decode_frame_length(reinterpret_cast<const unsigned char*>(header));
    if (size > kMaxFrameBytes)
      return complain(fmt::format("request frame of {} bytes exceeds the limit", size));
    std::string payload(size, '\0');
    if (read_exact(in_fd, payload.data(), size) != ReadStatus::ok)
      return complain(fmt::format("request of {} bytes cut short", size));

    Json reply;
    try {
      reply = handler(Json::parse(payload));
    } catch (const std::exception& e) {
      reply = Json{{std::string(kWorkerErrorKey), e.what()}};
    } catch (...) {
      reply = Json{{std::string(kWorkerErrorKey), "unknown exception"}};
    }
    std::string frame;
    try {
      frame = encode_frame(reply);
    } catch (const std::exception& e) {
      frame = encode_frame(
          Json{{std::string(kWorkerErrorKey), fmt::format("reply not sendable: {}", e.what())}});
    }
    if (!write_all(out_fd, frame))
      return complain(fmt::format("cannot send a reply: {}", ::strerror(errno)));
    if (wants_restart(reply)) return 0;
  }
}

}  // namespace kbrl
