// vecmath.h — exp and tanh written so that gcc -O3 vectorizes the loops that call them
// (no libm calls, no branches): exp by range reduction x = k ln2 + r and a degree-6 Taylor
// polynomial on |r| <= ln2/2 (relative error about 1.2e-7), tanh from exp. Build with
// -fno-trapping-math, or gcc keeps the clamps as branches and vectorizes nothing.
#pragma once
#include <cstdint>
#include <cstring>

namespace bench {

inline float fastExp(float x) {
  x = x < -87.0f ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  const float shifter = 12582912.0f;  // 1.5 * 2^23: adding it rounds to the nearest integer
  float k = (x * 1.44269504088896341f + shifter) - shifter;
  float r = x - k * 0.693145751953125f;  // ln2 split into an exact high part ...
  r = r - k * 1.42860676533018708e-06f;  // ... and the rest
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = (static_cast<int32_t>(k) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// tanh(x) = 1 - 2 / (exp(2x) + 1); the clamp keeps exp finite and tanh(+-9) rounds to +-1.
inline float fastTanh(float x) {
  x = x < -9.0f ? -9.0f : x;
  x = x > 9.0f ? 9.0f : x;
  return 1.0f - 2.0f / (fastExp(2.0f * x) + 1.0f);
}

}  // namespace bench
