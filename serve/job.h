#pragma once
// One request of `kbrl serve`: its items' records as they finish, its status and error; the
// scheduler (scheduler.h) fills it, the server answers from it. And the store of the asynchronous
// jobs `kbrl serve` keeps for GET /v1/jobs/{id} (JobStore).
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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

// The asynchronous jobs: ids are 128 random bits from the kernel (getrandom), and a job is visible
// to the client that made it only (its token's holder named by X-Kbrl-Client, else its peer
// address): another client is told it does not exist. A finished job is kept until the finished
// jobs' records pass a byte budget; then the oldest finished are dropped first and remembered as
// gone (410) for a while.

/// 32 lowercase hex digits of getrandom(2). Throws kbrl::Error when the kernel has none to give.
std::string random_job_id();

class JobStore {
 public:
  explicit JobStore(size_t max_finished_bytes) : max_finished_bytes_(max_finished_bytes) {}

  /// Keeps a job just submitted (before any of its items can finish).
  void add(std::shared_ptr<Job> job);
  /// Counts a job that finished (done or failed) and drops the oldest finished ones over the budget.
  void finished(const Job& job);

  struct Lookup {
    std::shared_ptr<Job> job;  // null when not kept
    bool gone = false;         // was kept for this client and dropped to make room
  };
  /// The job `id` as `client` sees it; an empty `client` sees every job.
  Lookup find(const std::string& id, const std::string& client) const;
  /// Forgets a job (its client deleted it): afterwards it is not found (404), not gone.
  void remove(const std::string& id);

  size_t finished_bytes() const;  // the records of the finished jobs kept

 private:
  void forget_oldest();  // mutex_ held

  const size_t max_finished_bytes_;
  mutable std::mutex mutex_;
  struct Kept {
    std::shared_ptr<Job> job;
    size_t bytes = 0;  // 0 until finished
  };
  std::unordered_map<std::string, Kept> jobs_;
  std::deque<std::string> finished_order_;  // oldest first
  size_t finished_bytes_ = 0;
  std::unordered_map<std::string, std::string> gone_;  // id -> client
  std::deque<std::string> gone_order_;
};

}  // namespace kbrl::serving
