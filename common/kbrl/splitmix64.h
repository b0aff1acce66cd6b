#pragma once
// splitmix64 (Steele, Lea & Flood 2014; Vigna's reference splitmix64.c): one fixed generator for
// every draw that must be the same on every platform and standard library (the task split, the
// bootstrap), unlike std::shuffle and std's distributions, whose results the standard leaves open;
// with the one seed derivation (derive_seed) and the one shuffle built on it.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace kbrl {

/// Advances `state` and returns the next 64 random bits.
inline uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// A uniform double in [0, 1) from the top 53 bits of the next draw.
inline double splitmix64_uniform01(uint64_t& state) {
  return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

/// The one seed derivation: the seed of the stream that `keys` name under `seed` (a run's seed and,
/// say, a task id and a sample index). Key i is mixed in with its own odd multiplier, so (1, 2) and
/// (2, 1) differ, then splitmix64 scrambles the result. Every per-task, per-sample, per-step or
/// per-trial seed in kbrl comes from here.
inline uint64_t derive_seed(uint64_t seed, std::initializer_list<int64_t> keys) {
  constexpr uint64_t kMultipliers[] = {0xD1B54A32D192ED03ULL, 0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL,
                                       0xA0761D6478BD642FULL};
  size_t i = 0;
  for (const int64_t key : keys) seed ^= kMultipliers[i++ % 4] * static_cast<uint64_t>(key + 1);
  return splitmix64(seed);
}

/// The one shuffle: Fisher-Yates driven by splitmix64 from `state`, the same order on every
/// platform (std::shuffle's is left open by the standard).
template <class T>
void shuffle(std::vector<T>& v, uint64_t& state) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(splitmix64(state) % i);
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace kbrl
