// The two mixed input sets (reference_model.h): KernelBench's draw with outliers from the stress
// set, and the two draws mixed block by block. A candidate that tells KernelBench's inputs from the
// stress set by a handful of values cannot tell these from either: most values look like one set,
// and where the others sit is drawn from the seed. Also the few values the check's changed-input run
// changes (change_few_values).
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

/// `count` values of the stress law of `in` (flat), under the current seed: only those values when
/// the law is elementwise, else the values of a whole draw at `at` (flat positions).
torch::Tensor stress_values(const InputLaw& law, const TensorSpec& in, const torch::Tensor& at, torch::Device device) {
  if (law.elementwise) return law.draw(TensorSpec{in.name, {at.numel()}, in.dtype}, device);
  return law.draw(in, device).contiguous().view(-1).index({at});
}

/// Puts stress values into `x` (a flat view of one input) where the set says; `seed` draws the
/// positions, `stress_seed` the values.
void mix_into(torch::Tensor x, const InputLaw& law, const TensorSpec& in, InputSet set, uint64_t seed,
              uint64_t stress_seed) {
  const int64_t n = x.numel();
  if (n == 0) return;
  const auto positions = torch::TensorOptions().dtype(torch::kInt64).device(x.device());
  torch::manual_seed(seed ^ kMaskSalt);
  if (set == InputSet::outliers) {
    const int shift = drawn_shift(seed, kOutlierShiftMin, kOutlierShiftMax);
    const int64_t count = std::max<int64_t>(1, n >> shift);
    const auto at = torch::randint(0, n, {count}, positions);
    torch::manual_seed(stress_seed);
    x.index_put_({at}, stress_values(law, in, at, x.device()));
    return;
  }
  const int shift = drawn_shift(seed, kBlockShiftMin, kBlockShiftMax);
  const int64_t block = std::min<int64_t>(int64_t{1} << shift, n & -n);  // a power of two dividing n
  const int64_t blocks = n / block;
  // The blocks taken from the stress draw, each with probability 1/2.
  const auto rows = torch::randint(0, 2, {blocks}, positions).nonzero().view(-1);
  if (rows.numel() == 0) return;
  auto xb = x.view({blocks, block});
  torch::manual_seed(stress_seed);
  torch::Tensor values;
  if (law.elementwise) {
    values = law.draw(TensorSpec{in.name, {rows.numel(), block}, in.dtype}, x.device());
  } else {
    values = law.draw(in, x.device()).contiguous().view({blocks, block}).index_select(0, rows);
  }
  xb.index_copy_(0, rows, values);
}

}  // namespace

Tensors make_mixed_inputs(const TaskSpec& spec, uint64_t seed, torch::Device device, InputSet set) {
  KBRL_ASSERT(set == InputSet::outliers || set == InputSet::mixture, "{} is not a mixed input set",
              to_string(set));
  const auto kernelbench = input_domains(spec, InputSet::kernelbench);
  const auto stress_domains = input_domains(spec, InputSet::stress);
  const std::vector<InputLaw> stress_laws = task_def(spec.id).stress_laws(spec);
  Tensors inputs = make_inputs(spec, seed, device, InputSet::kernelbench);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!mixable(spec, i, kernelbench, stress_domains)) continue;
    inputs[i] = inputs[i].contiguous();
    mix_into(inputs[i].view(-1), stress_laws.at(i), spec.inputs[i], set, splitmix(seed + i),
             splitmix(seed ^ kStressSalt) + i);
  }
  return inputs;
}

}  // namespace kbrl::detail

namespace kbrl {

int64_t change_few_values(const TaskSpec& spec, Tensors& inputs, InputSet set, uint64_t seed) {
  const auto domains = input_domains(spec, set);
  KBRL_ASSERT(domains.size() == inputs.size(), "{} inputs for task {}'s {}", inputs.size(), spec.id, domains.size());
  torch::manual_seed(seed ^ 0x5EEDull);
  int64_t changed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto& x = inputs[i];
    const InputDomain& d = domains[i];
    if (x.scalar_type() != torch::kFloat32 || !x.is_contiguous() || x.numel() == 0 ||
        d.kind != InputDomain::Kind::interval || d.structure != InputDomain::Structure::dense)
      continue;
    const int64_t count = std::min(x.numel(), std::clamp<int64_t>(x.numel() >> 12, 64, int64_t{1} << 20));
    const auto positions = torch::TensorOptions().dtype(torch::kInt64).device(x.device());
    const auto at = torch::randint(0, x.numel(), {count}, positions);
    const auto from = torch::randint(0, x.numel(), {count}, positions);
    auto flat = x.view(-1);
    flat.index_put_({at}, flat.index({from}));  // index() copies first: the values are the old ones
    changed += count;
  }
  return changed;
}

}  // namespace kbrl

namespace kbrl::detail {

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
