#include "compiler/loops/PairBf16Lanes.h"

#include <map>
#include <set>

#include "compiler/loops/Walk.h"
#include "core/IndexAlgebra.h"

namespace texc::loops {

namespace {

bool fail(std::string* why, const char* reason) {
  if (why) *why = reason;
  return false;
}

}  // namespace

bool canPairBf16Lanes(const LoopProgram& p, const Loop& l, std::string* why) {
  if (l.parallel || l.scalar || l.gpu != GpuLoop::None) return fail(why, "a parallel, scalar or GPU loop");
  if (l.extent < 2 || l.extent % 2 != 0) return fail(why, "an odd extent");
  std::set<int> updated;                     // accumulators the loop updates
  std::map<int, const std::vector<IndexExpr>*> stored;  // buffer -> its store's index
  for (const Stmt& s : l.body) {
    if (const AccUpdate* u = s.getIf<AccUpdate>()) {
      updated.insert(u->acc);
    } else if (const Store* st = s.getIf<Store>()) {
      if (p.buffers[st->buffer].dtype != DType::BF16) return fail(why, "a store to a tensor that is not bf16");
      if (!walksLastDimension(st->index, l.var)) return fail(why, "a store that does not walk the last dimension");
      if (stored.count(st->buffer) && !equal(*stored[st->buffer], st->index)) return fail(why, "two stores to one tensor");
      stored[st->buffer] = &st->index;
    } else {
      return fail(why, "a statement other than a store or an update");
    }
  }
  std::string broken;
  for (const Stmt& s : l.body) {
    const Expr* v = valueOf(s);
    if (!v) continue;
    forEachExprNode(*v, [&](const Expr& e) {
      if (!broken.empty()) return;
      if (e.kind == ExprKind::VarValue && (e.index.empty() ? e.var == l.var : usesVar(e.index, l.var)))
        broken = "a value reads the loop variable";
      else if (e.kind == ExprKind::AccRead && updated.count(e.acc))
        broken = "a term reads an accumulator the loop updates";
      else if (e.kind == ExprKind::Load && usesVar(e.index, l.var)) {
        if (p.buffers[e.buffer].dtype != DType::BF16) broken = "a load that is not bf16 depends on the loop variable";
        else if (!walksLastDimension(e.index, l.var)) broken = "a load that does not walk the last dimension";
        else if (stored.count(e.buffer) && !equal(*stored[e.buffer], e.index)) broken = "a load of a stored tensor at another index";
      }
    });
  }
  if (!broken.empty()) return fail(why, broken.c_str());
  return true;
}

int pairBf16Lanes(LoopProgram& p, int vectorRegisters) {
  int marked = 0;
  for (Kernel& k : p.kernels)
    forEachInnermostLoop(k.body, [&](Loop& l) {
      bool touchesBf16 = false;
      forEachStmt(l.body, [&](const Stmt& c) {
        if (const Store* st = c.getIf<Store>()) touchesBf16 |= p.buffers[st->buffer].dtype == DType::BF16;
        if (const Expr* v = valueOf(c))
          forEachLoad(*v, [&](const Expr& e) { touchesBf16 |= p.buffers[e.buffer].dtype == DType::BF16 && usesVar(e.index, l.var); });
      });
      if (touchesBf16 && canPairBf16Lanes(p, l)) {
        l.pairs = true;
        const bool reduces = anyStmt(l.body, [](const Stmt& c) { return c.is<AccUpdate>(); });
        if (vectorRegisters <= 16 && l.interleave > 0 && !reduces && l.phases == 0) l.interleave *= 2;
        ++marked;
      }
    });
  return marked;
}

}  // namespace texc::loops
