// simplify: algebraic identities that give bit-identical results in IEEE arithmetic.
//
//   x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0  ->  x      (x + 0 keeps -0 + 0 = +0: see below)
//   -(-x)                                     ->  x
//   x / c                                     ->  x * (1/c)   when c is a power of two
//   pow(x, 1) -> x,  pow(x, 2) -> x * x      (not when x holds a reduction: it would run twice)
//
// Not applied, because they change results for some inputs: x * 0 -> 0 (NaN, inf), x - x -> 0,
// x + 0 -> x when x may be -0 (the sum is +0): x + 0 is rewritten only for x + (-0), which is
// exact. Reassociation is left to reductions, where the spec allows it.
#include <cmath>

#include "compiler/passes/Pass.h"

namespace texc {

namespace {

bool isConst(const Value& v, double c) { return v.kind == ValueKind::Const && v.constant == c; }
bool isNegZero(const Value& v) { return v.kind == ValueKind::Const && v.constant == 0 && std::signbit(v.constant); }
// A power of two whose reciprocal is also a normal f32 (and f64) number: only then is
// x / c == x * (1/c) exactly in both compute types.
bool isPowerOfTwo(double c) {
  if (!(c != 0) || !std::isfinite(c)) return false;
  int exp;
  double m = std::frexp(std::fabs(c), &exp);
  return m == 0.5 && exp - 1 >= -126 && exp - 1 <= 126;
}

bool containsReduce(const Value& v) {
  bool found = false;
  forEachValue(v, [&](const Value& x) { found |= x.kind == ValueKind::Reduce; });
  return found;
}

bool simplify(Value& v) {
  bool changed = false;
  for (Value& a : v.args) changed |= simplify(a);
  auto replace = [&](Value x) {
    v = std::move(x);
    changed = true;
  };
  if (v.kind == ValueKind::Unary && v.unaryOp == UnaryOp::Neg && v.args[0].kind == ValueKind::Unary && v.args[0].unaryOp == UnaryOp::Neg) {
    Value x = v.args[0].args[0];
    replace(std::move(x));
  } else if (v.kind == ValueKind::Binary) {
    Value& a = v.args[0];
    Value& b = v.args[1];
    switch (v.binaryOp) {
      case BinaryOp::Mul:
        if (isConst(b, 1)) replace(Value(a));
        else if (isConst(a, 1)) replace(Value(b));
        break;
      case BinaryOp::Div:
        if (isConst(b, 1)) {
          replace(Value(a));
        } else if (b.kind == ValueKind::Const && isPowerOfTwo(b.constant)) {
          v.binaryOp = BinaryOp::Mul;
          b.constant = 1.0 / b.constant;
          changed = true;
        }
        break;
      case BinaryOp::Add:
        if (isNegZero(b)) replace(Value(a));
        else if (isNegZero(a)) replace(Value(b));
        break;
      case BinaryOp::Sub:
        if (b.kind == ValueKind::Const && b.constant == 0 && !std::signbit(b.constant)) replace(Value(a));
        break;
      default: break;
    }
  } else if (v.kind == ValueKind::Call && v.builtin == Builtin::Pow && v.args[1].kind == ValueKind::Const) {
    if (v.args[1].constant == 1) {
      replace(Value(v.args[0]));
    } else if (v.args[1].constant == 2 && !containsReduce(v.args[0])) {  // a copied reduction would repeat its id
      Value m;
      m.kind = ValueKind::Binary;
      m.binaryOp = BinaryOp::Mul;
      m.range = v.range;
      m.args = {v.args[0], v.args[0]};
      replace(std::move(m));
    }
  }
  return changed;
}

}  // namespace

bool runSimplify(CompileState& s) {
  bool changed = false;
  // An online-softmax node keeps its shape (w * 1 -> w would remove its product).
  for (Computation& c : s.graph->computations)
    if (c.online == OnlineForm::None) changed |= simplify(c.body);
  return changed;
}

}  // namespace texc
