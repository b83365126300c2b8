// Index expressions, the language's `T[...]` indices as every IR carries them (the analysed
// program, the dataflow graph and the loop IR): affine in index variables, plus floor division
// and modulo by positive constants. Their algebra (equality, affine form) is IndexAlgebra.h.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/SourceRange.h"

namespace texc {

// A closed integer interval [lo, hi].
struct Interval {
  int64_t lo = 0;
  int64_t hi = 0;
};

// An index expression inside `T[...]`: affine in index variables, plus floor division and
// modulo by positive constants. Mul, FloorDiv and Mod have one operand and a constant.
struct IndexExpr {
  enum class Kind : uint8_t { Const, Var, Add, Sub, Mul, FloorDiv, Mod };
  Kind kind = Kind::Const;
  int64_t constant = 0;  // Const value, or the constant factor/divisor
  int var = -1;          // Var: index into Computation::vars
  std::vector<IndexExpr> ops;
  SourceRange range;

  static IndexExpr makeConst(int64_t c) { IndexExpr e; e.constant = c; return e; }
  static IndexExpr makeVar(int v) { IndexExpr e; e.kind = Kind::Var; e.var = v; return e; }
  // An operation node: Add and Sub of `ops`, or Mul, FloorDiv, Mod of ops[0] by `constant`.
  static IndexExpr makeNode(Kind k, int64_t constant, std::vector<IndexExpr> ops) {
    IndexExpr e;
    e.kind = k;
    e.constant = constant;
    e.ops = std::move(ops);
    return e;
  }
};

// Floor division and modulo as the language defines them (rounding toward -infinity).
inline int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
inline int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }

// Evaluates `e` with index variable values `vals`.
int64_t evalIndex(const IndexExpr& e, const std::vector<int64_t>& vals);

}  // namespace texc
