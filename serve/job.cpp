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

}  // namespace kbrl::serving
