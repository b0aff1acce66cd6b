#pragma once
// The rollout log: an append-only JSONL file, one EvalRecord per line (eval_record.h), each line
// written whole and fsync'd before append() returns. A run killed at any point loses nothing already
// written; at worst it leaves one torn final line, which the next open drops (truncating the file
// to the last complete line). contains(key) lets a resumed run skip what is already logged.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <optional>
#include <unordered_map>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <kernels/candidate.h>

#include "eval_record.h"

namespace kbrl {

/// The identity of an evaluation: the hex SHA-256 (64 digits, kbrl/sha256.h) of the task id, the
/// candidate's JSON and the evaluation settings' JSON, each a length-prefixed field
/// (Sha256::update_field), the JSON serialized compactly with sorted keys, so that equal values
/// always give equal keys. `settings` is whatever changes a result:
/// scale, tolerances, trial count, timing mode, reward config, device... never the run secret.
std::string record_key(int task_id, const nlohmann::json& candidate,
                       const nlohmann::json& settings);
std::string record_key(const Candidate& candidate, const nlohmann::json& settings);

/// An open rollout log, safe to use from several threads (the server's dispatchers share one).
/// Holds an exclusive advisory lock (flock) on the file while open, so two
/// runs cannot append to one log. Keeps the keys of its records in memory, not the records.
class RolloutLog {
 public:
  /// Opens or creates the log (and its parent folders), reads every complete record, and repairs a
  /// torn final line (no newline, or not a record) by truncating it away. Throws InputError when
  /// another process holds the log or a line before the last is not a record (the file is left
  /// untouched), ApiError when the OS fails.
  explicit RolloutLog(std::filesystem::path path);
  ~RolloutLog();
  RolloutLog(RolloutLog&&) noexcept;
  RolloutLog& operator=(RolloutLog&&) noexcept;
  RolloutLog(const RolloutLog&) = delete;
  RolloutLog& operator=(const RolloutLog&) = delete;

  /// Appends one record as one line and fsyncs. Throws InputError for an empty key; on an OS
  /// error it truncates the partial line away and throws ApiError.
  void append(const EvalRecord& record);

  /// Whether a record is logged under `key`; a `harness_error` record does not count (it is kept in
  /// the file, and a rerun evaluates its candidate again).
  bool contains(std::string_view key) const;
  /// The record logged under `key` (the latest, if a key was logged twice; never a `harness_error`),
  /// read back from the file; nullopt when there is none.
  std::optional<EvalRecord> find(std::string_view key) const;
  size_t size() const { return count_; }  // records in the file
  size_t repaired_bytes() const { return repaired_bytes_; }  // dropped at open
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  size_t count_ = 0;
  size_t repaired_bytes_ = 0;
  uintmax_t file_size_ = 0;
  struct Extent {  // where a record's line lies in the file (without its newline)
    uintmax_t offset = 0;
    size_t length = 0;
  };
  std::unordered_map<std::string, Extent> keys_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();  // guards appends and keys_
};

/// Reads every complete record of a log without changing the file (replay, analysis). A torn final
/// line is skipped; any other line that is not a record throws InputError naming file and line.
std::vector<EvalRecord> read_rollout_log(const std::filesystem::path& path);

}  // namespace kbrl
