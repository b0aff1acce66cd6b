// DataParallelGroup (data_parallel.h) over c10d's process groups. CMake defines KBRL_C10D_NCCL and
// KBRL_C10D_GLOO where the build has the backend's headers; c10d's headers read USE_C10D_*.
#include "data_parallel.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <utility>

#include <kbrl/error.h>

#if KBRL_C10D_NCCL || KBRL_C10D_GLOO
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#endif
#if KBRL_C10D_NCCL
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if KBRL_C10D_GLOO
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace kbrl::lm {

struct DataParallelGroup::Impl {
  std::function<void(std::vector<at::Tensor>&)> sum, broadcast;
  std::function<void()> shutdown;  // the backend's orderly end where it has one (NCCL on libtorch 2.x)
};

namespace {

#if KBRL_C10D_NCCL || KBRL_C10D_GLOO
// Binds a c10d process group's collectives (the same calls on libtorch 1.13 and 2.x).
template <class Group>
std::unique_ptr<DataParallelGroup::Impl> bind(c10::intrusive_ptr<Group> group) {
  auto impl = std::make_unique<DataParallelGroup::Impl>();
  impl->sum = [group](std::vector<at::Tensor>& t) { group->allreduce(t)->wait(); };
  impl->broadcast = [group](std::vector<at::Tensor>& t) { group->broadcast(t)->wait(); };
  impl->shutdown = [group] {
    if constexpr (requires(Group& g) { g.shutdown(); }) group->shutdown();
  };
  return impl;
}
#endif

}  // namespace

std::vector<std::string> DataParallelGroup::backends() {
  std::vector<std::string> out;
#if KBRL_C10D_NCCL
  out.push_back("nccl");
#endif
#if KBRL_C10D_GLOO
  out.push_back("gloo");
#endif
  return out;
}

std::shared_ptr<DataParallelGroup> DataParallelGroup::join(const DataParallelOptions& o, bool cuda) {
  KBRL_CHECK_INPUT(o.size >= 1, "data parallel: the group size must be >= 1 (got {})", o.size);
  KBRL_CHECK_INPUT(o.rank >= 0 && o.rank < o.size, "data parallel: rank {} is not in 0..{}", o.rank, o.size - 1);
  KBRL_CHECK_INPUT(!o.store.empty(), "data parallel: no store path (a file every rank names)");
  KBRL_CHECK_INPUT(o.timeout_seconds > 0, "data parallel: the timeout must be > 0 s (got {})", o.timeout_seconds);
  const std::string backend = o.backend.empty() ? (cuda ? "nccl" : "gloo") : o.backend;
  KBRL_CHECK_INPUT(backend == "nccl" || backend == "gloo", "data parallel: unknown backend '{}' (nccl, gloo)", backend);
  const auto have = backends();
  std::string listed;
  for (const std::string& b : have) listed += (listed.empty() ? "" : ", ") + b;
  if (std::find(have.begin(), have.end(), backend) == have.end())
    throw ApiError("c10d", "join " + backend,
                   fmt::format("this build has no {} backend (it has: {}); NCCL needs a CUDA libtorch and nccl.h, "
                               "Gloo Debian's libtorch and libgloo-dev",
                               backend, listed.empty() ? std::string("none") : listed),
                   __FILE__, __LINE__);
#if KBRL_C10D_NCCL || KBRL_C10D_GLOO
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_seconds * 1000));
  std::unique_ptr<Impl> impl;
  try {
    auto store = c10::make_intrusive<c10d::FileStore>(o.store, o.size);
    store->setTimeout(timeout);
#if KBRL_C10D_NCCL
    if (backend == "nccl") {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      impl = bind(c10::make_intrusive<c10d::ProcessGroupNCCL>(store, o.rank, o.size, options));
    }
#endif
#if KBRL_C10D_GLOO
    if (backend == "gloo") {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      impl = bind(c10::make_intrusive<c10d::ProcessGroupGloo>(store, o.rank, o.size, options));
    }
#endif
  } catch (const c10::Error& e) {
    throw ApiError("c10d", "join " + backend,
                   fmt::format("rank {} of {} through {}: {}", o.rank, o.size, o.store, e.what_without_backtrace()),
                   __FILE__, __LINE__);
  }
  return std::shared_ptr<DataParallelGroup>(new DataParallelGroup(o.rank, o.size, backend, std::move(impl)));
#else
  return nullptr;  // not reached: backends() is empty
#endif
}

DataParallelGroup::DataParallelGroup(int rank, int size, std::string backend, std::unique_ptr<Impl> impl)
    : rank_(rank), size_(size), backend_(std::move(backend)), impl_(std::move(impl)) {}

DataParallelGroup::~DataParallelGroup() {
  if (!impl_) return;
  try {
    if (impl_->shutdown) impl_->shutdown();
  } catch (const std::exception&) {  // ending anyway
  }
  impl_->sum = nullptr;  // the last references to the process group
  impl_->broadcast = nullptr;
  impl_->shutdown = nullptr;
}

void DataParallelGroup::sum(std::vector<at::Tensor>& tensors) { collective("allreduce", impl_->sum, tensors); }

void DataParallelGroup::broadcast(std::vector<at::Tensor>& tensors) { collective("broadcast", impl_->broadcast, tensors); }

void DataParallelGroup::collective(const char* name, const std::function<void(std::vector<at::Tensor>&)>& call,
                                   std::vector<at::Tensor>& tensors) {
  try {
    call(tensors);
  } catch (const c10::Error& e) {
    throw ApiError("c10d", backend_ + " " + name, fmt::format("rank {} of {}: {}", rank_, size_, e.what_without_backtrace()),
                   __FILE__, __LINE__);
  }
}

}  // namespace kbrl::lm
