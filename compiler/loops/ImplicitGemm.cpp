#include "compiler/loops/ImplicitGemm.h"

#include "compiler/loops/Build.h"
#include "compiler/loops/Equal.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// Whether `ix` reads `var` with coefficient 1, outside any floor division or modulo.
bool unitIn(const IndexExpr& ix, int var) {
  AffineForm f = affineForm(ix);
  return !f.overflow && !f.varInAtom(var) && f.coeffOf(var) == 1;
}

// Whether `index` (of a buffer whose last dimension is `width`) ends in (.., y + a, x + b), with
// y and x nowhere else: then its address is linear in y * width + x, and the loops y and x can
// become one column loop (an image's pixels in order, no tail per image row).
bool endsInRowAndColumn(const std::vector<IndexExpr>& index, const std::vector<int64_t>& shape, int y, int x, int64_t width) {
  const size_t n = index.size();
  if (n < 2 || shape.back() != width) return false;
  if (!unitIn(index[n - 1], x) || usesVar(index[n - 1], y) || !unitIn(index[n - 2], y) || usesVar(index[n - 2], x)) return false;
  for (size_t d = 0; d + 2 < n; ++d)
    if (usesVar(index[d], x) || usesVar(index[d], y)) return false;
  return true;
}

}  // namespace

void mergeRowIntoColumns(const LoopProgram& p, Kernel& k, ImplicitGemm& g, PixelMerge rule) {
  Contraction& c = g.c;
  if (g.chain.size() < 3) return;
  const Loop* yLoop = g.chain[g.chain.size() - 2];
  const int y = yLoop->var;
  if (y == c.i) return;
  const Buffer& in = p.buffers[c.colOperand.buffer];
  Store& store = c.store.as<Store>();
  const Buffer& out = p.buffers[store.buffer];
  // The input stays linear in the pixel when it ends in (y + a, x + b) over the output's width.
  // An input read at a stride (2 * x + s - 1) is gathered by its pack with or without the
  // merge, so only the store decides; an input contiguous in x but wider than the output (a
  // valid convolution) keeps x, which it reads with vector loads.
  const std::vector<IndexExpr>& ix = c.colOperand.index;
  bool contiguousInX = unitIn(ix.back(), c.j);
  for (size_t d = 0; d + 1 < ix.size(); ++d) contiguousInX = contiguousInX && !usesVar(ix[d], c.j);
  if (rule == PixelMerge::KeepContiguousInput && contiguousInX && !endsInRowAndColumn(ix, in.shape, y, c.j, c.N)) return;
  if (!endsInRowAndColumn(store.index, out.shape, y, c.j, c.N)) return;
  const std::vector<IndexExpr>& st = store.index;
  if (st.back().kind != IndexExpr::Kind::Var || st[st.size() - 2].kind != IndexExpr::Kind::Var) return;
  k.varNames.push_back(k.varNames[y] + k.varNames[c.j]);
  const int pixel = static_cast<int>(k.varNames.size()) - 1;
  const std::vector<IndexExpr> rowColumn = build::unflatten(pixel, {yLoop->extent, c.N});
  const IndexExpr& row = rowColumn[0];
  const IndexExpr& column = rowColumn[1];
  substitute(c.colOperand, y, row);
  substitute(c.colOperand, c.j, column);
  substitute(c.store, y, row);
  substitute(c.store, c.j, column);
  for (GuardCond& cond : g.padding) {
    substitute(cond.index, y, row);
    substitute(cond.index, c.j, column);
  }
  c.j = pixel;
  c.N *= yLoop->extent;
  g.chain.erase(g.chain.end() - 2, g.chain.end());  // the pixel loop replaces both
}

bool matchImplicitGemm(const LoopProgram& p, Kernel& k, ImplicitGemm& g) {
  if (k.body.size() == 1) g.chain = perfectNest(k.body[0]);
  const Block& level = g.chain.empty() ? k.body : g.chain.back()->body;
  if (g.chain.size() < 2 || level.size() != 3) return false;
  const auto* init = level[0].getIf<AccInit>();
  const auto* store = level[2].getIf<Store>();
  if (!init || init->reduce != ReduceKind::Sum || !store) return false;
  // The reduction loops: the perfect nest at level[1], down to the last loop whose body is one
  // statement (the update, or the guard around it).
  std::vector<const Loop*> loops = perfectNest(level[1]);
  if (!loops.empty() && loops.back()->body.size() != 1) loops.pop_back();
  const Stmt* inner = loops.empty() ? &level[1] : &loops.back()->body[0];
  const Guard* guard = inner->getIf<Guard>();
  if (guard && guard->body.size() != 1) guard = nullptr;
  if (guard) inner = &guard->body[0];
  if (loops.empty()) return false;
  const auto* update = inner->getIf<AccUpdate>();
  if (!update || update->acc != init->acc || update->reduce != ReduceKind::Sum) return false;
  const Expr& v = update->value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Mul || !isTileOperandLoad(p, v.args[0]) ||
      !isTileOperandLoad(p, v.args[1]))
    return false;

  // The flattened reduction variable, named after the loops it replaces.
  std::string name;
  int64_t K = 1;
  for (const Loop* l : loops) {
    name += k.varNames[l->var];
    K *= l->extent;
  }
  k.varNames.push_back(name);
  const int flat = static_cast<int>(k.varNames.size()) - 1;
  Expr ops[2] = {v.args[0], v.args[1]};
  if (guard) g.padding = guard->conds;
  std::vector<int64_t> extents;
  for (const Loop* l : loops) extents.push_back(l->extent);
  const std::vector<IndexExpr> at = build::unflatten(flat, extents);
  for (size_t d = 0; d < loops.size(); ++d) {
    for (Expr& op : ops) substitute(op, loops[d]->var, at[d]);
    for (GuardCond& cond : g.padding) substitute(cond.index, loops[d]->var, at[d]);
  }

  // Rows: the one output loop the row operand reads (it reads no other); columns: the innermost
  // loop, which the column operand reads (at any stride); the others are batch loops.
  const int j = g.chain.back()->var;
  auto rowVarOf = [&](const Expr& e) {
    int found = -1;
    for (const Loop* l : g.chain)
      if (loadUses(e, l->var)) found = found < 0 ? l->var : -2;
    return found;
  };
  // The column operand is always packed, so it may read j at any stride (a strided
  // convolution's 2 * x + s - 1): the pack gathers what is not contiguous.
  auto isColumn = [&](const Expr& e, int i) { return loadUses(e, j) && !loadUses(e, i); };
  int rowOp = -1;
  for (int a = 0; a < 2 && rowOp < 0; ++a) {
    int i = rowVarOf(ops[a]);
    if (i >= 0 && i != j && isColumn(ops[1 - a], i)) rowOp = a;
  }
  if (rowOp < 0) return false;
  const int i = rowVarOf(ops[rowOp]);
  // The padding is applied while packing the column operand (lane by lane): it may not depend
  // on the row. The row operand is packed without a check, so no condition may guard one of its
  // indices (lowering guards exactly the accesses that may fall outside).
  for (const GuardCond& cond : g.padding) {
    if (usesVar(cond.index, i)) return false;
    for (const IndexExpr& ix : ops[rowOp].index)
      if (equal(ix, cond.index)) return false;
  }
  // Every output loop indexes the store directly: its iterations are independent, so the batch
  // loops may move.
  for (const Loop* l : g.chain) {
    bool direct = false;
    for (const IndexExpr& ix : store->index) direct = direct || (ix.kind == IndexExpr::Kind::Var && ix.var == l->var);
    if (!direct || loadsFrom(store->value, store->buffer)) return false;
  }
  // Padding is evaluated in 32-bit lanes.
  if (p.buffers[ops[1 - rowOp].buffer].numElements() >= (int64_t{1} << 31)) return false;
  for (const Loop* l : g.chain)
    if (l->var == i) g.c.M = l->extent;
  g.c.i = i;
  g.c.j = j;
  g.c.k = flat;
  g.c.N = g.chain.back()->extent;
  g.c.K = K;
  g.c.acc = init->acc;
  g.c.rowOperand = ops[rowOp];
  g.c.colOperand = ops[1 - rowOp];
  g.c.store = *store;
  return true;
}

}  // namespace texc::loops
