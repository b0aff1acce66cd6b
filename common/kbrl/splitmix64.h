#pragma once
// splitmix64 (Steele, Lea & Flood 2014; Vigna's reference splitmix64.c): one fixed generator for
// every draw that must be the same on every platform and standard library (the task split, the
// bootstrap), unlike std::shuffle and std's distributions, whose results the standard leaves open.
#include <cstdint>

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

}  // namespace kbrl
