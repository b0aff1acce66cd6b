#include "job.h"

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
    : id_(std::move(id)), client_(std::move(client)), total_(total), on_done_(std::move(on_done)), records_(total) {}

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
std::vector<EvalRecord> Job::records() const {
  std::lock_guard lock(mutex_);
  std::vector<EvalRecord> out;
  out.reserve(records_.size());
  for (const auto& r : records_)
    if (r) out.push_back(*r);
  return out;
}

nlohmann::json Job::to_json() const {
  std::lock_guard lock(mutex_);
  Json j = {{"job", id_}, {"status", std::string(serving::to_string(status_))}, {"done", done_}, {"total", total_}};
  if (status_ == Status::done) {
    Json records = Json::array();
    for (const auto& r : records_) records.push_back(*r);
    j["records"] = std::move(records);
  }
  if (status_ == Status::failed && error_) j["error"] = error_json(*error_)["error"];
  return j;
}

void Job::started() {
  std::lock_guard lock(mutex_);
  if (status_ == Status::queued) status_ = Status::running;
}

void Job::complete(size_t index, const EvalRecord& record) {
  Done call;
  {
    std::lock_guard lock(mutex_);
    if (status_ == Status::done || status_ == Status::failed || records_[index]) return;
    records_[index] = record;
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

}  // namespace kbrl::serving
