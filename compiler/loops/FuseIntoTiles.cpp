#include "compiler/loops/FuseIntoTiles.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "compiler/loops/transforms/LoopTransforms.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// Element visits the proof may make: writes once, then reads once per binding tried (about 25 ns
// each; the bench's conv (8, 64, 128, 28, 28) needs 0.8 M of each). Past it, or for an
// intermediate larger than it, the kernels stay apart rather than slow the compiler down.
constexpr int64_t kVisitBudget = int64_t(1) << 22;

// Variables of the consumer while its statements are moved: far above any kernel's own ids.
constexpr int kMovedVar = 1 << 20;

// Which buffers `stmts` load and store.
void accessesOf(const Block& stmts, std::vector<bool>& loads, std::vector<bool>& stores) {
  forEachAccess(stmts, [&](const Expr& e) { loads[e.buffer] = true; }, [&](const Store& s) { stores[s.buffer] = true; });
}

template <class Kind>
bool holds(const Block& stmts) {
  return anyStmt(stmts, [](const Stmt& s) { return s.is<Kind>(); });
}

bool storesTo(const Block& stmts, int buffer) {
  return anyStmt(stmts, [&](const Stmt& s) {
    const Store* st = s.getIf<Store>();
    return st && st->buffer == buffer;
  });
}

// Whether a pack or tile below `stmts` works on a k window that moves with `var`.
bool kWindowUses(const Block& stmts, int var) {
  return anyStmt(stmts, [&](const Stmt& s) {
    const KWindow* k = s.is<Pack>() ? &s.as<Pack>().k : s.is<Tile>() ? &s.as<Tile>().k : nullptr;
    return k && k->block > 0 && usesVar(k->base, var);
  });
}

// Whether `var` decides which elements the statements store: it appears in a store's index or a
// tile's row or column base. A k-block loop does not (its tiles store the same elements on every
// iteration), so the proof walks it once.
bool placesStores(const Block& stmts, int var) {
  const auto uses = [&](const IndexExpr& ix) { return usesVar(ix, var); };
  return anyStmt(stmts, [&](const Stmt& s) {
    if (auto* st = s.getIf<Store>()) return std::any_of(st->index.begin(), st->index.end(), uses);
    if (auto* t = s.getIf<Tile>()) return uses(t->rowBase) || uses(t->colBase);
    if (auto* g = s.getIf<Guard>())
      return std::any_of(g->conds.begin(), g->conds.end(), [&](const GuardCond& c) { return uses(c.index); });
    return false;
  });
}

bool directlyHoldsTile(const Block& stmts) {
  return std::any_of(stmts.begin(), stmts.end(), [](const Stmt& s) { return s.is<Tile>(); });
}

// Row-major element number of `index` in `b`, or -1 when it lies outside the buffer.
int64_t elementOf(const Buffer& b, const std::vector<IndexExpr>& index, const std::vector<int64_t>& vals) {
  int64_t at = 0;
  for (size_t d = 0; d < index.size(); ++d) {
    int64_t i = evalIndex(index[d], vals);
    if (i < 0 || i >= b.shape[d]) return -1;
    at = at * b.shape[d] + i;
  }
  return at;
}

// The proof by enumeration: owner[e] is the block that writes element e of T.
struct Proof {
  const LoopProgram& p;
  int T;
  std::vector<int32_t> owner;
  int64_t budget = kVisitBudget;

  // Records the elements of T that `stmts` write, as block `block`; false when an element is
  // written by two blocks, a write hides under a guard, or the budget runs out.
  bool writes(const Block& stmts, std::vector<int64_t>& vals, int32_t block) {
    for (const Stmt& s : stmts) {
      switch (s.kind()) {
        case StmtKind::Loop: {
          const Loop& l = s.as<Loop>();
          const int64_t n = placesStores(l.body, l.var) ? l.extent : 1;
          for (int64_t v = 0; v < n; ++v) {
            vals[l.var] = v;
            if (!writes(l.body, vals, block)) return false;
          }
          break;
        }
        case StmtKind::Guard:
          if (storesTo(s.as<Guard>().body, T)) return false;
          break;
        case StmtKind::Store: {
          const Store& st = s.as<Store>();
          if (st.buffer == T) {
            int64_t e = elementOf(p.buffers[T], st.index, vals);
            if (e < 0 || (owner[e] >= 0 && owner[e] != block) || --budget < 0) return false;
            owner[e] = block;
          }
          break;
        }
        case StmtKind::Tile: {
          const Tile& t = s.as<Tile>();
          const int64_t i0 = evalIndex(t.rowBase, vals), j0 = evalIndex(t.colBase, vals);
          for (int64_t r = 0; r < t.rows && i0 + r < t.rowExtent; ++r)
            for (int64_t c = 0; c < t.cols && j0 + c < t.colExtent; ++c) {
              vals[t.rowVar] = i0 + r;
              vals[t.colVar] = j0 + c;
              if (!writes(t.epilogue, vals, block)) return false;
            }
          break;
        }
        case StmtKind::Pack:
        case StmtKind::AccInit:
        case StmtKind::AccUpdate:
        case StmtKind::AccSet: break;
      }
    }
    return true;
  }

  bool readsExpr(const Expr& e, const std::vector<int64_t>& vals, int32_t block) {
    bool ok = true;
    forEachLoad(e, [&](const Expr& load) {
      if (!ok || load.buffer != T) return;
      int64_t at = elementOf(p.buffers[T], load.index, vals);
      ok = at >= 0 && owner[at] == block && --budget >= 0;
    });
    return ok;
  }

  // Whether every element of T that `stmts` read was written by `block`.
  bool reads(const Block& stmts, std::vector<int64_t>& vals, int32_t block) {
    for (const Stmt& s : stmts) {
      switch (s.kind()) {
        case StmtKind::Loop: {
          const Loop& l = s.as<Loop>();
          for (int64_t v = 0; v < l.extent; ++v) {
            vals[l.var] = v;
            if (!reads(l.body, vals, block)) return false;
          }
          break;
        }
        case StmtKind::Guard: {
          const Guard& g = s.as<Guard>();
          bool taken = true;
          for (const GuardCond& c : g.conds) {
            int64_t i = evalIndex(c.index, vals);
            taken = taken && i >= 0 && i < c.extent;
          }
          if (taken && !reads(g.body, vals, block)) return false;
          break;
        }
        case StmtKind::Store:
          if (!readsExpr(s.as<Store>().value, vals, block)) return false;
          break;
        case StmtKind::AccUpdate:
          if (!readsExpr(s.as<AccUpdate>().value, vals, block)) return false;
          break;
        case StmtKind::AccSet:
          if (!readsExpr(s.as<AccSet>().value, vals, block)) return false;
          break;
        default: break;
      }
    }
    return true;
  }
};

// The producer's block loops: the single loop at its top, and each loop whose body is exactly
// one loop, down to (not including) a loop whose variable moves a k window or that holds tiles.
std::vector<Loop*> blockLoops(Kernel& k) {
  Stmt* top = nullptr;
  for (Stmt& s : k.body) {
    if (s.is<Loop>()) {
      if (top) return {};
      top = &s;
    } else if (!s.is<Pack>()) {
      return {};  // only whole-operand packs may run outside the loops
    }
  }
  if (!top) return {};
  std::vector<Loop*> chain = perfectNest(*top);
  auto last = std::find_if(chain.begin(), chain.end(),
                           [](const Loop* l) { return kWindowUses(l->body, l->var) || directlyHoldsTile(l->body); });
  chain.erase(last, chain.end());
  return chain;
}

// The consumer's perfect nest: its single top loop and each loop that is its parent's only
// statement.
std::vector<Loop*> consumerNest(Kernel& k) {
  if (k.body.size() != 1) return {};
  return perfectNest(k.body[0]);
}

// Accumulators the statements touch.
void accsOf(const Block& stmts, std::vector<bool>& used) {
  forEachStmt(stmts, [&](const Stmt& s) {
    if (auto* i = s.getIf<AccInit>()) used[i->acc] = true;
    if (auto* u = s.getIf<AccUpdate>()) used[u->acc] = true;
    if (auto* a = s.getIf<AccSet>()) used[a->acc] = true;
    if (const Expr* v = valueOf(s))
      forEachExprNode(*v, [&](const Expr& e) {
        if (e.kind == ExprKind::AccRead) used[e.acc] = true;
      });
  });
}

// Whether every store of `stmts` names `var` in its index: then iterations of the consumer with
// different values of a bound loop store different elements, and the blocks, which may run on
// different threads, never store the same one.
bool storesUse(const Block& stmts, int var) {
  return !anyStmt(stmts, [&](const Stmt& s) {
    const Store* st = s.getIf<Store>();
    return st && std::none_of(st->index.begin(), st->index.end(), [&](const IndexExpr& ix) { return usesVar(ix, var); });
  });
}

// A binding: block loop b of the producer drives consumer loop consumerLoop[b] (-1: none, for
// a block loop of one iteration), as v = q * u + v'.
struct Binding {
  std::vector<int> consumerLoop;
  std::vector<int64_t> q;
};

void bindings(const std::vector<Loop*>& blocks, const std::vector<Loop*>& nest, size_t b, Binding& cur, std::vector<bool>& taken,
              std::vector<Binding>& out) {
  if (out.size() >= 64) return;
  if (b == blocks.size()) {
    out.push_back(cur);
    return;
  }
  if (blocks[b]->extent == 1) {
    cur.consumerLoop[b] = -1;
    cur.q[b] = 1;
    // A unit block loop may still bind a unit consumer loop (a batch of one): either way holds.
    bindings(blocks, nest, b + 1, cur, taken, out);
    return;
  }
  for (size_t v = 0; v < nest.size(); ++v) {
    if (taken[v] || nest[v]->extent % blocks[b]->extent != 0 || !storesUse(nest.back()->body, nest[v]->var)) continue;
    taken[v] = true;
    cur.consumerLoop[b] = static_cast<int>(v);
    cur.q[b] = nest[v]->extent / blocks[b]->extent;
    bindings(blocks, nest, b + 1, cur, taken, out);
    taken[v] = false;
  }
}

// The first half of the proof, the same for every binding: which block writes each element of T
// (false when two blocks write one element, or the walk is too long).
bool recordWrites(Proof& proof, const Kernel& P, const std::vector<Loop*>& blocks) {
  std::vector<int64_t> pv(P.varNames.size(), 0);
  int64_t blockCount = 1;
  for (const Loop* b : blocks) blockCount *= b->extent;
  if (blockCount >= (int64_t(1) << 31)) return false;
  for (int64_t id = 0; id < blockCount; ++id) {
    int64_t rest = id;
    for (size_t b = blocks.size(); b-- > 0;) {
      pv[blocks[b]->var] = rest % blocks[b]->extent;
      rest /= blocks[b]->extent;
    }
    if (!proof.writes(blocks.back()->body, pv, static_cast<int32_t>(id))) return false;
  }
  return true;
}

// The second half: whether, under `bind`, each block's consumer iterations read only what the
// block wrote.
bool proveReads(Proof& proof, const Kernel& C, const std::vector<Loop*>& blocks, const std::vector<Loop*>& nest, const Binding& bind) {
  std::vector<int64_t> pv(blocks.size(), 0), cv(C.varNames.size(), 0);
  int64_t blockCount = 1;
  for (const Loop* b : blocks) blockCount *= b->extent;
  std::vector<int> boundBy(nest.size(), -1);
  for (size_t b = 0; b < blocks.size(); ++b)
    if (bind.consumerLoop[b] >= 0) boundBy[bind.consumerLoop[b]] = static_cast<int>(b);
  std::function<bool(size_t, int32_t)> walk = [&](size_t d, int32_t block) -> bool {
    if (d == nest.size()) return proof.reads(nest.back()->body, cv, block);
    const Loop& l = *nest[d];
    int64_t lo = 0, n = l.extent;
    if (boundBy[d] >= 0) {
      const int b = boundBy[d];
      lo = bind.q[b] * pv[b];
      n = bind.q[b];
    }
    for (int64_t v = lo; v < lo + n; ++v) {
      cv[l.var] = v;
      if (!walk(d + 1, block)) return false;
    }
    return true;
  };
  for (int64_t id = 0; id < blockCount; ++id) {
    int64_t rest = id;
    for (size_t b = blocks.size(); b-- > 0;) {
      pv[b] = rest % blocks[b]->extent;
      rest /= blocks[b]->extent;
    }
    if (!walk(0, static_cast<int32_t>(id))) return false;
  }
  return true;
}

// Gives the consumer's variables the ids kMovedVar + v and its accumulators the ids after the
// producer's, so that they cannot meet the producer's own.
void moveIds(Block& stmts, int numVars, int accOffset) {
  forEachStmt(stmts, [&](Stmt& s) {
    if (auto* l = s.getIf<Loop>()) l->var += kMovedVar;
    if (auto* i = s.getIf<AccInit>()) i->acc += accOffset;
    if (auto* u = s.getIf<AccUpdate>()) u->acc += accOffset;
    if (auto* a = s.getIf<AccSet>()) a->acc += accOffset;
    if (Expr* v = valueOf(s))
      forEachExprNode(*v, [&](Expr& e) {
        if (e.kind == ExprKind::AccRead) e.acc += accOffset;
      });
  });
  // No loop binds an old id any more, so every use is free; the new ids lie above all old ones.
  for (int v = 0; v < numVars; ++v) substitute(stmts, v, IndexExpr::makeVar(kMovedVar + v));
}

// Moves consumer kernel C into producer P at the end of the innermost block loop's body.
std::string fuse(Kernel& P, Kernel& C, const std::vector<Loop*>& blocks, const std::vector<Loop*>& nest,
                 const Binding& bind) {
  std::vector<int> boundBy(nest.size(), -1);
  for (size_t b = 0; b < blocks.size(); ++b)
    if (bind.consumerLoop[b] >= 0) boundBy[bind.consumerLoop[b]] = static_cast<int>(b);

  // The consumer's innermost body with moved ids, then wrapped loop by loop from the inside out.
  Block body = nest.back()->body;
  moveIds(body, static_cast<int>(C.varNames.size()), P.numAccs);
  std::vector<std::pair<int, IndexExpr>> replace;  // moved id -> what it becomes in P
  std::vector<std::string> told;
  // Inner loops of the consumer's body (its reduction loops) get new variables too, each loop
  // its own, substituted in its own body: loops side by side may bind the same variable (the
  // copies of an unrolled loop, a split loop's border and interior parts), and a substitution
  // over the whole body would send every copy's uses to the first copy's new variable.
  forEachStmt(body, [&](Stmt& s) {
    Loop* l = s.getIf<Loop>();
    if (!l || l->var < kMovedVar) return;
    const int moved = l->var;
    l->var = nest::addVar(P, C.varNames[moved - kMovedVar]);
    substitute(l->body, moved, IndexExpr::makeVar(l->var));
  });
  for (size_t d = nest.size(); d-- > 0;) {
    const Loop& l = *nest[d];
    const std::string& name = C.varNames[l.var];
    if (boundBy[d] >= 0 && bind.q[boundBy[d]] == 1) {
      const Loop& b = *blocks[boundBy[d]];
      replace.emplace_back(kMovedVar + l.var, IndexExpr::makeVar(b.var));
      told.push_back(fmt::format("{} = {}", name, P.varNames[b.var]));
      continue;  // no loop: the block loop is it
    }
    if (boundBy[d] < 0 && l.extent == 1) {
      replace.emplace_back(kMovedVar + l.var, IndexExpr::makeConst(0));
      continue;  // a unit loop (a batch of one) needs no loop
    }
    Loop loop;
    loop.var = nest::addVar(P, name);
    loop.vectorize = l.vectorize;
    loop.scalar = l.scalar;
    loop.extent = l.extent;
    if (boundBy[d] >= 0) {
      const int64_t q = bind.q[boundBy[d]];
      const int u = blocks[boundBy[d]]->var;
      loop.extent = q;
      IndexExpr v;
      v.kind = IndexExpr::Kind::Add;
      v.ops = {affineIndex(q, u, 0), IndexExpr::makeVar(loop.var)};
      replace.emplace_back(kMovedVar + l.var, v);
      told.push_back(fmt::format("{} = {} * {} + {}", name, q, P.varNames[u], P.varNames[loop.var]));
    } else {
      replace.emplace_back(kMovedVar + l.var, IndexExpr::makeVar(loop.var));
    }
    loop.body = std::move(body);
    body.clear();
    body.push_back(std::move(loop));
  }
  for (const auto& [moved, by] : replace) substitute(body, moved, by);
  P.numAccs += C.numAccs;
  Block& at = blocks.back()->body;
  for (Stmt& s : body) at.push_back(std::move(s));
  std::string binding;
  for (size_t i = told.size(); i-- > 0;) binding += (binding.empty() ? "" : ", ") + told[i];
  return binding;
}

}  // namespace

std::vector<TileFusion> fuseIntoTiles(LoopProgram& p) {
  std::vector<TileFusion> done;
  for (size_t i = 0; i + 1 < p.kernels.size(); ++i) {
    Kernel& P = p.kernels[i];
    Kernel& C = p.kernels[i + 1];
    const int T = P.outputBuffer, O = C.outputBuffer;
    if (T < 0 || O < 0 || T == O || p.buffers[T].kind != BufferKind::Temp || !holds<Tile>(P.body)) continue;
    if (!C.scratchSizes.empty() || holds<Tile>(C.body) || holds<Pack>(C.body)) continue;
    std::vector<bool> pl(p.buffers.size()), ps(p.buffers.size()), cl(p.buffers.size()), cs(p.buffers.size());
    accessesOf(P.body, pl, ps);
    accessesOf(C.body, cl, cs);
    // P writes T alone and never sees O; C writes O alone, reads T, and never reads O (its
    // iterations change order).
    if (std::count(ps.begin(), ps.end(), true) != 1 || !ps[T] || pl[O]) continue;
    if (std::count(cs.begin(), cs.end(), true) != 1 || !cs[O] || !cl[T] || cl[O]) continue;
    bool elsewhere = false;
    for (size_t j = 0; j < p.kernels.size(); ++j) {
      if (j == i || j == i + 1) continue;
      std::vector<bool> l(p.buffers.size()), s(p.buffers.size());
      accessesOf(p.kernels[j].body, l, s);
      elsewhere = elsewhere || l[T] || s[T];
    }
    if (elsewhere) continue;
    std::vector<Loop*> blocks = blockLoops(P);
    std::vector<Loop*> nest = consumerNest(C);
    if (blocks.empty() || nest.empty()) continue;
    // Every accumulator of the consumer starts inside its innermost body, so no value crosses
    // the iterations that now run in another order.
    {
      std::vector<bool> used(static_cast<size_t>(C.numAccs)), init(static_cast<size_t>(C.numAccs));
      accsOf(nest.back()->body, used);
      for (const Stmt& s : nest.back()->body)
        if (auto* a = s.getIf<AccInit>()) init[a->acc] = true;
      bool ok = true;
      for (size_t a = 0; a < used.size(); ++a) ok = ok && (!used[a] || init[a]);
      if (!ok) continue;
    }
    if (p.buffers[T].numElements() > kVisitBudget) continue;
    Binding cur{std::vector<int>(blocks.size(), -1), std::vector<int64_t>(blocks.size(), 1)};
    std::vector<bool> taken(nest.size(), false);
    std::vector<Binding> candidates;
    bindings(blocks, nest, 0, cur, taken, candidates);
    Proof proof{p, T, std::vector<int32_t>(static_cast<size_t>(p.buffers[T].numElements()), -1)};
    if (!recordWrites(proof, P, blocks)) continue;
    const Binding* proved = nullptr;
    const int64_t readBudget = proof.budget;
    for (const Binding& b : candidates) {
      proof.budget = readBudget;
      if (proveReads(proof, C, blocks, nest, b)) {
        proved = &b;
        break;
      }
    }
    if (!proved) continue;
    TileFusion f{p.buffers[T].name, p.buffers[O].name, ""};
    f.binding = fuse(P, C, blocks, nest, *proved);
    P.name += "_" + p.buffers[O].name;
    P.outputBuffer = O;
    P.schedule += fmt::format("{}{} fused per block ({}): it reads each block of {} while the block is in cache", P.schedule.empty() ? "" : "; ",
                              f.consumer, f.binding, f.producer);
    p.kernels.erase(p.kernels.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    done.push_back(std::move(f));
  }
  return done;
}

}  // namespace texc::loops
