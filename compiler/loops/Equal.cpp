#include "compiler/loops/Equal.h"

#include <bit>

namespace texc::loops {

namespace {

int renamed(int v, const VarRenaming& r) {
  auto it = r.find(v);
  return it == r.end() ? v : it->second;
}

bool sameBits(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

bool equalConds(const std::vector<GuardCond>& a, const std::vector<GuardCond>& b, const VarRenaming& r) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].extent != b[i].extent || !equal(a[i].index, b[i].index, r)) return false;
  return true;
}

bool equalWindow(const KWindow& a, const KWindow& b, const VarRenaming& r) {
  return renamed(a.var, r) == b.var && a.extent == b.extent && a.block == b.block && equal(a.base, b.base, r);
}

bool equalNode(const Loop& a, const Loop& b, const VarRenaming& r) {
  return renamed(a.var, r) == b.var && a.extent == b.extent && a.parallel == b.parallel &&
         a.vectorize == b.vectorize && a.scalar == b.scalar && a.interleave == b.interleave && a.pairs == b.pairs && a.sumLanes == b.sumLanes && a.phases == b.phases && a.phaseBlock == b.phaseBlock && a.gpu == b.gpu && a.prefetch == b.prefetch && equal(a.body, b.body, r);
}
bool equalNode(const Store& a, const Store& b, const VarRenaming& r) {
  return a.buffer == b.buffer && a.streaming == b.streaming && equal(a.index, b.index, r) && equal(a.value, b.value, r);
}
bool equalNode(const AccInit& a, const AccInit& b, const VarRenaming&) {
  return a.acc == b.acc && a.reduce == b.reduce;
}
bool equalNode(const AccUpdate& a, const AccUpdate& b, const VarRenaming& r) {
  return a.acc == b.acc && a.reduce == b.reduce && equal(a.value, b.value, r);
}
bool equalNode(const AccSet& a, const AccSet& b, const VarRenaming& r) {
  return a.acc == b.acc && equal(a.value, b.value, r);
}
bool equalNode(const Guard& a, const Guard& b, const VarRenaming& r) {
  return equalConds(a.conds, b.conds, r) && equal(a.body, b.body, r);
}
bool equalNode(const Pack& a, const Pack& b, const VarRenaming& r) {
  return a.side == b.side && renamed(a.var, r) == b.var && equal(a.base, b.base, r) && a.count == b.count &&
         a.panel == b.panel && a.extent == b.extent && a.scratch == b.scratch && equalWindow(a.k, b.k, r) &&
         equal(a.value, b.value, r) && equalConds(a.padding, b.padding, r) && a.bf16Pairs == b.bf16Pairs &&
         a.amx == b.amx;
}
bool equalNode(const Tile& a, const Tile& b, const VarRenaming& r) {
  return renamed(a.rowVar, r) == b.rowVar && renamed(a.colVar, r) == b.colVar && equal(a.rowBase, b.rowBase, r) &&
         equal(a.colBase, b.colBase, r) && a.rows == b.rows && a.cols == b.cols && a.rowExtent == b.rowExtent &&
         a.colExtent == b.colExtent && equalWindow(a.k, b.k, r) && a.acc == b.acc && equal(a.value, b.value, r) &&
         a.rowScratch == b.rowScratch && a.rowPackWhole == b.rowPackWhole && equal(a.blockRow, b.blockRow, r) &&
         a.colScratch == b.colScratch && equal(a.blockCol, b.blockCol, r) && equalConds(a.colPadding, b.colPadding, r) &&
         a.perWindow == b.perWindow &&
         a.kUnroll == b.kUnroll && a.edgeRows == b.edgeRows && a.sumScratch == b.sumScratch && equal(a.sumRow, b.sumRow, r) &&
         equal(a.sumCol, b.sumCol, r) && a.sumStride == b.sumStride && a.bf16Pairs == b.bf16Pairs && a.amx == b.amx &&
         equal(a.epilogue, b.epilogue, r);
}

}  // namespace

bool equal(const Expr& a, const Expr& b, const VarRenaming& r) {
  if (a.kind != b.kind || a.isBool != b.isBool || a.args.size() != b.args.size()) return false;
  switch (a.kind) {
    case ExprKind::Const:
      if (!sameBits(a.constant, b.constant)) return false;
      break;
    case ExprKind::VarValue:
      // A variable's value, or (after substitution) the value of index[0].
      if (a.index.empty() != b.index.empty()) return false;
      if (a.index.empty() ? renamed(a.var, r) != b.var : !equal(a.index, b.index, r)) return false;
      break;
    case ExprKind::Load:
      if (a.buffer != b.buffer || !equal(a.index, b.index, r)) return false;
      break;
    case ExprKind::AccRead:
      if (a.acc != b.acc) return false;
      break;
    case ExprKind::Unary:
      if (a.unaryOp != b.unaryOp) return false;
      break;
    case ExprKind::Binary:
      if (a.binaryOp != b.binaryOp) return false;
      break;
    case ExprKind::Call:
      if (a.builtin != b.builtin) return false;
      break;
  }
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!equal(a.args[i], b.args[i], r)) return false;
  return true;
}

bool equal(const Stmt& a, const Stmt& b, const VarRenaming& r) {
  if (a.kind() != b.kind()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        return equalNode(x, b.as<T>(), r);
      },
      a.node);
}

bool equal(const Block& a, const Block& b, const VarRenaming& r) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i], r)) return false;
  return true;
}

}  // namespace texc::loops
