#include "compiler/loops/SinkUnitLoops.h"

#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

bool sinkOne(Kernel& k) {
  if (k.body.size() != 1) return false;
  // The chain of unit loops, each exactly the next loop's parent, down to the first longer loop.
  std::vector<Loop*> nest = perfectNest(k.body[0]);
  if (nest.empty() || !nest[0]->parallel || nest[0]->extent != 1) return false;
  size_t longerAt = 1;
  while (longerAt < nest.size() && nest[longerAt]->extent == 1) ++longerAt;
  if (longerAt == nest.size()) return false;
  Stmt& longer = nest[longerAt - 1]->body[0];
  // The longer loop becomes the parallel one only where threads may share it: a k-block loop
  // carries the partial sums in C from one block to the next, and two threads would race on them.
  if (!nest::parallelProblem(k, longer.as<Loop>()).empty()) return false;
  if (!anyStmt(longer.as<Loop>().body, [](const Stmt& s) { return s.is<Loop>(); })) {
    // The innermost loop, which the vectorizer widens: it stays innermost and becomes the
    // parallel loop too (as a rank-1 kernel's only loop is); the unit loops go, their variables
    // replaced by 0.
    std::vector<int> units;
    for (size_t d = 0; d < longerAt; ++d) units.push_back(nest[d]->var);
    Loop only = std::move(longer.as<Loop>());
    for (int v : units) substitute(only.body, v, IndexExpr::makeConst(0));
    only.parallel = true;
    k.parallelExtent = only.extent;
    k.body[0] = std::move(only);
    return true;
  }

  Loop moved = std::move(longer.as<Loop>());
  nest[longerAt - 1]->body = std::move(moved.body);  // the unit loops now hold what the longer loop held
  moved.body.clear();
  nest[0]->parallel = false;
  moved.body.push_back(std::move(k.body[0]));
  moved.parallel = true;
  k.parallelExtent = moved.extent;
  k.body[0] = std::move(moved);
  return true;
}

}  // namespace

int sinkUnitLoops(LoopProgram& p) {
  int rewritten = 0;
  for (Kernel& k : p.kernels) rewritten += sinkOne(k) ? 1 : 0;
  return rewritten;
}

}  // namespace texc::loops
