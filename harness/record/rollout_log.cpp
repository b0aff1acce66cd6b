#include "rollout_log.h"

#include "json_text.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include <kbrl/check.h>
#include <kbrl/error.h>
#include <kbrl/sha256.h>
#include <kernels/candidate.h>

namespace kbrl {
namespace {

using Json = nlohmann::json;

/// Whether a logged record is taken back (find, contains): a harness fault is kept in the file for
/// the record, but a rerun evaluates its candidate again.
bool taken_back(const EvalRecord& record) { return record.outcome != Outcome::harness_error; }

/// Compact JSON text; a string that is not UTF-8 is written valid with its exact bytes beside it, so
/// two candidates differing only in such bytes have different keys.
std::string compact(Json j) {
  keep_exact_bytes(j);
  return dump_lossy(j);
}

[[noreturn]] void throw_os(const std::string& call, int err) {
  throw ApiError("OS", call, fmt::format("{} (errno {})", std::strerror(err), err), __FILE__,
                 __LINE__);
}

struct Scan {
  size_t records = 0;
  uintmax_t good_end = 0;  // bytes up to the end of the last complete record
  uintmax_t file_size = 0;
};

// Reads the log line by line, handing each record and its line's place in the file to `on_record`. A
// final line without a newline, or a final line that is not a record, ends the good part; an earlier
// bad line throws.
Scan scan_log(const std::filesystem::path& path,
              const std::function<void(EvalRecord&&, uintmax_t offset, size_t length)>& on_record) {
  std::ifstream in(path, std::ios::binary);
  KBRL_CHECK_INPUT(in.good(), "cannot read rollout log {}", path.string());
  Scan scan;
  uintmax_t offset = 0;
  std::string line;
  size_t line_number = 0;
  std::optional<std::string> bad_line;  // the error of the previous line, if it was not a record
  while (std::getline(in, line)) {
    ++line_number;
    const bool terminated = !in.eof();
    if (bad_line)
      throw InputError(fmt::format("{}:{}: not an evaluation record: {}", path.string(),
                                   line_number - 1, *bad_line));
    if (!terminated) break;  // torn by a kill: dropped
    const uintmax_t line_start = offset, line_end = offset + line.size() + 1;
    offset = line_end;
    if (line.empty()) {
      scan.good_end = line_end;
      continue;
    }
    const Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      bad_line = "not JSON";
      continue;
    }
    try {
      on_record(record_from_json(j), line_start, line.size());
    } catch (const InputError& e) {
      bad_line = e.what();
      continue;
    }
    ++scan.records;
    scan.good_end = line_end;
  }
  scan.file_size = std::filesystem::file_size(path);
  return scan;
}

}  // namespace

std::string record_key(int task_id, const Json& candidate, const Json& settings) {
  return Sha256()
      .update_field(std::to_string(task_id))
      .update_field(compact(candidate))
      .update_field(compact(settings))
      .hex_digest();
}

std::string record_key(const Candidate& candidate, const Json& settings) {
  return record_key(candidate.task_id, Json(candidate), settings);
}

RolloutLog::RolloutLog(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_os(fmt::format("open({})", path_.string()), errno);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK)
      throw InputError(fmt::format("rollout log {} is open in another process (or twice in this "
                                   "one)", path_.string()));
    throw_os(fmt::format("flock({})", path_.string()), err);
  }
  try {
    const Scan scan = scan_log(path_, [this](EvalRecord&& record, uintmax_t offset, size_t length) {
      if (taken_back(record)) keys_.insert_or_assign(std::move(record.key), Extent{offset, length});
    });
    count_ = scan.records;
    file_size_ = scan.good_end;
    if (scan.good_end < scan.file_size) {
      repaired_bytes_ = static_cast<size_t>(scan.file_size - scan.good_end);
      KBRL_POSIX_CHECK(::ftruncate(fd_, static_cast<off_t>(scan.good_end)));
      KBRL_POSIX_CHECK(::fsync(fd_));
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

RolloutLog::~RolloutLog() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

RolloutLog::RolloutLog(RolloutLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      count_(other.count_),
      repaired_bytes_(other.repaired_bytes_),
      file_size_(other.file_size_),
      keys_(std::move(other.keys_)),
      mutex_(std::move(other.mutex_)) {}

RolloutLog& RolloutLog::operator=(RolloutLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    count_ = other.count_;
    repaired_bytes_ = other.repaired_bytes_;
    file_size_ = other.file_size_;
    keys_ = std::move(other.keys_);
    mutex_ = std::move(other.mutex_);
  }
  return *this;
}

void RolloutLog::append(const EvalRecord& record) {
  KBRL_CHECK_INPUT(!record.key.empty(), "a rollout record needs a key (see record_key())");
  KBRL_ASSERT(fd_ >= 0, "append to a moved-from rollout log");
  const std::string line = compact(Json(record)) + '\n';
  std::lock_guard lock(*mutex_);
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t w = ::write(fd_, line.data() + written, line.size() - written);
    if (w > 0) {
      written += static_cast<size_t>(w);
    } else if (w < 0 && errno == EINTR) {
      continue;
    } else {
      const int err = w < 0 ? errno : EIO;
      [[maybe_unused]] int ignored = ::ftruncate(fd_, static_cast<off_t>(file_size_));
      throw_os(fmt::format("write({})", path_.string()), err);
    }
  }
  if (::fsync(fd_) != 0) throw_os(fmt::format("fsync({})", path_.string()), errno);
  if (taken_back(record)) keys_.insert_or_assign(record.key, Extent{file_size_, line.size() - 1});
  file_size_ += line.size();
  ++count_;
}

bool RolloutLog::contains(std::string_view key) const {
  std::lock_guard lock(*mutex_);
  return keys_.find(std::string(key)) != keys_.end();
}

std::optional<EvalRecord> RolloutLog::find(std::string_view key) const {
  Extent extent;
  {
    std::lock_guard lock(*mutex_);
    const auto it = keys_.find(std::string(key));
    if (it == keys_.end()) return std::nullopt;
    extent = it->second;
  }
  KBRL_ASSERT(fd_ >= 0, "find in a moved-from rollout log");
  std::string line(extent.length, '\0');
  size_t got = 0;
  while (got < line.size()) {
    const ssize_t n = ::pread(fd_, line.data() + got, line.size() - got, static_cast<off_t>(extent.offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_os(fmt::format("pread({})", path_.string()), n < 0 ? errno : EIO);
    got += static_cast<size_t>(n);
  }
  const Json j = Json::parse(line, nullptr, false);
  KBRL_CHECK_INPUT(!j.is_discarded(), "rollout log {}: the record of {} changed on disk", path_.string(), key);
  return record_from_json(j);
}

std::vector<EvalRecord> read_rollout_log(const std::filesystem::path& path) {
  std::vector<EvalRecord> records;
  scan_log(path, [&records](EvalRecord&& record, uintmax_t, size_t) { records.push_back(std::move(record)); });
  return records;
}

}  // namespace kbrl
