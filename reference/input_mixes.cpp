// The two mixed input sets (reference_model.h): KernelBench's draw with outliers from the stress
// set, and the two draws mixed block by block. A candidate that tells KernelBench's inputs from the
// stress set by a handful of values cannot tell these from either: most values look like one set,
// and where the others sit is drawn from the seed.
#include <algorithm>
#include <cstdint>

#include <kbrl/error.h>

#include "task_def.h"

namespace kbrl::detail {
namespace {

uint64_t splitmix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr uint64_t kStressSalt = 0x5DEECE66Dull;
constexpr uint64_t kMaskSalt = 0xB5297A4Dull;
constexpr int kOutlierShiftMin = 6, kOutlierShiftMax = 12;  // 1 in 2^6 .. 2^12 positions
constexpr int kBlockShiftMin = 4, kBlockShiftMax = 12;      // blocks of 16 .. 4096 elements

/// Whether input `i` takes outliers and blocks from the stress set: a float input whose KernelBench
/// and stress draws are both plain intervals (no indices, probabilities, signs, masks or structure),
/// so any mix of the two stays in the task's domain.
bool mixable(const TaskSpec& spec, size_t i, const std::vector<InputDomain>& kernelbench,
             const std::vector<InputDomain>& stress) {
  auto plain = [](const InputDomain& d) {
    return d.kind == InputDomain::Kind::interval && d.structure == InputDomain::Structure::dense;
  };
  return spec.inputs[i].dtype == DType::f32 && plain(kernelbench[i]) && plain(stress[i]);
}

/// 2^shift for a shift drawn from the seed in [lo, hi].
int drawn_shift(uint64_t seed, int lo, int hi) {
  return lo + static_cast<int>(splitmix(seed ^ kMaskSalt) % static_cast<uint64_t>(hi - lo + 1));
}

/// Puts `stress` values into `x` (both flat views of one input) where the set says.
void mix_into(torch::Tensor x, const torch::Tensor& stress, InputSet set, uint64_t seed) {
  const int64_t n = x.numel();
  if (n == 0) return;
  if (set == InputSet::outliers) {
    const int shift = drawn_shift(seed, kOutlierShiftMin, kOutlierShiftMax);
    const int64_t count = std::max<int64_t>(1, n >> shift);
    const auto at = torch::randint(0, n, {count}, torch::TensorOptions().dtype(torch::kInt64).device(x.device()));
    x.index_put_({at}, stress.index({at}));
    return;
  }
  const int shift = drawn_shift(seed, kBlockShiftMin, kBlockShiftMax);
  const int64_t block = std::min<int64_t>(int64_t{1} << shift, n & -n);  // a power of two dividing n
  const int64_t blocks = n / block;
  const auto take = torch::randint(0, 2, {blocks, 1}, torch::TensorOptions().device(x.device())).to(torch::kBool);
  auto xb = x.view({blocks, block});
  xb.copy_(torch::where(take, stress.view({blocks, block}), xb));
}

}  // namespace

Tensors make_mixed_inputs(const TaskSpec& spec, uint64_t seed, torch::Device device, InputSet set) {
  KBRL_ASSERT(set == InputSet::outliers || set == InputSet::mixture, "{} is not a mixed input set",
              to_string(set));
  const auto kernelbench = input_domains(spec, InputSet::kernelbench);
  const auto stress_domains = input_domains(spec, InputSet::stress);
  Tensors inputs = make_inputs(spec, seed, device, InputSet::kernelbench);
  const Tensors stress = make_inputs(spec, splitmix(seed ^ kStressSalt), device, InputSet::stress);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!mixable(spec, i, kernelbench, stress_domains)) continue;
    torch::manual_seed(splitmix(seed + i) ^ kMaskSalt);
    inputs[i] = inputs[i].contiguous();
    mix_into(inputs[i].view(-1), stress[i].contiguous().view(-1), set, splitmix(seed + i));
  }
  return inputs;
}

std::string describe_mixed(const TaskSpec& spec, InputSet set) {
  const auto kernelbench = input_domains(spec, InputSet::kernelbench);
  const auto stress = input_domains(spec, InputSet::stress);
  std::string text;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    if (i) text += "; ";
    text += spec.inputs[i].name + " ";
    if (!mixable(spec, i, kernelbench, stress))
      text += "as KernelBench draws it (its domain is restricted)";
    else if (set == InputSet::outliers)
      text += fmt::format("as KernelBench draws it, with 1 in 2^k positions (k from {} to {}, k and the positions "
                          "drawn from the seed) taken from the stress draw",
                          kOutlierShiftMin, kOutlierShiftMax);
    else
      text += fmt::format("in blocks of 2^k elements (k from {} to {}, drawn from the seed), each block from "
                          "KernelBench's draw or the stress draw with probability 1/2",
                          kBlockShiftMin, kBlockShiftMax);
  }
  return text;
}

std::vector<InputDomain> mixed_domains(const TaskSpec& spec) {
  auto domains = input_domains(spec, InputSet::kernelbench);
  const auto stress = input_domains(spec, InputSet::stress);
  for (size_t i = 0; i < domains.size(); ++i)
    if (mixable(spec, i, domains, stress)) {
      domains[i].lo = std::min(domains[i].lo, stress[i].lo);
      domains[i].hi = std::max(domains[i].hi, stress[i].hi);
    }
  return domains;
}

}  // namespace kbrl::detail
