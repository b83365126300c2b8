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

namespace {
void markStores(const std::vector<Stmt>& stmts, std::vector<bool>& out) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Store) out[s.buffer] = true;
    markStores(s.body, out);
  }
}
}  // namespace

std::vector<bool> buffersStored(const LoopProgram& p, const Kernel& k) {
  std::vector<bool> out(p.buffers.size(), false);
  markStores(k.body, out);
  return out;
}

}  // namespace texc::loops
