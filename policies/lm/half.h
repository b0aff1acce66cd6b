#pragma once
// Exact conversions of 16-bit floats to float32, for weights stored as IEEE half (F16) or
// bfloat16 (BF16) in safetensors and GGUF files. Every half and bfloat16 value is representable
// in float32, so these are exact: subnormals, signed zeros, infinities and NaNs (payload kept)
// included.
#include <bit>
#include <cstdint>

namespace kbrl::lm {

/// bfloat16 is the upper half of a float32.
inline float float_from_bf16(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15), 10 mantissa bits.
inline float float_from_f16(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) {  // infinity or NaN: all-ones float32 exponent, mantissa kept
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent != 0) {  // normal: rebias 15 -> 127
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  }
  if (mantissa == 0) return std::bit_cast<float>(sign);  // signed zero
  // Subnormal half (mantissa * 2^-24): normalise it, which float32's wider exponent allows.
  int32_t shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3ffu;
  const uint32_t float_exponent = static_cast<uint32_t>(113 - shift);  // 1 - 15 + 127 - shift
  return std::bit_cast<float>(sign | (float_exponent << 23) | (mantissa << 13));
}

}  // namespace kbrl::lm
