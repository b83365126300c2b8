#include "compiler/loops/Contraction.h"

namespace texc::loops {

bool loadUses(const Expr& load, int var) {
  for (const IndexExpr& ix : load.index)
    if (usesVar(ix, var)) return true;
  return false;
}

bool isF32Load(const LoopProgram& p, const Expr& e) {
  return e.kind == ExprKind::Load && p.buffers[e.buffer].dtype == DType::F32;
}

namespace {

bool sameExpr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.isBool != b.isBool || a.constant != b.constant || a.var != b.var || a.buffer != b.buffer ||
      a.acc != b.acc || a.unaryOp != b.unaryOp || a.binaryOp != b.binaryOp || a.builtin != b.builtin ||
      a.index.size() != b.index.size() || a.args.size() != b.args.size())
    return false;
  for (size_t i = 0; i < a.index.size(); ++i)
    if (!sameIndex(a.index[i], b.index[i])) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!sameExpr(a.args[i], b.args[i])) return false;
  return true;
}

void renameVar(IndexExpr& ix, int from, int to) {
  if (ix.kind == IndexExpr::Kind::Var && ix.var == from) ix.var = to;
  for (IndexExpr& o : ix.ops) renameVar(o, from, to);
}

void renameVar(Expr& e, int from, int to) {
  if (e.kind == ExprKind::VarValue && e.var == from) e.var = to;
  for (IndexExpr& ix : e.index) renameVar(ix, from, to);
  for (Expr& a : e.args) renameVar(a, from, to);
}

void renameAcc(Expr& e, int from, int to) {
  if (e.kind == ExprKind::AccRead && e.acc == from) e.acc = to;
  for (Expr& a : e.args) renameAcc(a, from, to);
}

// One `acc = 0; for k { acc += X * Y }` pair of a j loop's body, starting at body[at].
const Stmt* sumOfProducts(const std::vector<Stmt>& body, size_t at) {
  if (at + 1 >= body.size()) return nullptr;
  const Stmt& init = body[at];
  const Stmt& kLoop = body[at + 1];
  if (init.kind != StmtKind::AccInit || init.reduce != ReduceKind::Sum) return nullptr;
  if (kLoop.kind != StmtKind::Loop || kLoop.body.size() != 1) return nullptr;
  const Stmt& update = kLoop.body[0];
  if (update.kind != StmtKind::AccUpdate || update.acc != init.acc || update.reduce != ReduceKind::Sum) return nullptr;
  return &kLoop;
}

}  // namespace

// Matches `for j { acc = 0; for k { acc += X * Y }; store }` under the loop `iLoop`. Fusion may
// repeat the same reduction for several uses (matmul + bias + gelu reads it twice): repeats of
// the first pair, over the same k and the same product, are read as the first accumulator.
bool matchContraction(const LoopProgram& p, Stmt& iLoop, Contraction& c) {
  if (iLoop.kind != StmtKind::Loop || iLoop.body.size() != 1 || iLoop.body[0].kind != StmtKind::Loop) return false;
  Stmt& jLoop = iLoop.body[0];
  if (jLoop.body.size() < 3 || jLoop.body.size() % 2 != 1) return false;
  const Stmt* first = sumOfProducts(jLoop.body, 0);
  const Stmt& store = jLoop.body.back();
  if (!first || store.kind != StmtKind::Store) return false;
  const Stmt& kLoop = *first;
  const Stmt& update = kLoop.body[0];
  Stmt epilogue = store;
  for (size_t at = 2; at + 1 < jLoop.body.size(); at += 2) {
    const Stmt* again = sumOfProducts(jLoop.body, at);
    if (!again || again->extent != kLoop.extent) return false;
    Expr term = again->body[0].value;
    renameVar(term, again->var, kLoop.var);  // the same reduction over its own variable
    if (!sameExpr(term, update.value)) return false;
    renameAcc(epilogue.value, again->body[0].acc, update.acc);
  }
  const Expr& v = update.value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Mul) return false;
  if (!isF32Load(p, v.args[0]) || !isF32Load(p, v.args[1])) return false;
  int i = iLoop.var, j = jLoop.var, k = kLoop.var;
  // The column operand reads j and not i; it is contiguous in j when j is exactly its last index
  // and appears nowhere else (B[k, j]). Any other use of j (B^T: K[j, d]) is read through the
  // pack, which gathers it into contiguous panels.
  auto isColumn = [&](const Expr& e) { return loadUses(e, j) && !loadUses(e, i); };
  auto contiguousInJ = [&](const Expr& e) {
    const IndexExpr& last = e.index.back();
    if (last.kind != IndexExpr::Kind::Var || last.var != j) return false;
    for (size_t d = 0; d + 1 < e.index.size(); ++d)
      if (usesVar(e.index[d], j)) return false;
    return true;
  };
  auto isRow = [&](const Expr& e) { return !loadUses(e, j); };
  if (isRow(v.args[0]) && isColumn(v.args[1])) {
    c.rowOperand = v.args[0];
    c.colOperand = v.args[1];
  } else if (isRow(v.args[1]) && isColumn(v.args[0])) {
    c.rowOperand = v.args[1];
    c.colOperand = v.args[0];
  } else {
    return false;
  }
  c.colContiguous = contiguousInJ(c.colOperand);
  c.iLoop = &iLoop;
  c.i = i;
  c.j = j;
  c.k = k;
  c.M = iLoop.extent;
  c.N = jLoop.extent;
  c.K = kLoop.extent;
  c.acc = update.acc;
  c.store = std::move(epilogue);
  return true;
}

}  // namespace texc::loops
