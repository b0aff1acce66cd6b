// The Scheduler's side toward the API: construction, jobs in and out (submit, find, cancel, delete),
// readiness, hand-back and drain, metrics; its recent records. Its GPUs' dispatchers are in scheduler_dispatch.cpp.
#include "scheduler.h"

#include <algorithm>

#include <fmt/format.h>

#include <kbrl/error.h>

#include "scheduler_gpu.h"

namespace kbrl::serving {
namespace {

using Clock = std::chrono::steady_clock;

ApiError queue_full(size_t queued, size_t max) {
  return {429, "queue_full", fmt::format("the queue holds {} of at most {} items: retry later", queued, max),
          {}, true, 2};
}
ApiError shutting_down() {
  return {503, "shutting_down", "the server is shutting down: send the items to another server or retry later",
          {}, true, 5};
}

ApiError cancelled() {
  return {409, "cancelled", "cancelled by its client (DELETE /v1/jobs/{id}) before it finished", {}, false, 0};
}

}  // namespace

Scheduler::Scheduler(EvalSettings defaults, SchedulerOptions options)
    : defaults_(std::move(defaults)),
      options_(std::move(options)),
      keyed_(RecentRecords(options_.recent_records, options_.recent_record_bytes)),
      jobs_(options_.kept_job_bytes) {
  KBRL_CHECK_INPUT(!options_.gpus.empty(), "the server needs at least one GPU (--gpus)");
  for (size_t i = 0; i < options_.gpus.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      KBRL_CHECK_INPUT(options_.gpus[i] != options_.gpus[j], "GPU {} is listed twice (--gpus)", options_.gpus[i]);
  KBRL_CHECK_INPUT(options_.max_queue >= 1, "--max-queue must be at least 1");
  KBRL_CHECK_INPUT(options_.batch >= 1, "--batch must be at least 1");
  if (!options_.log.empty()) log_ = std::make_unique<RolloutLog>(options_.log);
  metrics_.gpus = options_.gpus.size();
  for (int device : options_.gpus) {
    gpus_.push_back(std::make_unique<Gpu>(device));
  }
  for (auto& gpu : gpus_) gpu->thread = std::thread([this, g = gpu.get()] { dispatch(*g); });
}

Scheduler::~Scheduler() { drain(); }

std::shared_ptr<Job> Scheduler::submit(const std::string& client, std::vector<PreparedItem> items, Job::Done on_done) {
  if (draining_) throw ApiException(shutting_down());
  KBRL_ASSERT(std::any_of(items.begin(), items.end(), [](const PreparedItem& i) { return !i.error; }),
              "a job without an item to evaluate");
  if (items.size() > options_.max_queue)
    throw ApiException(too_large(fmt::format("{} items at once; this server queues at most {} (--max-queue): split them",
                                             items.size(), options_.max_queue), "items"));
  std::lock_guard lock(mutex_);
  if (draining_) throw ApiException(shutting_down());
  if (queued_ + items.size() > options_.max_queue) throw ApiException(queue_full(queued_, options_.max_queue));
  const bool async = !on_done;
  if (async) on_done = [this](const Job& finished) { jobs_.finished(finished); };
  auto job = std::make_shared<Job>(random_job_id(), client, items.size(), std::move(on_done));
  auto& queue = queues_[client];
  size_t queued = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].error) {  // answered in its place now; the job has items left, so it does not finish here
      job->reject(i, *items[i].error);
      continue;
    }
    queue.push_back({job, i, std::make_shared<const PreparedItem>(std::move(items[i])), Clock::now(), {}});
    ++queued;
  }
  queued_ += queued;
  if (async) jobs_.add(job);  // kept to be polled, before a dispatcher can finish it
  work_.notify_all();
  return job;
}

JobStore::Lookup Scheduler::find_job(const std::string& id, const std::string& client) const {
  return jobs_.find(id, client);
}

void Scheduler::cancel(const std::shared_ptr<Job>& job, const ApiError& why) {
  {
    std::lock_guard lock(mutex_);
    auto q = queues_.find(job->client());
    if (q != queues_.end()) {
      const size_t before = q->second.size();
      std::erase_if(q->second, [&](const Entry& e) { return e.job == job; });
      queued_ -= before - q->second.size();
    }
  }
  job->fail(why);
}

JobStore::Lookup Scheduler::delete_job(const std::string& id, const std::string& client) {
  JobStore::Lookup found = jobs_.find(id, client);
  if (!found.job) return found;
  if (!found.job->finished()) cancel(found.job, cancelled());
  jobs_.remove(id);
  return found;
}

bool Scheduler::ready() const {
  std::lock_guard lock(mutex_);
  if (draining_) return false;
  for (const auto& g : gpus_)
    if (g->state != "up") return false;
  return true;
}

void Scheduler::hand_back() {
  std::vector<std::shared_ptr<Job>> handed_back;
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    for (auto& [client, queue] : queues_)
      for (Entry& e : queue) handed_back.push_back(e.job);
    queues_.clear();
    queued_ = 0;
  }
  for (const auto& job : handed_back) job->fail(shutting_down());
}

void Scheduler::drain(bool hand_back_queued) {
  if (hand_back_queued) hand_back();
  {
    std::lock_guard lock(mutex_);
    draining_ = true;
    stopping_ = true;
  }
  work_.notify_all();
  std::lock_guard join(join_mutex_);  // drain() from a signal's thread and from the destructor
  for (auto& gpu : gpus_)
    if (gpu->thread.joinable()) gpu->thread.join();
}

SchedulerMetrics Scheduler::metrics() const {
  std::lock_guard lock(mutex_);
  SchedulerMetrics m = metrics_;
  m.queued = queued_;
  m.running = running_;
  for (const auto& g : gpus_) {
    m.worker_restarts += g->restart_count;
    m.per_gpu.push_back({g->device, g->state, g->state_detail, g->state == "up", g->restart_count});
  }
  m.recent_record_bytes = keyed_.known().bytes();
  m.kept_job_bytes = jobs_.finished_bytes();
  return m;
}

// ---- the recent records ----

void RecentRecords::remember(const std::string& key, const EvalRecord& record) {
  if (max_records_ == 0) return;
  if (auto it = index_.find(key); it != index_.end()) forget(it->second);
  const size_t bytes = approximate_bytes(record) + key.size();
  if (bytes > max_bytes_) return;
  records_.emplace_front(key, record);
  index_[key] = records_.begin();
  bytes_ += bytes;
  while (records_.size() > max_records_ || bytes_ > max_bytes_) forget(std::prev(records_.end()));
}

std::optional<EvalRecord> RecentRecords::find(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return it->second->second;
}

void RecentRecords::forget(std::list<std::pair<std::string, EvalRecord>>::iterator it) {
  bytes_ -= approximate_bytes(it->second) + it->first.size();
  index_.erase(it->first);
  records_.erase(it);
}

}  // namespace kbrl::serving
