// reorder: permutes the loops of a perfect nest when no iteration reads what another writes
// (the rule is in LoopTransforms.h).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/loops/Equal.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

// The nest from the loop over `start` down: its loops (outermost first) and the guards between
// them, as long as each body is one statement and every loop is one of `wanted`. Not the core's
// perfectNest: guards may sit between the loops (a split leaves one), and they move with them.
struct Nest {
  std::vector<Stmt*> loops;
  std::vector<Stmt*> guards;
  Block* innermost = nullptr;  // the body of the innermost loop or guard
  std::string error;
};

Nest walkNest(Kernel& k, Stmt* start, const std::set<int>& wanted) {
  Nest n;
  Stmt* cur = start;
  n.loops.push_back(cur);
  while (n.loops.size() < wanted.size()) {
    Block& body = *nestedBlock(*cur);
    if (body.size() != 1) {
      auto* l = cur->getIf<Loop>();
      n.error = fmt::format("the loops are not a perfect nest: the body of {} holds {} statements",
                            l ? "loop " + k.varNames[l->var] : std::string("a guard"), body.size());
      return n;
    }
    Stmt* next = &body[0];
    auto* nextLoop = next->getIf<Loop>();
    if (next->is<Guard>()) {
      n.guards.push_back(next);
    } else if (nextLoop && wanted.count(nextLoop->var)) {
      n.loops.push_back(next);
    } else {
      n.error = nextLoop ? fmt::format("the loops are not a perfect nest: loop {} lies between them", k.varNames[nextLoop->var])
                         : fmt::format("the loops are not a perfect nest: the body of loop {} is not a loop",
                                       k.varNames[cur->as<Loop>().var]);
      return n;
    }
    cur = next;
  }
  // Guards right inside the innermost loop belong to the nest too: they may move outwards.
  while (nestedBlock(*cur)->size() == 1 && nestedBlock(*cur)->front().is<Guard>()) {
    cur = &nestedBlock(*cur)->front();
    n.guards.push_back(cur);
  }
  n.innermost = nestedBlock(*cur);
  return n;
}

// How many loops over `wanted` variables lie inside `s`, itself included.
size_t wantedInside(const Stmt& s, const std::set<int>& wanted) {
  size_t n = 0;
  auto count = [&](const Stmt& t) {
    if (auto* l = t.getIf<Loop>(); l && wanted.count(l->var)) ++n;
  };
  count(s);
  if (const Block* nested = nestedBlock(s)) forEachStmt(*nested, count);
  return n;
}

// A store with the statements around it inside the nest's body (a tile, for its epilogue).
struct StoreFact {
  const Store* store;
  std::vector<const Stmt*> enclosing;
};

struct BodyFacts {
  std::vector<StoreFact> stores;
  std::vector<const Expr*> values;  // every value computed or read in the body (packs and tiles too)
  std::vector<bool> accSet, accUpdated, accRead;
  std::vector<int> packed;  // scratch arrays the body packs
};

void collect(const Block& stmts, BodyFacts& f) {
  walkWithEnclosing(stmts, [&](const Stmt& s, const std::vector<const Stmt*>& enclosing) {
    if (auto* store = s.getIf<Store>()) f.stores.push_back({store, enclosing});
    if (const Expr* value = valueOf(s)) f.values.push_back(value);
    if (auto* update = s.getIf<AccUpdate>()) f.accUpdated[update->acc] = true;
    if (auto* set = s.getIf<AccSet>()) f.accUpdated[set->acc] = true;
    if (auto* init = s.getIf<AccInit>()) f.accSet[init->acc] = true;
    if (auto* pack = s.getIf<Pack>()) f.packed.push_back(pack->scratch);
    return WalkAction::Advance;
  });
  for (const Expr* value : f.values)
    forEachExprNode(*value, [&](const Expr& e) {
      if (e.kind == ExprKind::AccRead) f.accRead[e.acc] = true;
    });
}

// How many tiles under `stmts` read scratch array `scratch`.
int64_t readersOf(const Block& stmts, int scratch) {
  int64_t n = 0;
  forEachStmt(stmts, [&](const Stmt& s) {
    if (auto* t = s.getIf<Tile>(); t && (t->rowScratch == scratch || t->colScratch == scratch)) ++n;
  });
  return n;
}

// Why the iterations of the nest over `vars` with innermost body `body` may not be reordered.
std::string dependence(const Kernel& k, const Block& body, const std::vector<int>& vars) {
  BodyFacts f;
  f.accSet.assign(k.numAccs, false);
  f.accUpdated.assign(k.numAccs, false);
  f.accRead.assign(k.numAccs, false);
  collect(body, f);
  for (const StoreFact& s : f.stores) {
    for (int v : vars)
      if (!nest::writesWith(*s.store, s.enclosing, v))
        return fmt::format("a store inside the nest does not index with {}: several iterations write one element, "
                           "and their order decides which value stays",
                           k.varNames[v]);
    for (const Expr* value : f.values) {
      bool elsewhere = false;
      forEachLoad(*value, [&](const Expr& load) {
        if (load.buffer == s.store->buffer && !equal(load.index, s.store->index)) elsewhere = true;
      });
      if (elsewhere)
        return fmt::format("the nest reads the buffer it writes at another index: an iteration may read what another one "
                           "wrote");
    }
  }
  for (int a = 0; a < k.numAccs; ++a)
    if (f.accUpdated[a] && !f.accSet[a] && f.accRead[a])
      return fmt::format("accumulator acc{} is carried across the nest's iterations and read inside it", a);
  // Each iteration packs its own block before its tiles read it; a tile after the nest would
  // read what the last iteration packed, and that iteration changes.
  for (int scratch : f.packed)
    if (readersOf(body, scratch) != readersOf(k.body, scratch))
      return fmt::format("scratch s{} is packed inside the nest and read after it", scratch);
  return "";
}

}  // namespace

std::string reorderLoops(Kernel& kernel, const std::vector<std::string>& vars) {
  if (vars.empty()) return "name the loops in their new order";
  Kernel k = kernel;  // transformed on a copy: an error leaves the kernel as it was
  std::vector<int> ids;
  std::vector<Stmt*> found;
  for (const std::string& name : vars) {
    nest::Found f = nest::findLoop(k, name);
    if (!f.error.empty()) return f.error;
    if (std::string why = nest::checkTransformable(k, *f.loop); !why.empty()) return why;
    if (std::find(ids.begin(), ids.end(), f.loop->var) != ids.end()) return fmt::format("{} is named twice", name);
    ids.push_back(f.loop->var);
    found.push_back(f.stmt);
  }
  const std::set<int> wanted(ids.begin(), ids.end());
  // The nest starts at the named loop that holds the most of the others (the outermost one).
  Stmt* start = found.front();
  for (Stmt* s : found)
    if (wantedInside(*s, wanted) > wantedInside(*start, wanted)) start = s;
  Nest n = walkNest(k, start, wanted);
  if (!n.error.empty()) return n.error;

  Block& innermost = *n.innermost;
  if (std::string why = dependence(k, innermost, ids); !why.empty()) return why;

  // Rebuild from the inside out, the guards just inside the innermost loop whose variable they
  // read (outside the nest when they read none).
  const Loop& outermostLoop = n.loops.front()->as<Loop>();
  const Loop& innermostLoop = n.loops.back()->as<Loop>();
  const bool parallel = outermostLoop.parallel;
  const bool vectorize = innermostLoop.vectorize, scalar = innermostLoop.scalar;
  std::vector<std::pair<int64_t, int>> extentOf;  // by new position: extent, var
  for (int id : ids)
    for (Stmt* s : n.loops)
      if (const Loop& l = s->as<Loop>(); l.var == id) extentOf.push_back({l.extent, id});
  auto positionOf = [&](const Guard& guard) {
    int pos = -1;
    for (size_t p = 0; p < ids.size(); ++p)
      for (const GuardCond& c : guard.conds)
        if (usesVar(c.index, ids[p])) pos = std::max(pos, static_cast<int>(p));
    return pos;
  };
  Block content = std::move(innermost);
  auto wrapGuards = [&](int pos) {
    for (auto g = n.guards.rbegin(); g != n.guards.rend(); ++g) {
      const Guard& old = (*g)->as<Guard>();
      if (positionOf(old) != pos) continue;
      Guard guard;
      guard.conds = old.conds;
      guard.body = std::move(content);
      content.clear();
      content.push_back(std::move(guard));
    }
  };
  for (int p = static_cast<int>(ids.size()) - 1; p >= 0; --p) {
    wrapGuards(p);
    Loop loop;
    loop.extent = extentOf[p].first;
    loop.var = extentOf[p].second;
    loop.parallel = p == 0 && parallel;
    loop.vectorize = p + 1 == static_cast<int>(ids.size()) && vectorize;
    loop.scalar = p + 1 == static_cast<int>(ids.size()) && scalar;
    loop.body = std::move(content);
    content.clear();
    content.push_back(std::move(loop));
  }
  wrapGuards(-1);
  *n.loops.front() = std::move(content.front());

  if (parallel) {
    nest::Found top = nest::findLoop(k, vars.front());
    if (!top.topLevel) return fmt::format("a guard would sit outside the parallel loop {}", vars.front());
    if (std::string why = nest::parallelProblem(k, *top.loop); !why.empty())
      return fmt::format("{} would become the parallel loop, but {}; write 'parallel off' first", vars.front(), why);
  }
  nest::refreshParallelExtent(k);
  kernel = std::move(k);
  return "";
}

}  // namespace texc::loops
