#include "compiler/loops/gpu/FusePoolIntoGemm.h"

#include <algorithm>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "compiler/loops/Build.h"
#include "compiler/loops/Contraction.h"
#include "compiler/loops/Equal.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/gpu/GpuLegality.h"
#include "compiler/loops/transforms/LoopTransforms.h"
#include "core/IndexAlgebra.h"

namespace texc::loops::gpu {

namespace {

// The pool's variables while they move into the producer's numbering (above any real id).
constexpr int kMovedVar = 1 << 20;

void accessesOf(const Kernel& k, std::vector<bool>& reads, std::vector<bool>& writes) {
  forEachStmt(k.body, [&](const Stmt& s) {
    if (const auto* st = s.getIf<Store>()) writes[st->buffer] = true;
    if (const Expr* v = valueOf(s)) forEachLoad(*v, [&](const Expr& e) { reads[e.buffer] = true; });
  });
}

// The consumer: output loops, then `m = identity; for window.. { m op= T[r] }; store g(m)`.
struct Pool {
  std::vector<const Loop*> lhs;
  const AccInit* init = nullptr;
  std::vector<const Loop*> window;
  const AccUpdate* update = nullptr;
  const Store* store = nullptr;
};

std::optional<Pool> matchPool(const Kernel& C, int T) {
  KernelShape shape = kernelShape(C);
  const Block& inner = *shape.inner;
  Pool pool;
  pool.lhs = shape.lhs;
  if (pool.lhs.empty() || inner.size() != 3 || !inner[1].is<Loop>()) return std::nullopt;
  pool.init = inner[0].getIf<AccInit>();
  pool.store = inner[2].getIf<Store>();
  if (!pool.init || !pool.store || (pool.init->reduce != ReduceKind::Max && pool.init->reduce != ReduceKind::Min)) return std::nullopt;
  pool.window = perfectNest(inner[1]);
  const Block& innermost = pool.window.back()->body;
  pool.update = innermost.size() == 1 ? innermost[0].getIf<AccUpdate>() : nullptr;
  if (!pool.update || pool.update->acc != pool.init->acc || pool.update->reduce != pool.init->reduce ||
      pool.update->value.kind != ExprKind::Load || pool.update->value.buffer != T)
    return std::nullopt;
  // Every output loop indexes the store directly (their iterations are independent, so they may
  // be reordered and merged), and the stored value reads no accumulator but the window's.
  for (const Loop* l : pool.lhs) {
    bool direct = false;
    for (const IndexExpr& ix : pool.store->index) direct = direct || (ix.kind == IndexExpr::Kind::Var && ix.var == l->var);
    if (!direct) return std::nullopt;
  }
  bool otherAcc = false;
  forEachExprNode(pool.store->value, [&](const Expr& e) { otherAcc = otherAcc || (e.kind == ExprKind::AccRead && e.acc != pool.init->acc); });
  if (otherAcc || loadsFrom(pool.store->value, T)) return std::nullopt;
  return pool;
}

// Whether the map from the pool's variables (extents `extent`) to T's index `r` is one-to-one:
// every variable in exactly one index, each index a sum of variables with positive coefficients,
// each coefficient larger than what the smaller ones span (2 * y + dy with dy < 2; y alone).
bool oneToOne(const std::vector<IndexExpr>& r, const std::map<int, int64_t>& extent) {
  std::map<int, int> seen;
  for (const IndexExpr& ix : r) {
    AffineForm f = affineForm(ix);
    if (f.overflow || !f.isAffine()) return false;
    std::vector<std::pair<int64_t, int64_t>> terms;  // coefficient, extent
    for (const AffineTerm& t : f.terms) {
      auto e = extent.find(t.var);
      if (t.coeff <= 0 || e == extent.end() || seen[t.var]++ > 0) return false;
      terms.push_back({t.coeff, e->second});
    }
    std::sort(terms.begin(), terms.end());
    int64_t span = 0;
    for (const auto& [coeff, n] : terms) {
      if (coeff <= span) return false;
      span += coeff * (n - 1);
    }
  }
  return seen.size() == extent.size();
}

// Replaces every subexpression of `ix` equal to `from` by `to`.
void replaceSub(IndexExpr& ix, const IndexExpr& from, const IndexExpr& to) {
  if (equal(ix, from)) {
    ix = to;
    return;
  }
  for (IndexExpr& op : ix.ops) replaceSub(op, from, to);
}

// Kernel P (a tiled contraction storing T) with the pool C of T in its epilogue, or nullopt.
std::optional<Kernel> fused(const LoopProgram& p, const Kernel& P, const Kernel& C, int T, std::string& columns) {
  const KernelShape pShape = kernelShape(P);
  std::optional<TiledMatch> tiled = matchTiledContraction(p, P, pShape);
  std::optional<ReductionBody> body = matchReductionBody(*pShape.inner, /*allowGuard=*/true);
  if (!tiled || tiled->window != 1 || !body || !body->store || body->store->buffer != T) return std::nullopt;
  std::optional<Pool> pool = matchPool(C, T);
  if (!pool) return std::nullopt;
  const std::vector<IndexExpr>& s = body->store->index;
  const std::vector<IndexExpr>& r = pool->update->value.index;
  if (s.size() != r.size()) return std::nullopt;

  // Nothing of T is computed twice.
  std::map<int, int64_t> extent;
  for (const Loop* l : pool->lhs) extent[l->var] = l->extent;
  for (const Loop* l : pool->window) extent[l->var] = l->extent;
  if (!oneToOne(r, extent)) return std::nullopt;

  // The rows: the pool's loop that P's row loop becomes.
  const int pRow = pShape.lhs[pShape.lhs.size() - 2]->var;
  const Loop* rowLoop = nullptr;
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d].kind == IndexExpr::Kind::Var && s[d].var == pRow && r[d].kind == IndexExpr::Kind::Var)
      for (const Loop* l : pool->lhs)
        if (l->var == r[d].var) rowLoop = l;
  if (!rowLoop) return std::nullopt;
  std::vector<const Loop*> others;
  for (const Loop* l : pool->lhs)
    if (l != rowLoop) others.push_back(l);
  if (others.empty()) return std::nullopt;

  Kernel F = P;
  // P's output variables are replaced below; their names go to the pool's loops.
  for (const Loop* l : pShape.lhs) F.varNames[l->var] = "";
  // The pool's variables in F: its loops but the last two others as they are, those two one
  // pixel loop (y = yx / X, x = yx % X), the window's loops one loop w.
  std::map<int, IndexExpr> moved;  // pool variable -> its expression over F's variables
  std::vector<std::pair<int, int64_t>> order;  // F's output loops, outermost first
  const size_t merged = others.size() >= 2 ? 2 : 0;
  for (size_t n = 0; n + std::max<size_t>(merged, 1) < others.size(); ++n) {
    const int v = nest::addVar(F, C.varNames[others[n]->var]);
    moved[others[n]->var] = IndexExpr::makeVar(v);
    order.push_back({v, others[n]->extent});
  }
  const int rowVar = nest::addVar(F, C.varNames[rowLoop->var]);
  moved[rowLoop->var] = IndexExpr::makeVar(rowVar);
  order.push_back({rowVar, rowLoop->extent});
  int columnVar = -1;
  if (merged) {
    const Loop& y = *others[others.size() - 2];
    const Loop& x = *others.back();
    columnVar = nest::addVar(F, C.varNames[y.var] + C.varNames[x.var]);
    std::vector<IndexExpr> yx = build::unflatten(columnVar, {y.extent, x.extent});
    moved[y.var] = std::move(yx[0]);
    moved[x.var] = std::move(yx[1]);
    order.push_back({columnVar, y.extent * x.extent});
  } else {
    columnVar = nest::addVar(F, C.varNames[others.back()->var]);
    moved[others.back()->var] = IndexExpr::makeVar(columnVar);
    order.push_back({columnVar, others.back()->extent});
  }
  std::string windowName;
  std::vector<int64_t> windowExtents;
  for (const Loop* l : pool->window) {
    windowName += C.varNames[l->var];
    windowExtents.push_back(l->extent);
  }
  const int w = nest::addVar(F, pool->window.size() == 1 ? windowName : "w");
  const std::vector<IndexExpr> windowAt = build::unflatten(w, windowExtents);
  int64_t W = 1;
  for (size_t d = 0; d < pool->window.size(); ++d) {
    moved[pool->window[d]->var] = windowAt[d];
    W *= windowExtents[d];
  }
  // A pool expression over F's variables: every pool variable to a fresh id first, so that none
  // meets one of F's, then to what it became.
  auto toF = [&](auto& x) {
    for (const auto& [v, by] : moved) substitute(x, v, IndexExpr::makeVar(kMovedVar + v));
    for (const auto& [v, by] : moved) substitute(x, kMovedVar + v, by);
  };

  // P's row body at the elements the window reads: P's output variables replaced by the pool's
  // indices of T (a merged pixel's `v / X` and `v % X` as wholes).
  Block pBody = *pShape.inner;
  std::vector<bool> done(P.varNames.size(), false);
  for (size_t d = 0; d < s.size(); ++d) {
    IndexExpr at = r[d];
    toF(at);
    if (s[d].kind == IndexExpr::Kind::Var) {
      substitute(pBody, s[d].var, at);
      done[s[d].var] = true;
      continue;
    }
    const bool pair = d + 1 < s.size() && s[d].kind == IndexExpr::Kind::FloorDiv && s[d + 1].kind == IndexExpr::Kind::Mod &&
                      s[d].constant == s[d + 1].constant && s[d].ops[0].kind == IndexExpr::Kind::Var && equal(s[d].ops[0], s[d + 1].ops[0]);
    if (!pair) return std::nullopt;
    IndexExpr next = r[d + 1];
    toF(next);
    forEachStmt(pBody, [&](Stmt& st) {
      forEachIndexOf(st, [&](IndexExpr& ix) {
        replaceSub(ix, s[d], at);
        replaceSub(ix, s[d + 1], next);
      });
    });
    done[s[d].ops[0].var] = true;
    ++d;
  }
  for (const Loop* l : pShape.lhs)
    if (!done[l->var] || usesVar(pBody, l->var)) return std::nullopt;

  // The window loop: P's body, its store now folded into the window's accumulator.
  const int m = F.numAccs++;
  AccUpdate fold;
  fold.acc = m;
  fold.reduce = pool->init->reduce;
  fold.value = pBody.back().as<Store>().value;
  pBody.back() = Stmt(std::move(fold));
  Loop windowLoop = build::loop(w, W);
  windowLoop.body = std::move(pBody);
  Store out = *pool->store;
  for (IndexExpr& ix : out.index) toF(ix);
  toF(out.value);
  renameAcc(out.value, pool->init->acc, m);
  AccInit init;
  init.acc = m;
  init.reduce = pool->init->reduce;
  Block inner;
  inner.push_back(std::move(init));
  inner.push_back(std::move(windowLoop));
  inner.push_back(std::move(out));
  const bool parallel = !pShape.lhs.empty() && pShape.lhs.front()->parallel;
  F.body = build::loopNest(order, std::move(inner), parallel);
  F.parallelExtent = parallel ? order.front().second : 0;
  F.outputBuffer = C.outputBuffer;
  F.name += "_" + p.buffers[C.outputBuffer].name;
  // Only if the tiled contraction takes it, the window as its columns' fastest part.
  std::optional<TiledMatch> t = matchTiledContraction(p, F, kernelShape(F));
  if (!t || t->window != W) return std::nullopt;
  columns = fmt::format("{} x {}, {} {} per window", F.varNames[columnVar], F.varNames[w], W,
                        pool->init->reduce == ReduceKind::Max ? "max" : "min");
  return F;
}

}  // namespace

std::vector<PoolFusion> fusePoolsIntoGemms(LoopProgram& p) {
  std::vector<PoolFusion> done;
  for (size_t i = 0; i + 1 < p.kernels.size(); ++i) {
    const Kernel& P = p.kernels[i];
    const Kernel& C = p.kernels[i + 1];
    const int T = P.outputBuffer, O = C.outputBuffer;
    if (T < 0 || O < 0 || T == O || p.buffers[T].kind != BufferKind::Temp || p.buffers[T].dtype != P.computeType ||
        C.computeType != P.computeType)
      continue;
    // P writes T alone; C writes O alone and reads T; no other kernel touches T.
    std::vector<bool> pl(p.buffers.size()), ps(p.buffers.size()), cl(p.buffers.size()), cs(p.buffers.size());
    accessesOf(P, pl, ps);
    accessesOf(C, cl, cs);
    if (std::count(ps.begin(), ps.end(), true) != 1 || !ps[T] || pl[T] || pl[O]) continue;
    if (std::count(cs.begin(), cs.end(), true) != 1 || !cs[O] || !cl[T] || cl[O]) continue;
    bool elsewhere = false;
    for (size_t j = 0; j < p.kernels.size(); ++j) {
      if (j == i || j == i + 1) continue;
      std::vector<bool> l(p.buffers.size()), s(p.buffers.size());
      accessesOf(p.kernels[j], l, s);
      elsewhere = elsewhere || l[T] || s[T];
    }
    if (elsewhere) continue;
    std::string columns;
    std::optional<Kernel> F = fused(p, P, C, T, columns);
    if (!F) continue;
    PoolFusion f{p.buffers[T].name, p.buffers[O].name, columns};
    F->schedule += fmt::format("{}{} in the epilogue: the tile's columns are {}, combined across lanes; {} is never stored",
                               F->schedule.empty() ? "" : "; ", f.consumer, columns, f.producer);
    p.kernels[i] = std::move(*F);
    p.kernels.erase(p.kernels.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    done.push_back(std::move(f));
  }
  return done;
}

}  // namespace texc::loops::gpu
