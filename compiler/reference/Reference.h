// The float64 reference interpreter: evaluates an analysed Program directly from its definition
// (spec 5), with no optimizing pipeline in between. Results of compiled code are compared with it
// (`texc run --check`, `texc compare`, the tests).
//
// Every computation runs in float64 whatever its dtype; values read from f16/bf16/f32 inputs are
// whatever doubles the caller passes. Booleans are the doubles 0 and 1. A term of a reduction is
// skipped when one of the guarded accesses it owns falls outside its tensor, and a skipped
// access is never read. Each output element gets the float64 operations of the element-wise
// walk in the same order (reduction terms in the order of their variables, the last fastest),
// though the interpreter walks the expression once per row of elements (Reference.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "frontend/Program.h"

namespace texc {

// A dense row-major tensor of doubles. A rank-0 tensor has an empty shape and one element.
struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

// Evaluates `p` on `inputs` (one per entry of p.inputs, in that order; shapes must match the
// declared ones). Returns every tensor of the program indexed by tensor id: inputs copied,
// computed tensors evaluated in program order. Throws std::invalid_argument for wrong inputs and
// std::logic_error when the program breaks its own invariants (an unguarded access out of bounds).
std::vector<RefTensor> evaluateReference(const Program& p, const std::vector<RefTensor>& inputs);

// The float64 meaning of every builtin but select (b is the second argument of pow, min, max):
// shared by the reference, constant folding and the test interpreters, so they cannot drift.
double applyBuiltin(Builtin fn, double a, double b = 0);

// A reduction's identity (0, 1, -inf, +inf) and one combining step, in float64, likewise shared.
double reductionIdentity(ReduceKind kind);
double reductionCombine(ReduceKind kind, double acc, double term);

// The error of `got` against `ref`, over n elements.
//   maxAbs: max |got - ref|
//   maxRel: max |got - ref| / max(|ref|, kRelScale * max|ref|, kRelErrorTiny): relative to each
//           element, except that elements far smaller than the tensor's largest are judged
//           against a millionth of it (gelu(x) near 0, say, where an f32 rounding of the
//           inputs alone gives any relative error).
// Equal infinities (same sign) and NaN against NaN count as no error; any other mismatch that
// involves an infinity or a NaN counts as an infinite error (both fields).
struct ErrorStats {
  double maxAbs = 0;
  double maxRel = 0;
};

// The floor of the relative error's denominator: the smallest normal double.
inline constexpr double kRelErrorTiny = std::numeric_limits<double>::min();
inline constexpr double kRelScale = 1e-6;

ErrorStats compareToReference(const double* ref, const double* got, size_t n);

}  // namespace texc
