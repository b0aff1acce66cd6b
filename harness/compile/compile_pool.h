#pragma once
// A pool of threads that compile candidates (docs/design.md: compilation runs in the parent on a
// thread pool; NVRTC never touches the GPU). Each compile still runs NVRTC in its own child
// process (compile.h), so N threads give N compiles at once.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "compile.h"

namespace kbrl {

class CompilePool {
 public:
  /// `threads` workers (0: std::thread::hardware_concurrency()), all compiling under `options`
  /// and sharing `cache` (may be null; must outlive the pool).
  explicit CompilePool(size_t threads, CompileOptions options = {}, CompileCache* cache = nullptr);
  /// Finishes every submitted compile, then joins the threads.
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  /// Queues a compile. The future holds the CompileResult, or the exception compile() threw
  /// (ApiError, InputError).
  std::future<CompileResult> submit(Candidate candidate);

  size_t size() const { return threads_.size(); }

 private:
  void work();

  CompileOptions options_;
  CompileCache* cache_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::packaged_task<CompileResult()>> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace kbrl
