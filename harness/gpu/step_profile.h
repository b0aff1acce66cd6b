#pragma once
// Where a step's GPU time goes, part by part ("inputs", "candidate", "reference", "compare", ...):
// an event recorded on the stream at the end of each part, read once the step has synchronized. The
// interval between two marks is the device time of the part named by the later one (its kernels and
// any idle time while the host prepared them). A few microseconds per mark, no synchronization.
#include <cuda.h>

#include <map>
#include <string>
#include <vector>

#include "cuda_handles.h"

namespace kbrl::cuda {

class StepProfile {
 public:
  /// Starts a step: the next mark's part begins here.
  void begin(CUstream stream) {
    used_ = 0;
    labels_.clear();
    record(stream);
    labels_.emplace_back();
  }
  /// The work enqueued since the last mark belongs to `part`.
  void mark(const char* part, CUstream stream) {
    if (used_ == 0) return;  // no step begun
    record(stream);
    labels_.emplace_back(part);
  }
  /// Adds each part's milliseconds to `ms` as "<step>.<part>" and ends the step. Waits for the last
  /// mark; a failed driver call (a context the candidate broke) drops the profile, never throws.
  void add_to(std::map<std::string, double>& ms, const std::string& step) noexcept {
    try {
      if (used_ > 1 && driver().event_synchronize(events_[used_ - 1].get()) == CUDA_SUCCESS) {
        std::map<std::string, double> parts;
        bool ok = true;
        for (size_t i = 1; i < used_ && ok; ++i) {
          float part = 0;
          ok = driver().event_elapsed_time(&part, events_[i - 1].get(), events_[i].get()) == CUDA_SUCCESS;
          parts[step + "." + labels_[i]] += part;
        }
        if (ok)
          for (const auto& [name, value] : parts) ms[name] += value;
      }
    } catch (...) {
    }
    used_ = 0;
    labels_.clear();
  }

 private:
  void record(CUstream stream) {
    if (used_ == events_.size()) events_.push_back(create_event());
    KBRL_CU_CHECK(driver().event_record(events_[used_].get(), stream));
    ++used_;
  }

  std::vector<Event> events_;  // reused from job to job
  size_t used_ = 0;
  std::vector<std::string> labels_;
};

}  // namespace kbrl::cuda
