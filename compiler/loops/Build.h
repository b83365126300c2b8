// Building loop-IR expressions and loops: one small function per node kind, for the rewrites that
// make new statements (lowering, tile, tile-online-softmax, the GPU nest rewrites) and for tests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops::build {

inline Expr constant(double x) {
  Expr e;
  e.constant = x;
  return e;
}

// A comparison or a logical operator gives a boolean value.
inline Expr binary(BinaryOp op, Expr a, Expr b) {
  Expr e;
  e.kind = ExprKind::Binary;
  e.binaryOp = op;
  e.isBool = op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge || op == BinaryOp::Eq ||
             op == BinaryOp::Ne || op == BinaryOp::And || op == BinaryOp::Or;
  e.args = {std::move(a), std::move(b)};
  return e;
}

inline Expr call(Builtin f, std::vector<Expr> args) {
  Expr e;
  e.kind = ExprKind::Call;
  e.builtin = f;
  e.args = std::move(args);
  return e;
}

inline Expr load(int buffer, std::vector<IndexExpr> index) {
  Expr e;
  e.kind = ExprKind::Load;
  e.buffer = buffer;
  e.index = std::move(index);
  return e;
}

inline Expr accRead(int acc) {
  Expr e;
  e.kind = ExprKind::AccRead;
  e.acc = acc;
  return e;
}

// buffer[index] = value.
inline Stmt store(int buffer, std::vector<IndexExpr> index, Expr value) {
  Store s;
  s.buffer = buffer;
  s.index = std::move(index);
  s.value = std::move(value);
  return s;
}

// acc = reduce(acc, value).
inline Stmt update(int acc, ReduceKind reduce, Expr value) {
  AccUpdate u;
  u.acc = acc;
  u.reduce = reduce;
  u.value = std::move(value);
  return u;
}

// `index` with variable `var` in front: [var, index..] (a slice's copy of a tensor's element).
inline std::vector<IndexExpr> prepended(int var, std::vector<IndexExpr> index) {
  index.insert(index.begin(), IndexExpr::makeVar(var));
  return index;
}

// The value of an index expression (a loop variable's, when it is one).
inline Expr indexValue(IndexExpr ix) {
  Expr e;
  e.kind = ExprKind::VarValue;
  e.index = {std::move(ix)};
  return e;
}

// `x / by` or `x % by` (kind FloorDiv or Mod).
inline IndexExpr divMod(IndexExpr x, IndexExpr::Kind kind, int64_t by) {
  IndexExpr e;
  e.kind = kind;
  e.constant = by;
  e.ops.push_back(std::move(x));
  return e;
}

// The variables of loops of extents `extents` (outermost first) that the one variable `flat`
// runs through, innermost fastest: `flat / stride % extent`, the outermost without the modulo
// and the innermost without the division (c, r, s = crs / 9, crs / 3 % 3, crs % 3).
inline std::vector<IndexExpr> unflatten(int flat, const std::vector<int64_t>& extents) {
  int64_t stride = 1;
  for (int64_t e : extents) stride *= e;
  std::vector<IndexExpr> out;
  for (size_t d = 0; d < extents.size(); ++d) {
    stride /= extents[d];
    IndexExpr at = IndexExpr::makeVar(flat);
    if (stride > 1) at = divMod(std::move(at), IndexExpr::Kind::FloorDiv, stride);
    if (d > 0) at = divMod(std::move(at), IndexExpr::Kind::Mod, extents[d]);
    out.push_back(std::move(at));
  }
  return out;
}

// `length * slice + var`: element `var` of slice `slice` of a loop cut into slices of `length`
// (split-K's reduction, split-keys' keys).
inline IndexExpr sliced(int64_t length, int slice, int var) {
  IndexExpr times;
  times.kind = IndexExpr::Kind::Mul;
  times.constant = length;
  times.ops.push_back(IndexExpr::makeVar(slice));
  IndexExpr sum;
  sum.kind = IndexExpr::Kind::Add;
  sum.ops.push_back(std::move(times));
  sum.ops.push_back(IndexExpr::makeVar(var));
  return sum;
}

// `for var < extent`, with an empty body and no marks.
inline Loop loop(int var, int64_t extent) {
  Loop l;
  l.var = var;
  l.extent = extent;
  return l;
}

// `body` inside one loop per (variable, extent) of `order`, outermost first; the outermost loop
// is marked parallel when `parallel` is set. Returns a block holding the outermost loop.
inline Block loopNest(const std::vector<std::pair<int, int64_t>>& order, Block body, bool parallel) {
  for (size_t d = order.size(); d-- > 0;) {
    Loop l = loop(order[d].first, order[d].second);
    l.parallel = parallel && d == 0;
    l.body = std::move(body);
    body.clear();
    body.push_back(std::move(l));
  }
  return body;
}

// Puts kernel `k`'s body inside a new outermost loop `for var < extent`, which takes over the
// parallel mark (and the parallel extent) of the loop it wraps, if that had one.
inline void wrapInLoop(Kernel& k, int var, int64_t extent) {
  Loop outer = loop(var, extent);
  const bool parallel = !k.body.empty() && k.body[0].is<Loop>() && k.body[0].as<Loop>().parallel;
  if (parallel) k.body[0].as<Loop>().parallel = false;
  outer.parallel = parallel;
  k.parallelExtent = parallel ? extent : 0;
  outer.body = std::move(k.body);
  k.body.clear();
  k.body.push_back(std::move(outer));
}

}  // namespace texc::loops::build
