#include "compiler/loops/InterleaveLoops.h"

#include "compiler/loops/Walk.h"

namespace texc::loops {

int interleaveVectorLoops(LoopProgram& p, int vectorFloats) {
  int marked = 0;
  for (Kernel& k : p.kernels)
    forEachInnermostLoop(k.body, [&](Loop& l) {
      if (!l.vectorize) return;
      bool heavy = false;
      forEachStmt(l.body, [&](const Stmt& c) {
        if (const Expr* v = valueOf(c)) heavy = heavy || callsTranscendental(*v);
      });
      if (heavy && l.extent >= 2 * int64_t{kInterleaveVectors} * vectorFloats) {
        l.interleave = kInterleaveVectors;
        ++marked;
      }
    });
  return marked;
}

}  // namespace texc::loops
