// constant-fold: operators whose operands are all constants are evaluated at compile time (in
// float64), and a node whose whole body is a constant its dtype stores exactly is forwarded into
// the reads of it that need no guard.
#include <cmath>

#include "compiler/passes/Pass.h"
#include "compiler/reference/Reference.h"

namespace texc {

namespace {

bool isConst(const Value& v) { return v.kind == ValueKind::Const; }

// Folds `v` in place; returns whether anything changed.
bool fold(Value& v) {
  bool changed = false;
  for (Value& a : v.args) changed |= fold(a);
  if (v.isBool) return changed;
  for (const Value& a : v.args)
    if (!isConst(a) && !(v.kind == ValueKind::Call && v.builtin == Builtin::Select)) return changed;
  double r;
  switch (v.kind) {
    case ValueKind::Unary: r = -v.args[0].constant; break;
    case ValueKind::Binary:
      switch (v.binaryOp) {
        case BinaryOp::Add: r = v.args[0].constant + v.args[1].constant; break;
        case BinaryOp::Sub: r = v.args[0].constant - v.args[1].constant; break;
        case BinaryOp::Mul: r = v.args[0].constant * v.args[1].constant; break;
        case BinaryOp::Div: r = v.args[0].constant / v.args[1].constant; break;
        default: return changed;
      }
      break;
    case ValueKind::Call: {
      if (isInternal(v.builtin)) return changed;  // a fused f16/bf16 rounding is not a float64 function
      if (v.builtin == Builtin::Select) {
        // select(c, a, b) with a constant comparison picks its branch.
        const Value& c = v.args[0];
        if (c.kind != ValueKind::Binary || !isComparison(c.binaryOp) || !isConst(c.args[0]) || !isConst(c.args[1])) return changed;
        double x = c.args[0].constant, y = c.args[1].constant;
        bool t = c.binaryOp == BinaryOp::Lt ? x < y : c.binaryOp == BinaryOp::Le ? x <= y : c.binaryOp == BinaryOp::Gt ? x > y
               : c.binaryOp == BinaryOp::Ge ? x >= y : c.binaryOp == BinaryOp::Eq ? x == y : x != y;
        // The branch dropped must hold no guarded read: its out-of-bounds terms are skipped even
        // though select would not use its value.
        bool guarded = false;
        forEachValue(t ? v.args[2] : v.args[1], [&](const Value& x) { guarded |= x.kind == ValueKind::Access && x.check == AccessCheck::Guarded; });
        if (guarded) return changed;
        Value pick = t ? v.args[1] : v.args[2];
        v = std::move(pick);
        return true;
      }
      r = applyBuiltin(v.builtin, v.args[0].constant, v.args.size() > 1 ? v.args[1].constant : 0);
      break;
    }
    default: return changed;
  }
  SourceRange range = v.range;
  v = Value{};
  v.kind = ValueKind::Const;
  v.constant = r;
  v.range = range;
  return true;
}

}  // namespace

bool runConstantFold(CompileState& s) {
  Graph& g = *s.graph;
  bool changed = false;
  // An online-softmax node keeps its shape (folding max(j: 3) would remove its max).
  for (Computation& c : g.computations)
    if (c.online == OnlineForm::None) changed |= fold(c.body);
  // Forward constant nodes into unguarded reads (a guarded read must still skip its term).
  for (Computation& c : g.computations) {
    forEachValueMut(c.body, [&](Value& v) {
      if (v.kind != ValueKind::Access || v.check != AccessCheck::InBounds) return;
      const TensorInfo& t = g.tensors[v.tensor];
      if (t.isInput || t.computation < 0) return;
      const Value& src = g.computations[t.computation].body;
      if (src.kind != ValueKind::Const) return;
      double value = src.constant;
      // Forward only values the tensor stores exactly, so no rounding step disappears.
      if (t.dtype == DType::F16 || t.dtype == DType::BF16) return;
      if (t.dtype == DType::F32 && static_cast<double>(static_cast<float>(value)) != value && !std::isnan(value)) return;
      SourceRange range = v.range;
      v = Value{};
      v.kind = ValueKind::Const;
      v.constant = value;
      v.range = range;
      changed = true;
    });
  }
  return changed;
}

}  // namespace texc
