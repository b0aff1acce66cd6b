#include "gpu_session.h"

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "cuda_driver.h"

namespace kbrl {

uint64_t trial_seed(uint64_t secret, int task_id, int trial) {
  // Distinct per (task, trial), unpredictable without the secret; torch takes seeds as uint64:
  // keep it positive.
  return derive_seed(secret, {trial, task_id}) & 0x7FFFFFFFFFFFFFFFULL;
}

int warmups_for(uint64_t secret, std::string_view candidate_key) {
  uint64_t h = 0xCBF29CE484222325ULL;  // FNV-1a of the key, then mixed with the secret
  for (unsigned char c : candidate_key) h = (h ^ c) * 0x100000001B3ULL;
  return 2 + static_cast<int>(trial_seed(secret ^ h, 0, 0x5EED) % 5);
}

}  // namespace kbrl

#if !defined(KBRL_TORCH_CUDA)

namespace kbrl {

struct GpuSession::Impl {};

namespace {
constexpr const char* kNoCudaTorch =
    "this kbrl was built against a libtorch without CUDA: on a GPU machine build with the gpu "
    "preset (or the default one, which takes python3's CUDA torch when there is one)";
}

bool gpu_available(std::string* reason) {
  if (reason) *reason = kNoCudaTorch;
  return false;
}

GpuSession::GpuSession(int) { throw Error(kNoCudaTorch); }
GpuSession::~GpuSession() = default;
const DeviceInfo& GpuSession::device() const { throw Error(kNoCudaTorch); }
DevicePeaks GpuSession::measure_peaks() { throw Error(kNoCudaTorch); }
GpuJobResult GpuSession::run(const GpuJob&) { throw Error(kNoCudaTorch); }
GpuJobResult GpuSession::run_checked(const GpuJob&) { throw Error(kNoCudaTorch); }
std::vector<double> GpuSession::time_reference(int, Scale, const TimingSettings&, uint64_t) {
  throw Error(kNoCudaTorch);
}

}  // namespace kbrl

#endif  // The CUDA implementation is session_cuda.cpp (with load, check, time), built only with a CUDA libtorch.
