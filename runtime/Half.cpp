#include "runtime/Half.h"

#include <bit>
#include <cmath>

namespace texc {

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24 is exact in f32.
    float magnitude = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -magnitude : magnitude;
  }
  // Rebias the exponent from 15 to 127.
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

uint16_t floatToHalf(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  auto sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) {
    // NaN: keep the top payload bits and force the quiet bit so it cannot collapse into inf.
    return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  }
  if (mag >= 0x38800000u) {
    // Normal in f16 range (or overflowing): drop 13 mantissa bits with rounding. A carry out of
    // the mantissa correctly bumps the exponent, and reaching 0x7c00 means overflow to inf.
    uint32_t h = (mag - 0x38000000u) >> 13;
    uint32_t rest = mag & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    if (h >= 0x7c00u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | h);
  }
  // At most 2^-25 (half the smallest subnormal, a tie that rounds to the even zero): +-0.
  if (mag <= 0x33000000u) return sign;
  // Subnormal result: value = m * 2^-24 with m = significand >> (126 - exponent).
  uint32_t e = mag >> 23;
  uint32_t significand = (mag & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - e;  // 14..24
  uint32_t m = significand >> shift;
  uint32_t rest = significand & ((1u << shift) - 1u);
  uint32_t halfway = 1u << (shift - 1u);
  if (rest > halfway || (rest == halfway && (m & 1u))) ++m;  // m may reach 0x400, the min normal
  return static_cast<uint16_t>(sign | m);
}

float bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

uint16_t floatToBf16(float value) {
  uint32_t x = std::bit_cast<uint32_t>(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  // Adding 0x7fff plus the lowest kept bit rounds to nearest even; overflow carries into inf.
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace texc

extern "C" {
float texc_f16_to_f32(uint16_t bits) { return texc::halfToFloat(bits); }
uint16_t texc_f32_to_f16(float value) { return texc::floatToHalf(value); }
float texc_bf16_to_f32(uint16_t bits) { return texc::bf16ToFloat(bits); }
uint16_t texc_f32_to_bf16(float value) { return texc::floatToBf16(value); }
}
