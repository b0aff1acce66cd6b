#pragma once
// An output of the candidate with guard bands on both sides, in one allocation (the GPU session's
// check and timed runs, gpu/check.cpp and gpu/time.cpp). Before a checked run the output's bytes are
// the poison (0xFF: NaN for float32, -1 for int64), so what the candidate leaves unwritten is wrong;
// the guards hold a pattern of their own, drawn again at every poisoning: a 32-bit float32 NaN
// (a read past an output is NaN), different on each side, for each output and each run, never the
// output's poison word. A candidate that writes past its output with the output's poison (0xFF
// bytes: what ReLU copies from a freed, poisoned buffer it read past its input) or with a guard's
// old or other pattern changes the guard; only the guard's own current bytes, which it would have
// to read first, leave it intact. Header-only: the session is built on a CUDA libtorch only, and the
// unit test (test_guarded_output) uses it on the CPU.
#include <torch/torch.h>

#include <cstdint>
#include <utility>

#include <kbrl/splitmix64.h>
#include <reference/reference_model.h>
#include <reference/task.h>

namespace kbrl::gpu {

inline constexpr int64_t kGuardBytes = 1 << 20;  // bytes of each guard band
inline constexpr uint8_t kPoison = 0xFF;         // an output's bytes before a run: NaN for float32, -1 for int64

/// A float32 NaN from 64 random bits: exponent all ones, a mantissa other than zero (which would
/// be an infinity), never 0xFFFFFFFF (the output's poison).
inline uint32_t guard_nan(uint64_t bits) {
  uint32_t w = 0x7F800000u | (static_cast<uint32_t>(bits) & 0x807FFFFFu);
  if ((w & 0x007FFFFFu) == 0) w |= 1u;
  if (w == 0xFFFFFFFFu) w = 0xFFFFFFFEu;
  return w;
}

/// The words of the leading and the trailing guard for draw `draw` of the output keyed `key`: two
/// different guard_nan values.
inline std::pair<uint32_t, uint32_t> guard_words(uint64_t key, uint64_t draw) {
  const uint32_t lead = guard_nan(derive_seed(key, {static_cast<int64_t>(draw), 0}));
  uint32_t trail = guard_nan(derive_seed(key, {static_cast<int64_t>(draw), 1}));
  // Equal by chance (about 2^-24): draw the trailing word again. (lead + 1 is no remedy: for lead
  // 0xFFFFFFFE it is the poison, which guard_nan turns back into lead.)
  for (int64_t again = 2; trail == lead; ++again)
    trail = guard_nan(derive_seed(key, {static_cast<int64_t>(draw), again}));
  return {lead, trail};
}

struct GuardedOutput {
  torch::Tensor buffer;  // uint8: guard | output bytes | guard
  torch::Tensor tensor;  // the output view the candidate writes
  int64_t bytes = 0;

  /// `key` keys the guards' patterns (the job's secret output key and the output's index).
  GuardedOutput(const TensorSpec& spec, torch::Device device, uint64_t key) : bytes(spec.bytes()), key_(key) {
    buffer = torch::empty({kGuardBytes * 2 + bytes}, torch::TensorOptions().dtype(torch::kUInt8).device(device));
    tensor = buffer.narrow(0, kGuardBytes, bytes).view(to_torch(spec.dtype)).view(spec.shape);
  }

  /// The output's bytes to the poison, each guard to its next pattern (two device fills, no sync).
  void poison() {
    const auto [lead, trail] = guard_words(key_, draws_++);
    lead_ = pattern(lead);
    trail_ = pattern(trail);
    buffer.narrow(0, kGuardBytes, bytes).fill_(kPoison);
    lead_guard().view({-1, 4}).copy_(lead_.expand({kGuardBytes / 4, 4}));
    trail_guard().view({-1, 4}).copy_(trail_.expand({kGuardBytes / 4, 4}));
  }

  /// Whether both guards still hold the pattern of the last poison() (a sync; true before any).
  bool guards_intact() const {
    if (!lead_.defined()) return true;
    return lead_guard().view({-1, 4}).eq(lead_).all().item<bool>() &&
           trail_guard().view({-1, 4}).eq(trail_).all().item<bool>();
  }

  torch::Tensor raw() const { return buffer.narrow(0, kGuardBytes, bytes); }

 private:
  uint64_t key_ = 0;
  uint64_t draws_ = 0;
  torch::Tensor lead_, trail_;  // the guards' current 4-byte patterns, on the buffer's device

  torch::Tensor lead_guard() const { return buffer.narrow(0, 0, kGuardBytes); }
  torch::Tensor trail_guard() const { return buffer.narrow(0, kGuardBytes + bytes, kGuardBytes); }
  /// The word's 4 bytes in memory order, on the buffer's device (a fill there, no host copy).
  torch::Tensor pattern(uint32_t word) const {
    return torch::full({1}, static_cast<int32_t>(word), torch::TensorOptions().dtype(torch::kInt32).device(buffer.device()))
        .view(torch::kUInt8);
  }
};

}  // namespace kbrl::gpu
