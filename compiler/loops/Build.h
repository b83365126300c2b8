// Building loop-IR expressions: one small function per node kind, for the rewrites that make
// new statements (lowering, tile-online-softmax) and for tests.
#pragma once

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

// The value of an index expression (a loop variable's, when it is one).
inline Expr indexValue(IndexExpr ix) {
  Expr e;
  e.kind = ExprKind::VarValue;
  e.index = {std::move(ix)};
  return e;
}

}  // namespace texc::loops::build
