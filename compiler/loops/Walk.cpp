#include "compiler/loops/Walk.h"

#include <utility>

namespace texc::loops {

Block* nestedBlock(Stmt& s) {
  if (auto* l = s.getIf<Loop>()) return &l->body;
  if (auto* g = s.getIf<Guard>()) return &g->body;
  if (auto* t = s.getIf<Tile>()) return &t->epilogue;
  return nullptr;
}

const Block* nestedBlock(const Stmt& s) { return nestedBlock(const_cast<Stmt&>(s)); }

namespace {

// One walk for both constnesses: S is Stmt or const Stmt.
template <class S, class Visit>
bool walkImpl(std::conditional_t<std::is_const_v<S>, const Block, Block>& block, const Visit& visit) {
  for (S& s : block) {
    WalkAction a = visit(s);
    if (a == WalkAction::Stop) return false;
    if (a == WalkAction::SkipNested) continue;
    if (auto* nested = nestedBlock(s))
      if (!walkImpl<S>(*nested, visit)) return false;
  }
  return true;
}

template <class S, class Visit>
bool walkPathImpl(std::conditional_t<std::is_const_v<S>, const Block, Block>& block, std::vector<S*>& path,
                  const Visit& visit) {
  for (S& s : block) {
    WalkAction a = visit(s, std::as_const(path));
    if (a == WalkAction::Stop) return false;
    if (a == WalkAction::SkipNested) continue;
    if (auto* nested = nestedBlock(s)) {
      path.push_back(&s);
      bool go = walkPathImpl<S>(*nested, path, visit);
      path.pop_back();
      if (!go) return false;
    }
  }
  return true;
}

}  // namespace

bool walk(const Block& block, const std::function<WalkAction(const Stmt&)>& visit) {
  return walkImpl<const Stmt>(block, visit);
}

bool walk(Block& block, const std::function<WalkAction(Stmt&)>& visit) { return walkImpl<Stmt>(block, visit); }

void walkWithEnclosing(const Block& block,
                       const std::function<WalkAction(const Stmt&, const std::vector<const Stmt*>&)>& visit) {
  std::vector<const Stmt*> path;
  walkPathImpl<const Stmt>(block, path, visit);
}

void walkWithEnclosing(Block& block, const std::function<WalkAction(Stmt&, const std::vector<Stmt*>&)>& visit) {
  std::vector<Stmt*> path;
  walkPathImpl<Stmt>(block, path, visit);
}

void forEachStmt(const Block& block, const std::function<void(const Stmt&)>& f) {
  walk(block, [&](const Stmt& s) {
    f(s);
    return WalkAction::Advance;
  });
}

void forEachStmt(Block& block, const std::function<void(Stmt&)>& f) {
  walk(block, [&](Stmt& s) {
    f(s);
    return WalkAction::Advance;
  });
}

const Expr& valueToRound(const LoopProgram& p, const Store& st) {
  const DType t = p.buffers[st.buffer].dtype;
  const bool rounded = st.value.kind == ExprKind::Call && ((st.value.builtin == Builtin::RoundBF16 && t == DType::BF16) ||
                                                           (st.value.builtin == Builtin::RoundF16 && t == DType::F16));
  return rounded ? st.value.args[0] : st.value;
}

void forEachInnermostLoop(Block& block, const std::function<void(Loop&)>& f) {
  walk(block, [&](Stmt& s) {
    if (s.is<Tile>()) return WalkAction::SkipNested;
    if (!s.is<Loop>() || anyStmt(s.as<Loop>().body, [](const Stmt& c) { return c.is<Loop>(); })) return WalkAction::Advance;
    f(s.as<Loop>());
    return WalkAction::SkipNested;
  });
}

bool anyStmt(const Block& block, const std::function<bool(const Stmt&)>& pred) {
  return !walk(block, [&](const Stmt& s) { return pred(s) ? WalkAction::Stop : WalkAction::Advance; });
}

int64_t countStmts(const Block& block) {
  int64_t n = 0;
  forEachStmt(block, [&](const Stmt&) { ++n; });
  return n;
}

void rewrite(Block& block, const std::function<std::optional<Block>(Stmt&)>& f) {
  Block out;
  out.reserve(block.size());
  for (Stmt& s : block) {
    if (Block* nested = nestedBlock(s)) rewrite(*nested, f);
    if (std::optional<Block> replaced = f(s))
      for (Stmt& r : *replaced) out.push_back(std::move(r));
    else
      out.push_back(std::move(s));
  }
  block = std::move(out);
}

void forEachExprNode(Expr& e, const std::function<void(Expr&)>& f) {
  f(e);
  for (Expr& a : e.args) forEachExprNode(a, f);
}

void forEachExprNode(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const Expr& a : e.args) forEachExprNode(a, f);
}

void forEachIndexIn(Expr& e, const std::function<void(IndexExpr&)>& f) {
  forEachExprNode(e, [&](Expr& n) {
    for (IndexExpr& ix : n.index) f(ix);
  });
}

void forEachIndexIn(const Expr& e, const std::function<void(const IndexExpr&)>& f) {
  forEachExprNode(e, [&](const Expr& n) {
    for (const IndexExpr& ix : n.index) f(ix);
  });
}

void forEachLoad(const Expr& e, const std::function<void(const Expr&)>& f) {
  forEachExprNode(e, [&](const Expr& n) {
    if (n.kind == ExprKind::Load) f(n);
  });
}

Expr* valueOf(Stmt& s) {
  if (auto* st = s.getIf<Store>()) return &st->value;
  if (auto* u = s.getIf<AccUpdate>()) return &u->value;
  if (auto* a = s.getIf<AccSet>()) return &a->value;
  if (auto* p = s.getIf<Pack>()) return &p->value;
  if (auto* t = s.getIf<Tile>()) return &t->value;
  return nullptr;
}

const Expr* valueOf(const Stmt& s) { return valueOf(const_cast<Stmt&>(s)); }

void forEachIndexOf(Stmt& s, const std::function<void(IndexExpr&)>& f) {
  if (auto* st = s.getIf<Store>())
    for (IndexExpr& ix : st->index) f(ix);
  if (auto* g = s.getIf<Guard>())
    for (GuardCond& c : g->conds) f(c.index);
  forEachOuterIndex(s, f);
  if (auto* p = s.getIf<Pack>())
    for (GuardCond& c : p->padding) f(c.index);
  if (auto* t = s.getIf<Tile>())
    for (GuardCond& c : t->colPadding) f(c.index);
  if (Expr* v = valueOf(s)) forEachIndexIn(*v, f);
}

void forEachOuterIndex(Stmt& s, const std::function<void(IndexExpr&)>& f) {
  if (auto* p = s.getIf<Pack>()) {
    f(p->base);
    f(p->k.base);
  }
  if (auto* t = s.getIf<Tile>()) {
    f(t->rowBase);
    f(t->colBase);
    f(t->k.base);
    f(t->blockRow);
    f(t->blockCol);
    f(t->sumRow);
    f(t->sumCol);
  }
}

void forEachIndexOf(const Stmt& s, const std::function<void(const IndexExpr&)>& f) {
  forEachIndexOf(const_cast<Stmt&>(s), [&](IndexExpr& ix) { f(ix); });
}

void forEachAccess(const Block& body, const std::function<void(const Expr&)>& load,
                   const std::function<void(const Store&)>& store) {
  forEachStmt(body, [&](const Stmt& s) {
    if (const Expr* v = valueOf(s)) forEachLoad(*v, load);
    if (auto* st = s.getIf<Store>()) store(*st);
  });
}

std::vector<int> boundVars(const Stmt& s) {
  if (auto* l = s.getIf<Loop>()) return {l->var};
  if (auto* t = s.getIf<Tile>()) return {t->rowVar, t->colVar, t->k.var};
  if (auto* p = s.getIf<Pack>()) return {p->var, p->k.var};
  return {};
}

bool loadsFrom(const Expr& e, int buffer) {
  bool found = false;
  forEachLoad(e, [&](const Expr& load) { found = found || load.buffer == buffer; });
  return found;
}

bool isTranscendental(Builtin b) {
  return b == Builtin::Exp || b == Builtin::Log || b == Builtin::Tanh || b == Builtin::Sigmoid || b == Builtin::Erf || b == Builtin::Sin ||
         b == Builtin::Cos || b == Builtin::Pow;
}

bool callsTranscendental(const Expr& e) {
  bool found = false;
  forEachExprNode(e, [&](const Expr& n) { found = found || (n.kind == ExprKind::Call && isTranscendental(n.builtin)); });
  return found;
}

}  // namespace texc::loops
