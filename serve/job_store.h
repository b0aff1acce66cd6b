#pragma once
// The asynchronous jobs `kbrl serve` keeps for GET /v1/jobs/{id}. Ids are 128 random bits from the
// kernel (getrandom), and a job is visible to the client that made it only (its token's holder
// named by X-Kbrl-Client, else its peer address): another client is told it does not exist.
// A finished job is kept until the finished jobs' records pass a byte budget; then the oldest
// finished are dropped first and remembered as gone (410) for a while.
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace kbrl::serving {

class Job;

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
