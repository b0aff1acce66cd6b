#pragma once
// Data-parallel training over the GPUs of one host (libtorch's c10d): one process per GPU, each with
// the whole model, joined through a file store. LmPolicy::set_data_parallel() makes update() run
// only its rank's share of a batch's completions and sum the adapter's gradients over the group
// before the optimizer step, so every rank takes the same step as one process on the whole batch.
// Backends: NCCL (a CUDA build with NCCL's header) for tensors on a GPU, Gloo (Debian's libtorch with
// libgloo-dev) for tensors on a CPU; backends() says which this build has. Includes ATen: only for
// the translation units that already include torch.
#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kbrl::lm {

struct DataParallelOptions {
  std::string store;    // a file path every rank names, not existing before the first rank joins
  int rank = 0;         // 0 .. size - 1
  int size = 1;         // processes in the group
  std::string backend;  // nccl, gloo; "" = nccl for a GPU, gloo for a CPU
  double timeout_seconds = 600;  // joining and each collective
};

class DataParallelGroup {
 public:
  /// Joins the group through the store (Gloo connects the ranks here; NCCL at the first collective,
  /// set_data_parallel's broadcast). InputError for a bad rank, size or backend name; ApiError when
  /// the backend is not in this build (backends() lists those that are) or the others do not join
  /// within the timeout. A rank that fails between collectives (out of memory inside an update)
  /// leaves the others waiting in the next one until the timeout, where NCCL's watchdog ends their
  /// processes: an error inside a data-parallel update is fatal for the whole group.
  static std::shared_ptr<DataParallelGroup> join(const DataParallelOptions& options, bool cuda);
  /// The backends this build can join with: "nccl", "gloo", or none.
  static std::vector<std::string> backends();
  ~DataParallelGroup();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& backend() const { return backend_; }
  /// Each tensor summed over the group, in place (an all-reduce; every rank passes the same shapes).
  void sum(std::vector<at::Tensor>& tensors);
  /// Rank 0's values copied into every rank's tensors, in place.
  void broadcast(std::vector<at::Tensor>& tensors);

  struct Impl;

 private:
  DataParallelGroup(int rank, int size, std::string backend, std::unique_ptr<Impl> impl);
  /// `call` on the tensors, c10d's errors as ApiError naming the collective and the rank.
  void collective(const char* name, const std::function<void(std::vector<at::Tensor>&)>& call,
                  std::vector<at::Tensor>& tensors);
  int rank_;
  int size_;
  std::string backend_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kbrl::lm
