#include "compiler/loops/FuseRowPasses.h"

#include "compiler/loops/Equal.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// Whether `s`, or a statement nested in it, stores to `buffer` or loads from it.
bool touches(const Stmt& s, int buffer) {
  auto here = [&](const Stmt& t) {
    const auto* store = t.getIf<Store>();
    const Expr* value = valueOf(t);
    return (store && store->buffer == buffer) || (value && loadsFrom(*value, buffer));
  };
  const Block* nested = nestedBlock(s);
  return here(s) || (nested && anyStmt(*nested, here));
}

// Tries to rewrite reduction loop `list[l]` with the store loop `list[m]` (l < m).
bool tryPair(const LoopProgram& p, const Kernel& k, Block& list, size_t l, size_t m) {
  auto* red = list[l].getIf<Loop>();
  auto* row = list[m].getIf<Loop>();
  if (!red || !row || red->extent != row->extent || red->parallel || row->parallel) return false;
  if (red->body.size() != 1 || !red->body[0].is<AccUpdate>()) return false;
  if (row->body.size() != 1 || !row->body[0].is<Store>()) return false;
  const AccUpdate& update = red->body[0].as<AccUpdate>();
  Store& store = row->body[0].as<Store>();
  const Buffer& out = p.buffers[store.buffer];
  // The output must give the term back exactly: it holds the compute type, or the term is
  // already rounded to the output's f16/bf16 (fusion's round node), which the store keeps.
  const Expr& term = update.value;
  const bool roundedToOutput = term.kind == ExprKind::Call &&
                               ((term.builtin == Builtin::RoundBF16 && out.dtype == DType::BF16) ||
                                (term.builtin == Builtin::RoundF16 && out.dtype == DType::F16));
  if ((out.dtype != k.computeType && !roundedToOutput) || store.value.isBool) return false;
  // The store's index: plain variables, the row's loop variable exactly once, the reduction's
  // variable nowhere (so it names one element per iteration, the same in both loops).
  int rowVarUses = 0;
  for (const IndexExpr& ix : store.index) {
    if (ix.kind != IndexExpr::Kind::Var) return false;
    rowVarUses += ix.var == row->var;
    if (ix.var == red->var) return false;
  }
  if (rowVarUses != 1) return false;
  if (loadsFrom(update.value, store.buffer) || loadsFrom(store.value, store.buffer)) return false;
  for (size_t s = l; s < m; ++s)
    if (touches(list[s], store.buffer)) return false;

  // The reduction's term, read with the row's variable, must appear in the stored value.
  if (term.kind == ExprKind::Load || term.kind == ExprKind::Const) return false;  // nothing to save
  Expr reload;
  reload.kind = ExprKind::Load;
  reload.buffer = store.buffer;
  reload.index = store.index;
  Expr finished = store.value;
  const VarRenaming redAsRow{{red->var, row->var}};
  int replaced = 0;
  forEachExprNode(finished, [&](Expr& e) {
    // The walk goes on into what it put there: a load, which holds no term.
    if (equal(term, e, redAsRow)) {
      e = reload;
      ++replaced;
    }
  });
  if (replaced == 0) return false;

  // First loop: store the term and reduce what was stored.
  const IndexExpr redVar = IndexExpr::makeVar(red->var);
  Store first = store;
  for (IndexExpr& ix : first.index) substitute(ix, row->var, redVar);
  first.value = update.value;
  AccUpdate reduce = update;
  reduce.value = reload;
  for (IndexExpr& ix : reduce.value.index) substitute(ix, row->var, redVar);
  red->body = {std::move(first), std::move(reduce)};
  red->vectorize = true;
  // Second loop: finish each element from the stored term.
  store.value = std::move(finished);
  return true;
}

// Rewrites the pairs of `list`, whose nested lists are done.
int rewritePairs(const LoopProgram& p, const Kernel& k, Block& list) {
  int n = 0;
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
  for (Kernel& k : p.kernels) {
    // Inner lists first: a rewritten inner pair changes what the outer loops hold.
    rewrite(k.body, [&](Stmt& s) -> std::optional<Block> {
      if (Block* nested = nestedBlock(s)) n += rewritePairs(p, k, *nested);
      return std::nullopt;
    });
    n += rewritePairs(p, k, k.body);
  }
  return n;
}

}  // namespace texc::loops
