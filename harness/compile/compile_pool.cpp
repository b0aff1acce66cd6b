#include "compile_pool.h"

#include <algorithm>

#include <kbrl/error.h>

namespace kbrl {

CompilePool::CompilePool(size_t threads, CompileOptions options, CompileCache* cache)
    : options_(std::move(options)), cache_(cache) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads_.reserve(threads);
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_all();
  for (auto& t : threads_) t.join();
}

std::future<CompileResult> CompilePool::submit(Candidate candidate) {
  std::packaged_task<CompileResult()> task(
      [this, candidate = std::move(candidate)] { return compile(candidate, options_, cache_); });
  auto future = task.get_future();
  {
    std::lock_guard lock(mutex_);
    KBRL_ASSERT(!stopping_, "submit to a CompilePool that is shutting down");
    queue_.push_back(std::move(task));
  }
  ready_.notify_one();
  return future;
}

void CompilePool::work() {
  for (;;) {
    std::packaged_task<CompileResult()> task;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();  // a packaged_task stores compile()'s exception in the future
  }
}

}  // namespace kbrl
