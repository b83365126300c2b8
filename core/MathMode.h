// --math=precise|fast: which forms of the elementary functions (exp, log, tanh, sigmoid, erf)
// the CPU code uses, and so which error bound --check and the tests hold results to
// (docs/vector-math.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace texc {

// Precise: every function within its documented bound (at most 2 ulp in f32 over the whole
// domain, IEEE special values as libm). Fast: cheaper approximations whose measured error is
// documented per function; sin, cos and pow have no fast form and stay precise.
enum class MathMode : uint8_t { Precise, Fast };

const char* mathModeName(MathMode mode);  // "precise" or "fast"
std::optional<MathMode> parseMathMode(std::string_view name);

}  // namespace texc
