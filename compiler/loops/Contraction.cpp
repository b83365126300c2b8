#include "compiler/loops/Contraction.h"

#include "compiler/loops/Equal.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"

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

// One `acc = 0; for k { acc += X * Y }` pair of a j loop's body, starting at body[at]: its k loop.
const Loop* sumOfProducts(const Block& body, size_t at) {
  if (at + 1 >= body.size()) return nullptr;
  const auto* init = body[at].getIf<AccInit>();
  const auto* kLoop = body[at + 1].getIf<Loop>();
  if (!init || init->reduce != ReduceKind::Sum) return nullptr;
  if (!kLoop || kLoop->body.size() != 1) return nullptr;
  const auto* update = kLoop->body[0].getIf<AccUpdate>();
  if (!update || update->acc != init->acc || update->reduce != ReduceKind::Sum) return nullptr;
  return kLoop;
}

}  // namespace

// Matches `for j { acc = 0; for k { acc += X * Y }; store }` under the loop `iLoop`. Fusion may
// repeat the same reduction for several uses (matmul + bias + gelu reads it twice): repeats of
// the first pair, over the same k and the same product, are read as the first accumulator.
bool matchContraction(const LoopProgram& p, Stmt& iLoop, Contraction& c) {
  std::vector<Loop*> nest = perfectNest(iLoop, 2);
  if (nest.size() != 2) return false;
  const Loop& jLoop = *nest[1];
  if (jLoop.body.size() < 3 || jLoop.body.size() % 2 != 1) return false;
  const Loop* first = sumOfProducts(jLoop.body, 0);
  const auto* store = jLoop.body.back().getIf<Store>();
  if (!first || !store) return false;
  const Loop& kLoop = *first;
  const AccUpdate& update = kLoop.body[0].as<AccUpdate>();
  Store epilogue = *store;
  for (size_t at = 2; at + 1 < jLoop.body.size(); at += 2) {
    const Loop* again = sumOfProducts(jLoop.body, at);
    if (!again || again->extent != kLoop.extent) return false;
    const AccUpdate& repeat = again->body[0].as<AccUpdate>();
    // The same reduction over its own variable.
    if (!equal(repeat.value, update.value, {{again->var, kLoop.var}})) return false;
    renameAcc(epilogue.value, repeat.acc, update.acc);
  }
  const Expr& v = update.value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Mul) return false;
  if (!isF32Load(p, v.args[0]) || !isF32Load(p, v.args[1])) return false;
  int i = nest[0]->var, j = jLoop.var, k = kLoop.var;
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
  c.M = nest[0]->extent;
  c.N = jLoop.extent;
  c.K = kLoop.extent;
  c.acc = update.acc;
  c.store = std::move(epilogue);
  return true;
}

}  // namespace texc::loops
