#include "compiler/loops/SinkUnitLoops.h"

#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

bool holdsLoop(const std::vector<Stmt>& stmts) {
  for (const Stmt& s : stmts)
    if (s.kind == StmtKind::Loop || holdsLoop(s.body)) return true;
  return false;
}

bool sinkOne(Kernel& k) {
  if (k.body.size() != 1) return false;
  Stmt* top = &k.body[0];
  if (top->kind != StmtKind::Loop || !top->parallel || top->extent != 1) return false;
  // The chain of unit loops, each exactly the next loop's parent, down to the first longer loop.
  Stmt* lastUnit = top;
  while (lastUnit->body.size() == 1 && lastUnit->body[0].kind == StmtKind::Loop && lastUnit->body[0].extent == 1)
    lastUnit = &lastUnit->body[0];
  if (lastUnit->body.size() != 1 || lastUnit->body[0].kind != StmtKind::Loop) return false;
  Stmt& longer = lastUnit->body[0];
  if (!holdsLoop(longer.body)) {
    // The innermost loop, which the vectorizer widens: it stays innermost and becomes the
    // parallel loop too (as a rank-1 kernel's only loop is); the unit loops go, their variables
    // replaced by 0.
    std::vector<int> units;
    for (const Stmt* l = top; l != &longer; l = &l->body[0]) units.push_back(l->var);
    Stmt only = std::move(longer);
    for (int v : units) nest::substitute(only.body, v, IndexExpr::makeConst(0));
    only.parallel = true;
    k.body[0] = std::move(only);
    k.parallelExtent = k.body[0].extent;
    return true;
  }

  Stmt moved = std::move(longer);
  lastUnit->body = std::move(moved.body);  // the unit loops now hold what the longer loop held
  moved.body.clear();
  moved.body.push_back(std::move(k.body[0]));
  moved.parallel = true;
  moved.body[0].parallel = false;
  k.body[0] = std::move(moved);
  k.parallelExtent = k.body[0].extent;
  return true;
}

}  // namespace

int sinkUnitLoops(LoopProgram& p) {
  int rewritten = 0;
  for (Kernel& k : p.kernels) rewritten += sinkOne(k) ? 1 : 0;
  return rewritten;
}

}  // namespace texc::loops
