#include "gpu_session.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include <kbrl/error.h>
#include <kbrl/splitmix64.h>

#include "cuda_driver.h"

namespace kbrl {

uint64_t trial_seed(uint64_t secret, int task_id, int trial) {
  // Distinct per (task, trial), unpredictable without the secret; torch takes seeds as uint64:
  // keep it positive.
  return derive_seed(secret, {trial, task_id}) & 0x7FFFFFFFFFFFFFFFULL;
}

namespace {

/// Fisher-Yates under the secret: draw n of the shuffle is trial_seed(secret, task_id, base + n).
void shuffle_under(std::vector<InputSet>& sets, uint64_t secret, int task_id, int base) {
  for (size_t i = sets.size() - 1; i > 0; --i)
    std::swap(sets[i], sets[trial_seed(secret, task_id, base + static_cast<int>(i)) % (i + 1)]);
}

}  // namespace

std::vector<TrialPlan> trial_plan(const CheckSettings& check, int task_id) {
  std::vector<InputSet> kinds;
  if (check.robust_inputs && check.trials > 0) {
    constexpr InputSet kDrawn[] = {InputSet::kernelbench, InputSet::outliers, InputSet::mixture};
    kinds.push_back(InputSet::stress);
    for (int t = 0; t < check.trials; ++t)
      kinds.push_back(t < 3 ? kDrawn[t] : kDrawn[trial_seed(check.secret, task_id, 3'000'000 + t) % 3]);
    shuffle_under(kinds, check.secret, task_id, 4'000'000);
  } else {
    kinds.assign(static_cast<size_t>(std::max(check.trials, 0)), InputSet::kernelbench);
  }
  std::vector<TrialPlan> plan;
  for (size_t k = 0; k < kinds.size(); ++k) {
    const std::string_view name = kinds[k] == InputSet::kernelbench ? "trial" : to_string(kinds[k]);
    plan.push_back({kinds[k], trial_seed(check.secret, task_id, static_cast<int>(k)), fmt::format("{}-{}", name, k)});
  }
  return plan;
}

size_t changed_input_trial(const CheckSettings& check, int task_id, size_t trials) {
  return trials == 0 ? 0 : trial_seed(check.secret, task_id, 5'000'000) % trials;
}

uint64_t changed_input_seed(const CheckSettings& check, int task_id, size_t k) {
  return trial_seed(check.secret, task_id, 6'000'000 + static_cast<int>(k));
}

std::optional<AccuracyTrial> accuracy_trial(const std::vector<TrialPlan>& plan, size_t changed_trial) {
  for (size_t k = 0; k < plan.size(); ++k)
    if (plan[k].set == InputSet::kernelbench)
      return AccuracyTrial{k, k == changed_trial ? plan[k].seed ^ 0xC4A26EDull : plan[k].seed, k == changed_trial};
  return std::nullopt;
}

InputSet timed_input_set(const CheckSettings& check, uint64_t sample_secret, int task_id, int draw) {
  if (!check.robust_inputs || draw < 0) return InputSet::kernelbench;
  constexpr int kFirst = 5, kBlock = 6;
  const int block = draw < kFirst ? 0 : 1 + (draw - kFirst) / kBlock;
  const int at = draw < kFirst ? draw : (draw - kFirst) % kBlock;
  std::vector<InputSet> sets = {InputSet::kernelbench, InputSet::kernelbench, InputSet::stress, InputSet::outliers,
                                InputSet::mixture};
  if (block > 0) sets.insert(sets.begin(), InputSet::kernelbench);
  shuffle_under(sets, sample_secret, task_id, 10'000'000 + block * 16);  // each block its own order
  return sets[static_cast<size_t>(at)];
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
