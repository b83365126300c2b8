// The operators every layer names: the unary, binary and reduction operators of the language and
// its builtin functions (Builtins.def), with their spellings; and max and min as texc computes
// them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace texc {

enum class UnaryOp : uint8_t { Neg, Not };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
enum class ReduceKind : uint8_t { Sum, Max, Min, Prod };

const char* spelling(UnaryOp op);
const char* spelling(BinaryOp op);
const char* spelling(ReduceKind kind);
bool isComparison(BinaryOp op);
bool isLogical(BinaryOp op);

enum class Builtin : uint8_t {
#define BUILTIN(Enum, Name, Arity) Enum,
#include "core/Builtins.def"
#undef BUILTIN
};
const char* builtinName(Builtin b);
int builtinArity(Builtin b);
std::optional<Builtin> lookupBuiltin(std::string_view name);  // the language's builtins only
// The rounding to f16/bf16 that fusion inserts (Builtins.def): no program can name it.
inline bool isInternal(Builtin b) { return b == Builtin::RoundF16 || b == Builtin::RoundBF16; }

// max and min as texc computes them (IEEE 754-2019 maximum/minimum, LLVM's llvm.maximum): NaN
// propagates, and -0 counts as less than +0. Used by the reference and by constant folding.
inline double maximumOf(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return (a == 0 && __builtin_signbit(a)) ? b : a;
  return a > b ? a : b;
}
inline double minimumOf(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return (a == 0 && __builtin_signbit(a)) ? a : b;
  return a < b ? a : b;
}

}  // namespace texc
