// Helpers the loop transformations share: finding a loop by name, substituting a variable,
// keeping the kernel's parallel extent in step with its marks.
#include <fmt/format.h>

#include <functional>

#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops::nest {

namespace {

void collectLoops(Kernel& k, std::vector<Stmt>& stmts, bool topLevel, const std::string& name, Found& out, int& count) {
  for (size_t i = 0; i < stmts.size(); ++i) {
    Stmt& s = stmts[i];
    if (s.kind == StmtKind::Loop && s.var >= 0 && k.varNames[s.var] == name) {
      if (++count == 1) {
        out.loop = &s;
        out.parent = &stmts;
        out.position = i;
        out.topLevel = topLevel;
      }
    }
    if (s.kind == StmtKind::Loop || s.kind == StmtKind::Guard) collectLoops(k, s.body, false, name, out, count);
  }
}

void substituteIndex(IndexExpr& e, int var, const IndexExpr& by) {
  if (e.kind == IndexExpr::Kind::Var && e.var == var) {
    e = by;
    return;
  }
  for (IndexExpr& o : e.ops) substituteIndex(o, var, by);
}

void substituteExpr(Expr& e, int var, const IndexExpr& by) {
  // A bare variable value becomes the value of an index expression (Expr::index[0]).
  if (e.kind == ExprKind::VarValue && e.index.empty() && e.var == var) e.index.push_back(by);
  else
    for (IndexExpr& ix : e.index) substituteIndex(ix, var, by);
  for (Expr& a : e.args) substituteExpr(a, var, by);
}

bool exprUses(const Expr& e, int var) {
  if (e.kind == ExprKind::VarValue && e.index.empty() && e.var == var) return true;
  for (const IndexExpr& ix : e.index)
    if (usesVar(ix, var)) return true;
  for (const Expr& a : e.args)
    if (exprUses(a, var)) return true;
  return false;
}

bool holdsBlockStatements(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts)
    if (s.kind == StmtKind::Pack || s.kind == StmtKind::Tile || holdsBlockStatements(s.body)) return true;
  return false;
}

}  // namespace

Found findLoop(Kernel& k, const std::string& name) {
  Found out;
  int count = 0;
  collectLoops(k, k.body, true, name, out, count);
  if (count == 0) {
    std::string names;
    std::function<void(const std::vector<Stmt>&)> walk = [&](const std::vector<Stmt>& stmts) {
      for (const Stmt& s : stmts) {
        if (s.kind == StmtKind::Loop) names += (names.empty() ? "" : ", ") + k.varNames[s.var];
        walk(s.body);
      }
    };
    walk(k.body);
    out = Found{};
    out.error = fmt::format("kernel {} has no loop over '{}' (its loops: {})", k.name, name, names.empty() ? "none" : names);
  } else if (count > 1) {
    out = Found{};
    out.error = fmt::format("kernel {} has {} loops over '{}' (copies made by unroll, or one per reduction); "
                            "transform it before unrolling",
                            k.name, count, name);
  }
  return out;
}

std::string checkTransformable(const Kernel& k) {
  if (holdsBlockStatements(k.body))
    return fmt::format("kernel {} holds register tiles (pack and tile statements, from the tile pass or register_block); "
                       "its loops can be transformed only before: add 'tile = off' to the schedule (or pass --no-tile) "
                       "and put the step before register_block",
                       k.name);
  return "";
}

void substitute(std::vector<Stmt>& stmts, int var, const IndexExpr& by) {
  for (Stmt& s : stmts) {
    for (IndexExpr& ix : s.index) substituteIndex(ix, var, by);
    for (GuardCond& c : s.conds) substituteIndex(c.index, var, by);
    if (s.kind == StmtKind::Store || s.kind == StmtKind::AccUpdate) substituteExpr(s.value, var, by);
    substitute(s.body, var, by);
  }
}

IndexExpr affine(int64_t c, int v, int64_t u) {
  IndexExpr e = IndexExpr::makeVar(v);
  if (c != 1) {
    IndexExpr m;
    m.kind = IndexExpr::Kind::Mul;
    m.constant = c;
    m.ops.push_back(std::move(e));
    e = std::move(m);
  }
  if (u != 0) {
    IndexExpr a;
    a.kind = IndexExpr::Kind::Add;
    a.ops.push_back(std::move(e));
    a.ops.push_back(IndexExpr::makeConst(u));
    e = std::move(a);
  }
  return e;
}

bool usesVar(const std::vector<Stmt>& stmts, int var) {
  for (const Stmt& s : stmts) {
    for (const IndexExpr& ix : s.index)
      if (usesVar(ix, var)) return true;
    for (const GuardCond& c : s.conds)
      if (usesVar(c.index, var)) return true;
    if ((s.kind == StmtKind::Store || s.kind == StmtKind::AccUpdate) && exprUses(s.value, var)) return true;
    if (usesVar(s.body, var)) return true;
  }
  return false;
}

int64_t countStmts(const std::vector<Stmt>& stmts) {
  int64_t n = 0;
  for (const Stmt& s : stmts) n += 1 + countStmts(s.body);
  return n;
}

namespace {

// Accumulators set (AccInit) and updated (AccUpdate) anywhere in `stmts`, and stores.
void collectAccs(const std::vector<Stmt>& stmts, std::vector<bool>& set, std::vector<bool>& updated) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::AccInit) set[s.acc] = true;
    if (s.kind == StmtKind::AccUpdate) updated[s.acc] = true;
    collectAccs(s.body, set, updated);
  }
}

std::string storeWithout(const Kernel& k, const std::vector<Stmt>& stmts, int var) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Store) {
      bool uses = false;
      for (const IndexExpr& ix : s.index) uses = uses || usesVar(ix, var);
      if (!uses) return fmt::format("a store inside it does not index with {}", k.varNames[var]);
    }
    if (std::string why = storeWithout(k, s.body, var); !why.empty()) return why;
  }
  return "";
}

}  // namespace

bool holdsStore(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts)
    if (s.kind == StmtKind::Store || holdsStore(s.body)) return true;
  return false;
}

std::string parallelProblem(const Kernel& k, const Stmt& loop) {
  std::vector<bool> set(k.numAccs, false), updated(k.numAccs, false);
  collectAccs(loop.body, set, updated);
  for (int a = 0; a < k.numAccs; ++a)
    if (updated[a] && !set[a])
      return fmt::format("its iterations carry accumulator acc{} (a reduction over {}), which threads cannot share", a,
                         k.varNames[loop.var]);
  if (std::string why = storeWithout(k, loop.body, loop.var); !why.empty()) return why;
  // What stands beside the parallel loop runs once per chunk, in every thread.
  for (const Stmt& s : k.body)
    if (&s != &loop && (s.kind == StmtKind::Store || holdsStore(s.body)))
      return "the kernel stores outside that loop too (every thread would run those stores)";
  return "";
}

int addVar(Kernel& k, const std::string& name) {
  auto taken = [&](const std::string& n) {
    for (const std::string& v : k.varNames)
      if (v == n) return true;
    return false;
  };
  std::string unique = name;
  for (int i = 2; taken(unique); ++i) unique = fmt::format("{}{}", name, i);
  k.varNames.push_back(unique);
  return static_cast<int>(k.varNames.size()) - 1;
}

void refreshParallelExtent(Kernel& k) {
  k.parallelExtent = 0;
  for (const Stmt& s : k.body)
    if (s.kind == StmtKind::Loop && s.parallel) k.parallelExtent = s.extent;
}

}  // namespace texc::loops::nest
