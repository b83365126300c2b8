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

bool isTileOperandLoad(const LoopProgram& p, const Expr& e) {
  if (e.kind != ExprKind::Load) return false;
  const DType t = p.buffers[e.buffer].dtype;
  return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

std::optional<ReductionBody> matchReductionBody(const Block& body, bool allowGuard, bool allowFold) {
  if (body.size() < 3 || body.size() % 2 != 1) return std::nullopt;
  const Store* store = body.back().getIf<Store>();
  const AccUpdate* fold = allowFold ? body.back().getIf<AccUpdate>() : nullptr;
  if (!store && !fold) return std::nullopt;
  // The implicit-GEMM form: `acc = identity; for k { if padding { acc op= term } }; store`.
  if (allowGuard && body.size() == 3) {
    const auto* init = body[0].getIf<AccInit>();
    const auto* kLoop = body[1].getIf<Loop>();
    const Guard* guard = kLoop && kLoop->body.size() == 1 ? kLoop->body[0].getIf<Guard>() : nullptr;
    const AccUpdate* update = guard && guard->body.size() == 1 ? guard->body[0].getIf<AccUpdate>() : nullptr;
    if (init && update && update->acc == init->acc && update->reduce == init->reduce)
      return ReductionBody{kLoop, update, guard, {}, store, fold};
  }
  // The pair at body[at]: `acc = identity; for k { acc op= term }`, of reduction `reduce`.
  auto pairAt = [&](size_t at, ReduceKind reduce) -> const Loop* {
    const auto* init = body[at].getIf<AccInit>();
    const auto* kLoop = body[at + 1].getIf<Loop>();
    if (!init || init->reduce != reduce || !kLoop || kLoop->body.size() != 1) return nullptr;
    const auto* update = kLoop->body[0].getIf<AccUpdate>();
    return update && update->acc == init->acc && update->reduce == reduce ? kLoop : nullptr;
  };
  const auto* first = body[0].getIf<AccInit>();
  if (!first) return std::nullopt;
  ReductionBody r;
  r.kLoop = pairAt(0, first->reduce);
  if (!r.kLoop) return std::nullopt;
  r.update = &r.kLoop->body[0].as<AccUpdate>();
  for (size_t at = 2; at + 1 < body.size(); at += 2) {
    const Loop* again = pairAt(at, first->reduce);
    if (!again || again->extent != r.kLoop->extent) return std::nullopt;
    const AccUpdate& repeat = again->body[0].as<AccUpdate>();
    if (!equal(repeat.value, r.update->value, {{again->var, r.kLoop->var}})) return std::nullopt;
    r.copies.push_back(repeat.acc);
  }
  r.store = store;
  r.fold = fold;
  return r;
}

// Matches `for j { acc = 0; for k { acc += X * Y }; store }` under the loop `iLoop` (a sum of
// products of two f32, f16 or bf16 loads, with fusion's repeats read as the first accumulator).
bool matchContraction(const LoopProgram& p, Stmt& iLoop, Contraction& c) {
  std::vector<Loop*> nest = perfectNest(iLoop, 2);
  if (nest.size() != 2) return false;
  const Loop& jLoop = *nest[1];
  std::optional<ReductionBody> body = matchReductionBody(jLoop.body);
  if (!body || body->update->reduce != ReduceKind::Sum) return false;
  const Loop& kLoop = *body->kLoop;
  const AccUpdate& update = *body->update;
  Store epilogue = *body->store;
  for (int copy : body->copies) renameAcc(epilogue.value, copy, update.acc);
  const Expr& v = update.value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Mul) return false;
  if (!isTileOperandLoad(p, v.args[0]) || !isTileOperandLoad(p, v.args[1])) return false;
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
