// IEEE binary16 (f16) and bfloat16 (bf16) conversions. Both are storage types: values are loaded
// into f32, computed in f32 and rounded to nearest, ties to even, on store.
#pragma once

#include <cstdint>

namespace texc {

// Exact: every f16 value is representable in f32. NaN payloads are kept (shifted up).
float halfToFloat(uint16_t bits);
// Round to nearest even; overflow gives +-inf; values below half the smallest subnormal give
// +-0; NaN stays a (quiet) NaN with its sign.
uint16_t floatToHalf(float value);

// Exact: bf16 is the upper half of an f32.
float bf16ToFloat(uint16_t bits);
// Round to nearest even on the dropped 16 bits; NaN stays a quiet NaN with its sign.
uint16_t floatToBf16(float value);

}  // namespace texc

// The same conversions with C linkage, for JIT-compiled kernels that call into the runtime.
extern "C" {
float texc_f16_to_f32(uint16_t bits);
uint16_t texc_f32_to_f16(float value);
float texc_bf16_to_f32(uint16_t bits);
uint16_t texc_f32_to_bf16(float value);
}
