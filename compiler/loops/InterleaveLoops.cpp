#include "compiler/loops/InterleaveLoops.h"

#include "compiler/loops/Walk.h"

namespace texc::loops {

int interleaveVectorLoops(LoopProgram& p, int vectorFloats) {
  int marked = 0;
  for (Kernel& k : p.kernels)
    walk(k.body, [&](Stmt& s) {
      if (s.is<Tile>()) return WalkAction::SkipNested;
      if (!s.is<Loop>()) return WalkAction::Advance;
      Loop& l = s.as<Loop>();
      if (!l.vectorize || anyStmt(l.body, [](const Stmt& c) { return c.is<Loop>(); })) return WalkAction::Advance;
      bool heavy = false;
      forEachStmt(l.body, [&](const Stmt& c) {
        if (const Expr* v = valueOf(c)) heavy = heavy || callsTranscendental(*v);
      });
      if (heavy && l.extent >= 2 * int64_t{kInterleaveVectors} * vectorFloats) {
        l.interleave = kInterleaveVectors;
        ++marked;
      }
      return WalkAction::SkipNested;
    });
  return marked;
}

}  // namespace texc::loops
