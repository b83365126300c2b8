#include "compiler/loops/FuseRowPasses.h"

#include <algorithm>

namespace texc::loops {

namespace {

bool sameIndex(const IndexExpr& a, const IndexExpr& b, int renameFrom, int renameTo) {
  if (a.kind != b.kind || a.constant != b.constant || a.ops.size() != b.ops.size()) return false;
  if (a.kind == IndexExpr::Kind::Var) return (a.var == renameFrom ? renameTo : a.var) == b.var;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!sameIndex(a.ops[i], b.ops[i], renameFrom, renameTo)) return false;
  return true;
}

// Whether `a`, with loop variable `from` read as `to`, is the expression `b`.
bool sameExpr(const Expr& a, const Expr& b, int from, int to) {
  if (a.kind != b.kind || a.isBool != b.isBool || a.args.size() != b.args.size() || a.index.size() != b.index.size()) return false;
  switch (a.kind) {
    case ExprKind::Const:
      if (a.constant != b.constant && !(a.constant != a.constant && b.constant != b.constant)) return false;
      break;
    case ExprKind::VarValue:
      if (a.index.empty() && (a.var == from ? to : a.var) != b.var) return false;
      break;
    case ExprKind::Load:
      if (a.buffer != b.buffer) return false;
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
  for (size_t i = 0; i < a.index.size(); ++i)
    if (!sameIndex(a.index[i], b.index[i], from, to)) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameExpr(a.args[i], b.args[i], from, to)) return false;
  return true;
}

bool exprLoads(const Expr& e, int buffer) {
  if (e.kind == ExprKind::Load && e.buffer == buffer) return true;
  return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return exprLoads(a, buffer); });
}

bool stmtTouches(const Stmt& s, int buffer) {
  if (s.kind == StmtKind::Store && s.buffer == buffer) return true;
  if ((s.kind == StmtKind::Store || s.kind == StmtKind::AccUpdate) && exprLoads(s.value, buffer)) return true;
  return std::any_of(s.body.begin(), s.body.end(), [&](const Stmt& b) { return stmtTouches(b, buffer); });
}

// Replaces every occurrence of `term` in `e` by `replacement`; returns how many it replaced.
int replaceTerm(Expr& e, const Expr& term, const Expr& replacement) {
  if (sameExpr(term, e, -1, -1)) {
    e = replacement;
    return 1;
  }
  int n = 0;
  for (Expr& a : e.args) n += replaceTerm(a, term, replacement);
  return n;
}

// Tries to rewrite reduction loop `list[l]` with the store loop `list[m]` (l < m).
bool tryPair(const LoopProgram& p, const Kernel& k, std::vector<Stmt>& list, size_t l, size_t m) {
  Stmt& red = list[l];
  Stmt& row = list[m];
  if (red.kind != StmtKind::Loop || row.kind != StmtKind::Loop || red.extent != row.extent || red.parallel || row.parallel) return false;
  if (red.body.size() != 1 || red.body[0].kind != StmtKind::AccUpdate) return false;
  if (row.body.size() != 1 || row.body[0].kind != StmtKind::Store) return false;
  const Stmt& update = red.body[0];
  Stmt& store = row.body[0];
  const Buffer& out = p.buffers[store.buffer];
  if (out.dtype != k.computeType || store.value.isBool) return false;
  // The store's index: plain variables, the row's loop variable exactly once, the reduction's
  // variable nowhere (so it names one element per iteration, the same in both loops).
  int rowVarUses = 0;
  for (const IndexExpr& ix : store.index) {
    if (ix.kind != IndexExpr::Kind::Var) return false;
    rowVarUses += ix.var == row.var;
    if (ix.var == red.var) return false;
  }
  if (rowVarUses != 1) return false;
  if (exprLoads(update.value, store.buffer) || exprLoads(store.value, store.buffer)) return false;
  for (size_t s = l; s < m; ++s)
    if (stmtTouches(list[s], store.buffer)) return false;

  // The reduction's term, read with the row's variable, must appear in the stored value.
  Expr term = update.value;
  struct Renamer {
    int from, to;
    void index(IndexExpr& e) const {
      if (e.kind == IndexExpr::Kind::Var && e.var == from) e.var = to;
      for (IndexExpr& o : e.ops) index(o);
    }
    void expr(Expr& e) const {
      if (e.kind == ExprKind::VarValue && e.index.empty() && e.var == from) e.var = to;
      for (IndexExpr& ix : e.index) index(ix);
      for (Expr& a : e.args) expr(a);
    }
  };
  Renamer{red.var, row.var}.expr(term);
  if (term.kind == ExprKind::Load || term.kind == ExprKind::Const) return false;  // nothing to save
  Expr reload;
  reload.kind = ExprKind::Load;
  reload.buffer = store.buffer;
  reload.index = store.index;
  Expr finished = store.value;
  if (replaceTerm(finished, term, reload) == 0) return false;

  // First loop: store the term and reduce what was stored.
  Stmt first = store;
  Renamer toRed{row.var, red.var};
  for (IndexExpr& ix : first.index) toRed.index(ix);
  first.value = update.value;
  Stmt reduce = update;
  reduce.value = reload;
  for (IndexExpr& ix : reduce.value.index) toRed.index(ix);
  red.body = {std::move(first), std::move(reduce)};
  red.vectorize = true;
  // Second loop: finish each element from the stored term.
  store.value = std::move(finished);
  return true;
}

int rewriteList(const LoopProgram& p, const Kernel& k, std::vector<Stmt>& list) {
  int n = 0;
  for (Stmt& s : list) n += rewriteList(p, k, s.body);
  for (size_t m = 0; m < list.size(); ++m)
    for (size_t l = m; l-- > 0;)
      if (tryPair(p, k, list, l, m)) {
        ++n;
        break;
      }
  return n;
}

}  // namespace

int fuseRowPasses(LoopProgram& p) {
  int n = 0;
  for (Kernel& k : p.kernels) n += rewriteList(p, k, k.body);
  return n;
}

}  // namespace texc::loops
