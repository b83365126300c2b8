// A per-element bound on the rounding error that compiled code may legitimately make: what
// `texc run --check`, `compare`, `tune` and the tests hold results to. See docs/testing.md ("The
// tolerance rule") for the model and its constants.
//
// The evaluator walks every computation of an analysed Program exactly as the float64 reference
// interpreter does (same loops, same skipped terms), carrying for every subexpression its value
// and a first-order bound on the absolute error of the same subexpression evaluated in the
// computation's dtype. Rounding errors enter where an operation rounds; errors of operands are
// propagated by the operation's derivative; a reduction of n terms adds (n - 1) * u * sum|terms|
// (prod: (n - 1) * u * |product|), a bound that holds for any order of the terms, so reordered or
// vectorised reductions stay within it.
//
// Where a small error could change a discrete decision (a comparison between inexact values that
// are nearly equal, floor/ceil of an inexact value near an integer, a function evaluated next to
// its singularity), the bound is +infinity: the element is "uncertain" and is not compared. The
// tests count such elements and refuse programs where many are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/reference/Reference.h"
#include "core/MathMode.h"
#include "frontend/Program.h"

namespace texc {

// Unit roundoff (half an ulp of 1) of a compute dtype: 2^-24 for f32 (f16 and bf16 compute in
// f32), 2^-53 for f64.
double unitRoundoff(DType computeDtype);

// Relative error bound, in units of the unit roundoff, charged for one call of a transcendental
// function (exp log tanh sigmoid erf pow), and the absolute one for sin and cos. The measured
// maxima of texc's inline approximations are below 4 units (tests/unit/llvm); libm is below 2.
inline constexpr double kTranscendentalUnits = 8;
// --math=fast (f32 only; f64 keeps the precise forms): each function's charge, about twice its
// measured maximum relative error (docs/vector-math.md, "Fast mode") in units of 2^-24.
struct FastMathUnits {
  double exp, log, tanh, sigmoid, erf;
};
// Measured over every float (relative): exp 3.90e-6, log 1.38e-6, tanh 2.16e-6, sigmoid 3.93e-6,
// erf 4.07e-6, i.e. 65, 23, 36, 66 and 68 units.
inline constexpr FastMathUnits kFastUnits = {132, 48, 74, 132, 138};
// --math=fast: a sum of products of two f32 tensor elements may run on tensor cores with both
// operands rounded to TF32 (10 bits of mantissa, to nearest: at most 2^-11 relative each; CUDA,
// docs/cuda.md): each product then carries this relative error, charged on the sum of |terms|.
inline constexpr double kTf32Relative = 0x1p-10 + 0x1p-22;
// The charge for one call of `fn` (a transcendental builtin) in `mode` and compute dtype.
double transcendentalUnits(Builtin fn, MathMode mode, DType compute);
// The same for sqrt (correctly rounded) and rsqrt (may be 1 / sqrt: two roundings).
inline constexpr double kSqrtUnits = 2;
inline constexpr double kRsqrtUnits = 4;
// How far (in multiples of the error bound) two values or a value and an integer must be apart
// for a comparison or floor/ceil to be decided for sure.
inline constexpr double kDecisionMargin = 3;

struct BoundResult {
  // Indexed by tensor id like evaluateReference's result: every tensor's values (inputs copied)
  // and error bounds (0 for inputs; +inf for uncertain elements).
  std::vector<RefTensor> values;
  std::vector<std::vector<double>> bounds;
};

// Evaluates `p` on `inputs` (one per p.inputs entry, as for evaluateReference). Throws
// std::invalid_argument / std::logic_error like evaluateReference.
// `math` is the mode the compiled code uses (--math): fast forms are charged more.
BoundResult evaluateBounds(const Program& p, const std::vector<RefTensor>& inputs, MathMode math = MathMode::Precise);

}  // namespace texc
