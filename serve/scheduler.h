#pragma once
// The scheduler of `kbrl serve`: a bounded queue of evaluation items shared fairly between
// clients, one dispatcher thread per GPU that owns that GPU's Evaluators (one worker process each,
// compilation on the evaluator's thread pool), identical items (same record key) evaluated once
// and answered to every waiter, and a drain on shutdown. With several GPUs no GPU holds items the
// others could run: a dispatcher gives the items of its batch it has not started back to the queue
// when the queue is empty and another GPU waits, and the items of a GPU whose worker fails go back
// to the queue for the others (until every GPU has failed it). Infrastructure failures that leave
// no GPU to run an item (a worker that cannot start, the GPU gone, shutting down) fail its job with
// a retryable ApiError, never a record.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include <harness/evaluator.h>
#include <harness/record/keyed_work.h>
#include <harness/record/rollout_log.h>

#include "api.h"
#include "histogram.h"
#include "job.h"

namespace kbrl::serving {

/// The records the scheduler keeps in memory to answer a repeated item without evaluating it again:
/// the most recent ones, up to a count and a byte budget (a candidate may be 256 KiB), the least
/// recently stored dropped first. Not thread-safe: the scheduler's lock guards it.
class RecentRecords {
 public:
  RecentRecords(size_t max_records, size_t max_bytes) : max_records_(max_records), max_bytes_(max_bytes) {}

  void remember(const std::string& key, const EvalRecord& record);
  std::optional<EvalRecord> find(const std::string& key) const;
  size_t bytes() const { return bytes_; }
  size_t size() const { return records_.size(); }

 private:
  void forget(std::list<std::pair<std::string, EvalRecord>>::iterator it);

  const size_t max_records_;
  const size_t max_bytes_;
  size_t bytes_ = 0;
  std::list<std::pair<std::string, EvalRecord>> records_;  // most recent first
  std::unordered_map<std::string, std::list<std::pair<std::string, EvalRecord>>::iterator> index_;
};

struct SchedulerOptions {
  std::vector<int> gpus = {0};  // device indices, one dispatcher each
  size_t max_queue = 4096;      // items waiting at most; more is 429 queue_full
  size_t batch = 64;            // items a dispatcher takes at once (compiled together)
  size_t client_batch = 0;      // items of one client in one batch at most (0: batch)
  std::filesystem::path log;    // the rollout log every record goes to ("" = none)
  size_t evaluators_per_gpu = 4;  // distinct settings kept open per GPU (least recently used closed)
  size_t recent_records = 4096;   // records kept in memory to answer repeated items
  size_t recent_record_bytes = 128u << 20;  // ... and their bytes at most
  size_t kept_job_bytes = 128u << 20;  // finished async jobs' records kept for polling (oldest dropped)
  /// A GPU whose worker failed takes no items for this long while another GPU is not down, then
  /// one item at a time until one succeeds (its worker back up).
  double down_retry_seconds = 30;
};

/// One GPU's worker as readiness sees it: `starting` until its dispatcher has started the worker
/// (at start-up, for the server's default settings), then `up`, or `down` with the reason while
/// the worker cannot start or its last group of items failed for a fault of the machine.
struct GpuState {
  int device = 0;
  std::string state = "starting";  // starting, up, down
  std::string detail;              // why it is down
  bool ready = false;              // state == "up"
  int64_t restarts = 0;            // worker processes started again after a crash or timeout
};

/// Counters for /metrics.
struct SchedulerMetrics {
  size_t queued = 0;   // items waiting
  size_t running = 0;  // items a dispatcher holds
  std::map<std::string, int64_t> evaluations;  // records answered, by outcome
  int64_t deduplicated = 0;  // items answered from another item's evaluation or the recent records
  double compile_seconds = 0;
  double gpu_seconds = 0;     // dispatcher time in the evaluator (compile, check and time)
  double kernel_seconds = 0;  // timed runs of the candidates and their paired references
  int64_t worker_restarts = 0;
  int64_t jobs_failed = 0;
  int64_t requeued = 0;  // items given back to the queue: not started while another GPU waited, or a GPU lost
  size_t gpus = 0;
  size_t kept_job_bytes = 0;       // finished async jobs' records kept for polling
  size_t recent_record_bytes = 0;  // records kept to answer repeated items
  Histogram queue_wait;            // seconds from an item's submission to a dispatcher taking it
  std::vector<GpuState> per_gpu;   // by --gpus order
};

class Scheduler {
 public:
  Scheduler(EvalSettings defaults, SchedulerOptions options);
  ~Scheduler();  // drains
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// Queues a job's items. Throws ApiException 429 queue_full (retryable, Retry-After) when they do
  /// not fit, 413 when more than max_queue items come at once, 503 shutting_down when draining.
  /// `on_done` runs once on a dispatcher thread when the job is done or failed. A job without one
  /// (async) is kept for find_job() until newer finished jobs' records crowd it out
  /// (SchedulerOptions::kept_job_bytes); one with it is not.
  std::shared_ptr<Job> submit(const std::string& client, std::vector<PreparedItem> items, Job::Done on_done = {});
  /// An async job as `client` sees it (its own only; "" sees all): the job, or whether it is gone.
  JobStore::Lookup find_job(const std::string& id, const std::string& client) const;
  /// Any client's async job by id; nullptr when unknown or gone.
  std::shared_ptr<Job> job(const std::string& id) const { return find_job(id, "").job; }
  /// Removes a job's items that no dispatcher took yet and fails it (a client that gave up).
  void cancel(const std::shared_ptr<Job>& job, const ApiError& why);
  /// DELETE of an async job by its client: an unfinished one is cancelled (409 cancelled; the items
  /// a dispatcher holds still finish and are logged, the job stays failed), then it is forgotten.
  /// Returns the job as it was last (or why it is not found), like find_job.
  JobStore::Lookup delete_job(const std::string& id, const std::string& client);

  /// Ready to evaluate: not draining and every GPU's worker up (compiling only: no worker needed).
  bool ready() const;

  /// Stops taking jobs (503 shutting_down), lets the dispatchers finish what is queued, joins them.
  /// With `hand_back`, queued items are not evaluated: their jobs fail with shutting_down.
  void drain(bool hand_back = false);
  /// Fails the jobs of every queued item with shutting_down (503, retryable) and stops taking jobs;
  /// the items dispatchers hold still finish.
  void hand_back();
  bool draining() const { return draining_; }

  SchedulerMetrics metrics() const;
  const EvalSettings& defaults() const { return defaults_; }

 private:
  struct Entry {
    std::shared_ptr<Job> job;
    size_t index = 0;
    std::shared_ptr<const PreparedItem> item;
    std::chrono::steady_clock::time_point queued_at;
    std::vector<int> lost_on;  // the GPUs whose worker failed while holding this item
  };
  struct Gpu;
  class GroupCaller;  // a group of run_batch's items as evaluate_batch's caller (scheduler_dispatch.cpp)

  std::vector<Entry> take_batch(std::unique_lock<std::mutex>& lock);
  void dispatch(Gpu& gpu);
  void start_worker(Gpu& gpu);  // readiness: the default settings' worker, started before any item
  void set_state(Gpu& gpu, std::string state, std::string detail = {});
  void run_batch(Gpu& gpu, std::vector<Entry> batch);
  void answer(const std::string& key, const EvalRecord& record);
  /// Puts entries back at the front of their clients' queues, in order (mutex_ held).
  void requeue(std::vector<Entry> entries);
  /// Marks a GPU down for `detail`: it rests for down_retry_seconds from now (mutex_ held).
  void mark_down(Gpu& gpu, std::string detail);
  /// Whether `gpu` is down and waits before its next try while another GPU is not down (mutex_ held).
  bool resting(const Gpu& gpu) const;
  void count_answered(Outcome outcome, int64_t n);  // records answered, for /metrics

  EvalSettings defaults_;
  SchedulerOptions options_;
  std::unique_ptr<RolloutLog> log_;

  mutable std::mutex mutex_;
  std::mutex join_mutex_;
  std::condition_variable work_;
  std::map<std::string, std::deque<Entry>> queues_;  // by client
  std::string next_client_;  // round-robin position
  size_t queued_ = 0;
  size_t running_ = 0;
  bool stopping_ = false;
  std::atomic<bool> draining_{false};
  size_t idle_ = 0;  // dispatchers waiting for items (not resting)
  // Identical items meet here (mutex_ held): the recent records, and each key in flight with the
  // entries it answers.
  using Keyed = KeyedWork<Entry, RecentRecords>;
  Keyed keyed_;
  JobStore jobs_;
  SchedulerMetrics metrics_;
  std::vector<std::unique_ptr<Gpu>> gpus_;
};

}  // namespace kbrl::serving
