#pragma once
// One request of `kbrl serve`: its items' records as they finish, its status and error; the
// scheduler (scheduler.h) fills it, the server answers from it.
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <harness/record/eval_record.h>

#include "api.h"

namespace kbrl::serving {

/// One request's items and, as they finish, their records.
class Job {
 public:
  enum class Status { queued, running, done, failed };
  using Done = std::function<void(const Job&)>;

  Job(std::string id, std::string client, size_t total, Done on_done);
  const std::string& id() const { return id_; }
  const std::string& client() const { return client_; }
  size_t total() const { return total_; }

  /// A snapshot: status, items done, and the answers when done or the error when failed.
  Status status() const;
  size_t done() const;
  /// Each item's record or, for an item that could not be read, its error; complete only when
  /// status() == done.
  std::vector<ItemAnswer> answers() const;
  std::optional<ApiError> error() const;
  /// {"job", "status", "done", "total"} (+ "records" when done, "error" when failed).
  nlohmann::json to_json() const;
  bool finished() const;

 private:
  friend class Scheduler;
  void started();
  void complete(size_t index, const EvalRecord& record);  // calls on_done after the last
  void reject(size_t index, const ApiError& error);       // an item that could not be read
  void fail(const ApiError& error);                       // calls on_done once
  void answer(size_t index, ItemAnswer answer);

  const std::string id_;
  const std::string client_;
  const size_t total_;
  Done on_done_;
  mutable std::mutex mutex_;
  Status status_ = Status::queued;
  std::vector<std::optional<ItemAnswer>> answers_;
  size_t done_ = 0;
  std::optional<ApiError> error_;
};

std::string_view to_string(Job::Status status);

}  // namespace kbrl::serving
