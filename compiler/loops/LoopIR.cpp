#include "compiler/loops/LoopIR.h"

namespace texc::loops {

bool usesVar(const IndexExpr& ix, int var) {
  if (ix.kind == IndexExpr::Kind::Var) return ix.var == var;
  for (const IndexExpr& o : ix.ops)
    if (usesVar(o, var)) return true;
  return false;
}

bool sameIndex(const IndexExpr& a, const IndexExpr& b) {
  if (a.kind != b.kind || a.ops.size() != b.ops.size()) return false;
  switch (a.kind) {
    case IndexExpr::Kind::Const: return a.constant == b.constant;
    case IndexExpr::Kind::Var: return a.var == b.var;
    default: break;
  }
  if (a.constant != b.constant) return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!sameIndex(a.ops[i], b.ops[i])) return false;
  return true;
}

void forEachLoad(const Expr& e, const std::function<void(const Expr&)>& f) {
  if (e.kind == ExprKind::Load) f(e);
  for (const Expr& a : e.args) forEachLoad(a, f);
}

void forEachAccess(const std::vector<Stmt>& body, const std::function<void(const Expr&)>& load,
                   const std::function<void(const Stmt&)>& store) {
  for (const Stmt& s : body) {
    switch (s.kind) {
      case StmtKind::Loop:
      case StmtKind::Guard: forEachAccess(s.body, load, store); break;
      case StmtKind::Store:
        forEachLoad(s.value, load);
        store(s);
        break;
      case StmtKind::AccUpdate: forEachLoad(s.value, load); break;
      case StmtKind::AccInit: break;
      case StmtKind::Pack: forEachLoad(s.value, load); break;
      case StmtKind::Tile:
        forEachLoad(s.value, load);
        forEachAccess(s.body, load, store);
        break;
    }
  }
}

std::vector<bool> buffersStored(const LoopProgram& p, const Kernel& k) {
  std::vector<bool> out(p.buffers.size(), false);
  forEachAccess(k.body, [](const Expr&) {}, [&](const Stmt& s) { out[s.buffer] = true; });
  return out;
}

}  // namespace texc::loops
