#include "compiler/loops/SumLanes.h"

#include "compiler/loops/InterleaveLoops.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

bool canKeepSumLanes(const Loop& l, std::string* why) {
  auto fail = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (l.scalar || l.parallel || l.gpu != GpuLoop::None) return fail("it is a scalar, parallel or GPU loop");
  if (anyStmt(l.body, [](const Stmt& s) { return s.is<Loop>() || s.is<Tile>(); })) return fail("it holds a loop");
  bool sums = false, inOrder = true;
  forEachStmt(l.body, [&](const Stmt& s) {
    if (s.is<AccUpdate>()) sums = sums || s.as<AccUpdate>().reduce == ReduceKind::Sum || s.as<AccUpdate>().reduce == ReduceKind::Prod;
    if (s.is<Store>()) inOrder = inOrder && (!usesVar(s.as<Store>().index, l.var) || walksLastDimension(s.as<Store>().index, l.var));
    if (const Expr* v = valueOf(s)) forEachLoad(*v, [&](const Expr& e) { inOrder = inOrder && (!usesVar(e.index, l.var) || walksLastDimension(e.index, l.var)); });
  });
  if (!sums) return fail("it adds up no sum or product");
  if (!l.vectorize && !inOrder) return fail("it is not a vector loop and strides across memory");
  return true;
}

int64_t sumLanesFor(const Loop& l, DType dtype, int vectorFloats) {
  if (!canKeepSumLanes(l)) return 0;
  const int64_t w = dtype == DType::F64 ? vectorFloats / 2 : vectorFloats;
  const int64_t terms = l.pairs ? l.extent / 2 : l.extent;
  if (terms >= kInterleaveVectors * w) return kInterleaveVectors * w;
  return terms >= w ? w : 0;
}

int pinSumLanes(LoopProgram& p, int vectorFloats) {
  int marked = 0;
  for (Kernel& k : p.kernels)
    forEachInnermostLoop(k.body, [&](Loop& l) {
      l.sumLanes = sumLanesFor(l, k.computeType, vectorFloats);
      marked += l.sumLanes > 0;
    });
  return marked;
}

}  // namespace texc::loops
