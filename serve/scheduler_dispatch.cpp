// The Scheduler's GPUs (scheduler.h): each GPU's dispatcher thread starts its worker, takes fair
// batches from the clients' queues, runs them through its Evaluators, answers each key's waiters,
// and puts a lost worker's items back in front; the GPU's Evaluators (GpuEvaluators, scheduler_gpu.h).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include <kbrl/error.h>

#include "fair_share.h"
#include "scheduler_gpu.h"

namespace kbrl::serving {
namespace {

using Clock = std::chrono::steady_clock;

ApiError worker_lost(int device, const std::string& why) {
  return {503, "worker_lost",
          fmt::format("GPU {} could not evaluate these items (a fault of the server, not of the candidates): {}",
                      device, why),
          {}, true, 5};
}

double kernel_seconds(const EvalRecord& r) {
  double ms = 0;
  for (const auto& stats : {r.runtime, r.reference})
    if (stats) ms += stats->mean_ms * static_cast<double>(stats->n);
  return ms / 1000.0;
}

}  // namespace

void Scheduler::set_state(Gpu& gpu, std::string state, std::string detail) {
  std::lock_guard lock(mutex_);
  if (state == "down") return mark_down(gpu, std::move(detail));  // found down at start-up
  gpu.state = std::move(state);
  gpu.state_detail = std::move(detail);
}

void Scheduler::mark_down(Gpu& gpu, std::string detail) {
  gpu.state = "down";
  gpu.state_detail = std::move(detail);
  gpu.down_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options_.down_retry_seconds));
  work_.notify_all();  // a GPU going down lets resting ones take items when none else can
}

void Scheduler::start_worker(Gpu& gpu) {
  if (defaults_.compile_only) return set_state(gpu, "up");  // compiling needs no worker
  try {
    PreparedItem defaults;
    defaults.settings = defaults_;
    defaults.settings_id = defaults_.key_json().dump();  // as api.cpp names an item without settings of its own
    gpu.evaluators.get(defaults, log_.get(), options_.evaluators_per_gpu).device();
    set_state(gpu, "up");
  } catch (const std::exception& e) {
    set_state(gpu, "down", e.what());
  }
}

std::vector<Scheduler::Entry> Scheduler::take_batch(std::unique_lock<std::mutex>&) {
  // At most an even share of what is queued among the GPUs that are not down, so that the last
  // items of a large job spread over the GPUs instead of waiting in one GPU's batch.
  const size_t up = std::max<size_t>(1, static_cast<size_t>(std::count_if(
                                            gpus_.begin(), gpus_.end(), [](const auto& g) { return g->state != "down"; })));
  const size_t batch = std::min(options_.batch, (queued_ + up - 1) / up);
  const size_t per_client = options_.client_batch > 0 ? options_.client_batch : options_.batch;
  return take_fair_batch(queues_, next_client_, queued_, batch, per_client);
}

bool Scheduler::resting(const Gpu& gpu) const {
  if (gpu.state != "down" || Clock::now() >= gpu.down_until) return false;
  return std::any_of(gpus_.begin(), gpus_.end(), [&](const auto& g) { return g.get() != &gpu && g->state != "down"; });
}

void Scheduler::dispatch(Gpu& gpu) {
  start_worker(gpu);
  for (;;) {
    std::vector<Entry> batch;
    {
      std::unique_lock lock(mutex_);
      for (;;) {
        if (queued_ == 0 && stopping_) {
          work_.notify_all();  // a resting dispatcher may wait on the queue this one emptied
          return;
        }
        if (queued_ > 0 && !resting(gpu)) break;
        if (queued_ > 0) {
          work_.wait_until(lock, gpu.down_until);
        } else {
          // A dispatcher running a batch gives the items it has not started to an idle GPU that is up.
          const bool counted = gpu.state != "down";
          idle_ += counted;
          work_.wait(lock);
          idle_ -= counted;
        }
      }
      // A GPU that is down tries one item: the others do not wait on a batch it may fail again.
      batch = gpu.state == "down" ? take_fair_batch(queues_, next_client_, queued_, 1, 1) : take_batch(lock);
      running_ += batch.size();
      const auto now = Clock::now();
      for (const Entry& e : batch) metrics_.queue_wait.observe(std::chrono::duration<double>(now - e.queued_at).count());
    }
    const size_t n = batch.size();
    run_batch(gpu, std::move(batch));
    gpu.restart_count = gpu.evaluators.restarts();
    std::lock_guard lock(mutex_);
    running_ -= n;
  }
}

void Scheduler::count_answered(Outcome outcome, int64_t n) {
  // mutex_ held
  metrics_.evaluations[std::string(to_string(outcome))] += n;
}

void Scheduler::answer(const std::string& key, const EvalRecord& record) {
  std::vector<Entry> waiters;
  {
    std::lock_guard lock(mutex_);
    waiters = keyed_.finish(key, record, record.outcome != Outcome::harness_error);  // a rerun tries a fault again
    count_answered(record.outcome, static_cast<int64_t>(waiters.size()));
    metrics_.deduplicated += waiters.empty() ? 0 : static_cast<int64_t>(waiters.size()) - 1;
  }
  for (const Entry& w : waiters) w.job->complete(w.index, record);
}

void Scheduler::requeue(std::vector<Entry> entries) {
  // mutex_ held. Back to the front, in their order: they were taken first.
  for (auto e = entries.rbegin(); e != entries.rend(); ++e) {
    if (e->job->finished()) continue;
    queues_[e->job->client()].push_front(std::move(*e));
    ++queued_;
    ++metrics_.requeued;
  }
  work_.notify_all();
}

// A group of run_batch's items (one Evaluator's) as evaluate_batch's caller: the scheduler's keyed
// store, shared by every GPU and job, under its lock; the records go to their waiters as they are
// made. A format error is recorded at once and not shared with other items (serve never has).
class Scheduler::GroupCaller : public BatchCaller {
 public:
  Scheduler& s;
  std::vector<Entry*>& group;
  std::vector<std::string> keys;     // each item's key, once claimed
  std::vector<std::string> leading;  // keys this dispatcher evaluates (other entries may join them)
  size_t handled = 0;                // entries of the group answered, joined or leading

  GroupCaller(Scheduler& scheduler, std::vector<Entry*>& entries)
      : s(scheduler), group(entries), keys(entries.size()) {}

  KeyClaim claim(size_t i, const std::string& key, bool candidate) override {
    keys[i] = key;
    if (!candidate) return KeyClaim::leads;  // a format error: recorded at once, not shared
    std::optional<EvalRecord> known;
    KeyClaim claim;
    {
      std::lock_guard lock(s.mutex_);
      claim = s.keyed_.claim(key, *group[i], &known);
      if (claim == KeyClaim::leads) leading.push_back(key);
      if (claim == KeyClaim::known) {
        s.count_answered(known->outcome, 1);
        s.metrics_.deduplicated += 1;
      }
    }
    handled = i + 1;
    if (known) group[i]->job->complete(group[i]->index, *known);
    return claim;
  }
  void made(size_t i, const EvalRecord& record) override {
    if (!group[i]->item->prepared.real.candidate) {
      {
        std::lock_guard lock(s.mutex_);
        s.count_answered(record.outcome, 1);
      }
      group[i]->job->complete(group[i]->index, record);
      handled = i + 1;
      return;
    }
    {
      std::lock_guard lock(s.mutex_);
      s.metrics_.compile_seconds += record.compile.seconds;
      s.metrics_.kernel_seconds += kernel_seconds(record);
    }
    s.answer(keys[i], record);
  }
  // The later groups of this batch and this group's items not started go back to the queue
  // when it is empty and another GPU waits for work (never with one GPU: none waits then).
  bool go_on() override {
    std::lock_guard lock(s.mutex_);
    return !(s.queued_ == 0 && s.idle_ > 0);
  }
};

void Scheduler::run_batch(Gpu& gpu, std::vector<Entry> batch) {
  // Items one Evaluator serves (the same settings) go together, in their order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<Entry*>> groups;
  for (Entry& e : batch) {
    if (e.job->finished()) continue;  // cancelled or failed meanwhile
    e.job->started();
    auto [it, fresh] = groups.try_emplace(e.item->settings_id);
    if (fresh) order.push_back(e.item->settings_id);
    it->second.push_back(&e);
  }
  for (size_t g = 0; g < order.size(); ++g) {
    std::vector<Entry*>& group = groups[order[g]];
    GroupCaller caller(*this, group);
    try {
      Evaluator& evaluator = gpu.evaluators.get(*group.front()->item, log_.get(), options_.evaluators_per_gpu);
      std::vector<BatchItem> items;
      for (const Entry* e : group) items.push_back({e->item->task_id, &e->item->prepared, &e->item->observation});
      const auto start = Clock::now();
      const std::vector<size_t> left = evaluate_batch(evaluator, items, std::nullopt, caller);
      if (caller.leading.empty()) continue;  // nothing needed the GPU
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      caller.leading.clear();
      set_state(gpu, "up");
      std::lock_guard lock(mutex_);
      metrics_.gpu_seconds += seconds;
      if (left.empty()) continue;
      std::vector<Entry> back;
      for (size_t i : left)
        for (Entry& w : keyed_.release(caller.keys[i])) back.push_back(std::move(w));
      for (size_t later = g + 1; later < order.size(); ++later)
        for (Entry* e : groups[order[later]]) back.push_back(std::move(*e));
      requeue(std::move(back));
      return;
    } catch (const std::exception& e) {
      // A fault of the harness or the machine: the items go back to the queue while another GPU is
      // not down and some GPU has not failed them; the others' jobs (and whoever waits on their
      // keys) fail with a retryable error. Nothing is recorded as the candidates' outcome.
      const ApiError error = worker_lost(gpu.device, e.what());
      std::vector<std::shared_ptr<Job>> failed;
      {
        std::lock_guard lock(mutex_);
        std::vector<Entry> held;
        for (const std::string& key : caller.leading)
          for (Entry& w : keyed_.release(key)) held.push_back(std::move(w));
        for (size_t i = caller.handled; i < group.size(); ++i) held.push_back(*group[i]);
        mark_down(gpu, e.what());
        const size_t others_up = static_cast<size_t>(std::count_if(
            gpus_.begin(), gpus_.end(), [&](const auto& other) { return other.get() != &gpu && other->state != "down"; }));
        std::vector<Entry> back;
        for (Entry& h : held) {
          if (std::find(h.lost_on.begin(), h.lost_on.end(), gpu.device) == h.lost_on.end()) h.lost_on.push_back(gpu.device);
          if (others_up > 0 && h.lost_on.size() < gpus_.size())
            back.push_back(std::move(h));
          else
            failed.push_back(h.job);
        }
        for (size_t later = g + 1; later < order.size(); ++later)  // untried: back as they are
          for (Entry* entry : groups[order[later]]) back.push_back(std::move(*entry));
        requeue(std::move(back));
        if (!failed.empty()) metrics_.jobs_failed += 1;
      }
      for (const auto& job : failed) job->fail(error);
      return;
    }
  }
}

// ---- a GPU's Evaluators ----

Evaluator& GpuEvaluators::get(const PreparedItem& item, RolloutLog* log, size_t keep) {
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->first != item.settings_id) continue;
    open_.splice(open_.begin(), open_, it);
    return *open_.front().second;
  }
  while (open_.size() >= keep) {
    retired_restarts_ += std::max<int64_t>(0, open_.back().second->worker_starts() - 1);
    open_.pop_back();
  }
  EvalSettings settings = item.settings;
  settings.device = device_;
  auto evaluator = std::make_unique<Evaluator>(settings);
  evaluator->attach_log(log);
  open_.emplace_front(item.settings_id, std::move(evaluator));
  return *open_.front().second;
}

int64_t GpuEvaluators::restarts() const {
  int64_t n = retired_restarts_;
  for (const auto& [id, e] : open_) n += std::max<int64_t>(0, e->worker_starts() - 1);
  return n;
}

}  // namespace kbrl::serving
