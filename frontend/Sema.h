// Semantic analysis (spec sections 3-5): AST -> Program.
//
// Evaluates `let`s (with -D overrides), resolves names, infers dtypes and shapes, desugars the
// whole-tensor form into index form with numpy broadcasting, gives every index variable its range
// (explicit bound, or inferred from the accesses that use it alone as an index), checks that index
// expressions are affine, and runs the interval analysis on every access: proven in bounds,
// guarded (inside a reduction: the term is skipped when the access falls outside) or an error.
// Computed tensors that no output depends on are reported and removed.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Program.h"

namespace texc {

// The most dimensions a tensor may have (inputs and index-form left-hand sides; a whole-tensor
// statement has the rank of its widest operand). Whole-tensor statements index every bare tensor
// with one variable per dimension, so an unbounded rank would let a small program blow up.
inline constexpr size_t kMaxRank = 64;

// -D NAME=VALUE overrides, by name.
using LetOverrides = std::map<std::string, int64_t>;

// Checks that every override names a `let` whose size expression is a literal. Returns an error
// message for the first bad one (a usage error: exit 2), or nothing.
std::optional<std::string> checkOverrides(const Module& module, const LetOverrides& overrides);

// Analyses `module`. Returns the Program when there were no errors.
std::optional<Program> analyze(const Module& module, DiagnosticEngine& diags, const LetOverrides& overrides = {});

// The analysed program in a stable text form (`texc compile --emit sema`): lets, tensors with
// dtypes and shapes, and per computation its index variables with their ranges and where each
// came from, and every access with its index ranges and guard.
std::string printProgram(const Program& program);

// One value expression or index expression of computation `c`, in `.tex` syntax with the fewest
// parentheses (used by the dataflow IR printer too, which marks computed values as %name).
std::string printValue(const Program& program, const Computation& c, const Value& value, bool markComputed = false);
std::string printIndex(const Program& program, const Computation& c, const IndexExpr& index);

}  // namespace texc
