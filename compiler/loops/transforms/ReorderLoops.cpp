// reorder: permutes the loops of a perfect nest when no iteration reads what another writes
// (the rule is in LoopTransforms.h).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

// The nest from the loop over `start` down: its loops (outermost first) and the guards between
// them, as long as each body is one statement and every loop is one of `wanted`.
struct Nest {
  std::vector<Stmt*> loops;
  std::vector<Stmt*> guards;
  Stmt* last = nullptr;  // the loop or guard whose body is the innermost body
  std::string error;
};

Nest walkNest(Kernel& k, Stmt* start, const std::set<int>& wanted) {
  Nest n;
  Stmt* cur = start;
  n.loops.push_back(cur);
  while (n.loops.size() < wanted.size()) {
    if (cur->body.size() != 1) {
      n.error = fmt::format("the loops are not a perfect nest: the body of {} holds {} statements",
                            cur->kind == StmtKind::Loop ? "loop " + k.varNames[cur->var] : std::string("a guard"), cur->body.size());
      return n;
    }
    Stmt* next = &cur->body[0];
    if (next->kind == StmtKind::Guard) {
      n.guards.push_back(next);
    } else if (next->kind == StmtKind::Loop && wanted.count(next->var)) {
      n.loops.push_back(next);
    } else {
      n.error = next->kind == StmtKind::Loop
                    ? fmt::format("the loops are not a perfect nest: loop {} lies between them", k.varNames[next->var])
                    : fmt::format("the loops are not a perfect nest: the body of loop {} is not a loop", k.varNames[cur->var]);
      return n;
    }
    cur = next;
  }
  // Guards right inside the innermost loop belong to the nest too: they may move outwards.
  while (cur->body.size() == 1 && cur->body[0].kind == StmtKind::Guard) {
    cur = &cur->body[0];
    n.guards.push_back(cur);
  }
  n.last = cur;
  return n;
}

// How many loops over `wanted` variables lie inside `s`, itself included.
size_t wantedInside(const Stmt& s, const std::set<int>& wanted) {
  size_t n = s.kind == StmtKind::Loop && wanted.count(s.var) ? 1 : 0;
  for (const Stmt& b : s.body) n += wantedInside(b, wanted);
  return n;
}

void loadsOf(const Expr& e, int buffer, std::vector<const std::vector<IndexExpr>*>& out) {
  if (e.kind == ExprKind::Load && e.buffer == buffer) out.push_back(&e.index);
  for (const Expr& a : e.args) loadsOf(a, buffer, out);
}

struct BodyFacts {
  std::vector<const Stmt*> stores;
  std::vector<const Expr*> values;  // every value computed in the body
  std::vector<bool> accSet, accUpdated, accRead;
};

void accReads(const Expr& e, std::vector<bool>& read) {
  if (e.kind == ExprKind::AccRead) read[e.acc] = true;
  for (const Expr& a : e.args) accReads(a, read);
}

void collect(const std::vector<Stmt>& stmts, BodyFacts& f) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Store) f.stores.push_back(&s);
    if (s.kind == StmtKind::Store || s.kind == StmtKind::AccUpdate) {
      f.values.push_back(&s.value);
      accReads(s.value, f.accRead);
    }
    if (s.kind == StmtKind::AccInit) f.accSet[s.acc] = true;
    if (s.kind == StmtKind::AccUpdate) f.accUpdated[s.acc] = true;
    collect(s.body, f);
  }
}

// Why the iterations of the nest over `vars` with innermost body `body` may not be reordered.
std::string dependence(const Kernel& k, const std::vector<Stmt>& body, const std::vector<int>& vars) {
  BodyFacts f;
  f.accSet.assign(k.numAccs, false);
  f.accUpdated.assign(k.numAccs, false);
  f.accRead.assign(k.numAccs, false);
  collect(body, f);
  for (const Stmt* s : f.stores) {
    for (int v : vars) {
      bool uses = false;
      for (const IndexExpr& ix : s->index) uses = uses || nest::usesVar(ix, v);
      if (!uses)
        return fmt::format("a store inside the nest does not index with {}: several iterations write one element, "
                           "and their order decides which value stays",
                           k.varNames[v]);
    }
    for (const Expr* value : f.values) {
      std::vector<const std::vector<IndexExpr>*> loads;
      loadsOf(*value, s->buffer, loads);
      for (const std::vector<IndexExpr>* idx : loads) {
        bool same = idx->size() == s->index.size();
        for (size_t d = 0; same && d < idx->size(); ++d) same = sameIndex((*idx)[d], s->index[d]);
        if (!same)
          return fmt::format("the nest reads the buffer it writes at another index: an iteration may read what another one "
                             "wrote");
      }
    }
  }
  for (int a = 0; a < k.numAccs; ++a)
    if (f.accUpdated[a] && !f.accSet[a] && f.accRead[a])
      return fmt::format("accumulator acc{} is carried across the nest's iterations and read inside it", a);
  return "";
}

}  // namespace

std::string reorderLoops(Kernel& kernel, const std::vector<std::string>& vars) {
  if (std::string why = nest::checkTransformable(kernel); !why.empty()) return why;
  if (vars.empty()) return "name the loops in their new order";
  Kernel k = kernel;  // transformed on a copy: an error leaves the kernel as it was
  std::vector<int> ids;
  std::vector<Stmt*> found;
  for (const std::string& name : vars) {
    nest::Found f = nest::findLoop(k, name);
    if (!f.error.empty()) return f.error;
    if (std::find(ids.begin(), ids.end(), f.loop->var) != ids.end()) return fmt::format("{} is named twice", name);
    ids.push_back(f.loop->var);
    found.push_back(f.loop);
  }
  const std::set<int> wanted(ids.begin(), ids.end());
  // The nest starts at the named loop that holds the most of the others (the outermost one).
  Stmt* start = found.front();
  for (Stmt* s : found)
    if (wantedInside(*s, wanted) > wantedInside(*start, wanted)) start = s;
  Nest n = walkNest(k, start, wanted);
  if (!n.error.empty()) return n.error;

  std::vector<Stmt>& innermost = n.last->body;
  if (std::string why = dependence(k, innermost, ids); !why.empty()) return why;

  // Rebuild from the inside out, the guards just inside the innermost loop whose variable they
  // read (outside the nest when they read none).
  const bool parallel = n.loops.front()->parallel;
  const bool vectorize = n.loops.back()->vectorize, scalar = n.loops.back()->scalar;
  std::vector<std::pair<int64_t, int>> extentOf;  // by new position: extent, var
  for (int id : ids)
    for (Stmt* l : n.loops)
      if (l->var == id) extentOf.push_back({l->extent, id});
  auto positionOf = [&](const Stmt& guard) {
    int pos = -1;
    for (size_t p = 0; p < ids.size(); ++p)
      for (const GuardCond& c : guard.conds)
        if (nest::usesVar(c.index, ids[p])) pos = std::max(pos, static_cast<int>(p));
    return pos;
  };
  std::vector<Stmt> content = std::move(innermost);
  auto wrapGuards = [&](int pos) {
    for (auto g = n.guards.rbegin(); g != n.guards.rend(); ++g) {
      if (positionOf(**g) != pos) continue;
      Stmt guard;
      guard.kind = StmtKind::Guard;
      guard.conds = (*g)->conds;
      guard.body = std::move(content);
      content.clear();
      content.push_back(std::move(guard));
    }
  };
  for (int p = static_cast<int>(ids.size()) - 1; p >= 0; --p) {
    wrapGuards(p);
    Stmt loop;
    loop.kind = StmtKind::Loop;
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
