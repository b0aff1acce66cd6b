#include "job.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include <kbrl/error.h>

namespace kbrl::serving {

using Json = nlohmann::json;

std::string_view to_string(Job::Status status) {
  switch (status) {
    case Job::Status::queued: return "queued";
    case Job::Status::running: return "running";
    case Job::Status::done: return "done";
    case Job::Status::failed: return "failed";
  }
  return "unknown";
}

Job::Job(std::string id, std::string client, size_t total, Done on_done)
    : id_(std::move(id)), client_(std::move(client)), total_(total), on_done_(std::move(on_done)), answers_(total) {}

Job::Status Job::status() const {
  std::lock_guard lock(mutex_);
  return status_;
}
size_t Job::done() const {
  std::lock_guard lock(mutex_);
  return done_;
}
bool Job::finished() const {
  std::lock_guard lock(mutex_);
  return status_ == Status::done || status_ == Status::failed;
}
std::optional<ApiError> Job::error() const {
  std::lock_guard lock(mutex_);
  return error_;
}
std::vector<ItemAnswer> Job::answers() const {
  std::lock_guard lock(mutex_);
  std::vector<ItemAnswer> out;
  out.reserve(answers_.size());
  for (const auto& a : answers_)
    if (a) out.push_back(*a);
  return out;
}

nlohmann::json Job::to_json() const {
  std::lock_guard lock(mutex_);
  Json j = {{"job", id_}, {"status", std::string(serving::to_string(status_))}, {"done", done_}, {"total", total_}};
  if (status_ == Status::done) {
    Json records = Json::array();
    for (const auto& a : answers_) records.push_back(answer_json(*a));
    j["records"] = std::move(records);
  }
  if (status_ == Status::failed && error_) j["error"] = error_json(*error_)["error"];
  return j;
}

void Job::started() {
  std::lock_guard lock(mutex_);
  if (status_ == Status::queued) status_ = Status::running;
}

void Job::complete(size_t index, const EvalRecord& record) { answer(index, record); }
void Job::reject(size_t index, const ApiError& error) { answer(index, error); }

void Job::answer(size_t index, ItemAnswer answer) {
  Done call;
  {
    std::lock_guard lock(mutex_);
    if (status_ == Status::done || status_ == Status::failed || answers_[index]) return;
    answers_[index] = std::move(answer);
    if (++done_ < total_) return;
    status_ = Status::done;
    call = std::move(on_done_);
  }
  if (call) call(*this);
}

void Job::fail(const ApiError& error) {
  Done call;
  {
    std::lock_guard lock(mutex_);
    if (status_ == Status::done || status_ == Status::failed) return;
    status_ = Status::failed;
    error_ = error;
    call = std::move(on_done_);
  }
  if (call) call(*this);
}

// ---- the store of jobs ----
namespace {

constexpr size_t kGoneIds = 65536;  // ids of dropped jobs remembered for a 410 (10 MiB at most)

size_t job_bytes(const Job& job) {
  size_t bytes = sizeof(Job) + job.id().size() + job.client().size();
  for (const ItemAnswer& a : job.answers())
    bytes += std::holds_alternative<EvalRecord>(a) ? approximate_bytes(std::get<EvalRecord>(a))
                                                   : sizeof(ApiError) + std::get<ApiError>(a).message.size();
  return bytes;
}

}  // namespace

std::string random_job_id() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(fmt::format("getrandom: {}", std::strerror(errno)));
    got += static_cast<size_t>(n);
  }
  std::string id;
  for (unsigned char b : bytes) id += fmt::format("{:02x}", b);
  return id;
}

void JobStore::add(std::shared_ptr<Job> job) {
  std::lock_guard lock(mutex_);
  const std::string id = job->id();
  jobs_[id] = {std::move(job), 0};
}

void JobStore::finished(const Job& job) {
  const size_t bytes = job_bytes(job);
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(job.id());
  if (it == jobs_.end() || it->second.bytes > 0) return;
  it->second.bytes = bytes;
  finished_bytes_ += bytes;
  finished_order_.push_back(job.id());
  while (finished_bytes_ > max_finished_bytes_ && !finished_order_.empty()) forget_oldest();
}

void JobStore::forget_oldest() {
  const std::string id = std::move(finished_order_.front());
  finished_order_.pop_front();
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  finished_bytes_ -= it->second.bytes;
  gone_[id] = it->second.job->client();
  gone_order_.push_back(id);
  jobs_.erase(it);
  while (gone_order_.size() > kGoneIds) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
}

JobStore::Lookup JobStore::find(const std::string& id, const std::string& client) const {
  std::lock_guard lock(mutex_);
  if (auto it = jobs_.find(id); it != jobs_.end())
    return client.empty() || it->second.job->client() == client ? Lookup{it->second.job, false} : Lookup{};
  if (auto it = gone_.find(id); it != gone_.end()) return {nullptr, client.empty() || it->second == client};
  return {};
}

void JobStore::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  if (it->second.bytes > 0) {
    finished_bytes_ -= it->second.bytes;
    std::erase(finished_order_, id);
  }
  jobs_.erase(it);
}

size_t JobStore::finished_bytes() const {
  std::lock_guard lock(mutex_);
  return finished_bytes_;
}

}  // namespace kbrl::serving
