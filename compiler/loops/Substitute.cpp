#include "compiler/loops/Substitute.h"

#include <algorithm>

#include "compiler/loops/Walk.h"

namespace texc::loops {

void substitute(IndexExpr& ix, int var, const IndexExpr& by) {
  if (ix.kind == IndexExpr::Kind::Var) {
    if (ix.var == var) ix = by;
    return;
  }
  for (IndexExpr& o : ix.ops) substitute(o, var, by);
}

void substitute(Expr& e, int var, const IndexExpr& by) {
  forEachExprNode(e, [&](Expr& n) {
    if (n.kind == ExprKind::VarValue && n.index.empty() && n.var == var) n.index.push_back(by);
    else
      for (IndexExpr& ix : n.index) substitute(ix, var, by);
  });
}

namespace {

bool binds(const Stmt& s, int var) {
  std::vector<int> vars = boundVars(s);
  return std::find(vars.begin(), vars.end(), var) != vars.end();
}

}  // namespace

void substitute(Stmt& s, int var, const IndexExpr& by) {
  if (binds(s, var)) {
    forEachOuterIndex(s, [&](IndexExpr& ix) { substitute(ix, var, by); });
    return;
  }
  forEachIndexOf(s, [&](IndexExpr& ix) {
    // forEachIndexOf reaches the VarValues of a value only through their index; bare VarValues
    // are handled below.
    substitute(ix, var, by);
  });
  if (Expr* v = valueOf(s))
    forEachExprNode(*v, [&](Expr& n) {
      if (n.kind == ExprKind::VarValue && n.index.empty() && n.var == var) n.index.push_back(by);
    });
  if (Block* nested = nestedBlock(s)) substitute(*nested, var, by);
}

void substitute(Block& block, int var, const IndexExpr& by) {
  for (Stmt& s : block) substitute(s, var, by);
}

bool usesVar(const Expr& e, int var) {
  bool used = false;
  forEachExprNode(e, [&](const Expr& n) {
    if (n.kind == ExprKind::VarValue && n.index.empty() && n.var == var) used = true;
    for (const IndexExpr& ix : n.index) used = used || usesVar(ix, var);
  });
  return used;
}

bool usesVar(const Block& block, int var) {
  for (const Stmt& s : block) {
    bool used = false;
    if (binds(s, var)) {
      forEachOuterIndex(const_cast<Stmt&>(s), [&](IndexExpr& ix) { used = used || usesVar(ix, var); });
      if (used) return true;
      continue;
    }
    forEachIndexOf(s, [&](const IndexExpr& ix) { used = used || usesVar(ix, var); });
    if (const Expr* v = valueOf(s)) used = used || usesVar(*v, var);
    if (used) return true;
    if (const Block* nested = nestedBlock(s))
      if (usesVar(*nested, var)) return true;
  }
  return false;
}

void renameAcc(Expr& e, int from, int to) {
  forEachExprNode(e, [&](Expr& n) {
    if (n.kind == ExprKind::AccRead && n.acc == from) n.acc = to;
  });
}

IndexExpr affineIndex(int64_t c, int v, int64_t u) {
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

}  // namespace texc::loops
