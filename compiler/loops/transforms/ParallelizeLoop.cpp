// parallel: chooses the loop whose iterations the runtime shares out between threads
// (LoopTransforms.h). The LLVM backend runs the top-level parallel loop over the chunk
// [lo, hi) it is called with, so the mark is legal only there, on one loop.
#include <fmt/format.h>

#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

void clearParallel(Block& body) {
  forEachStmt(body, [](Stmt& s) {
    if (auto* l = s.getIf<Loop>()) l->parallel = false;
  });
}

}  // namespace

std::string parallelizeLoop(Kernel& k, const std::string& var) {
  if (var.empty()) {
    clearParallel(k.body);
    nest::refreshParallelExtent(k);
    return "";
  }
  nest::Found f = nest::findLoop(k, var);
  if (!f.error.empty()) return f.error;
  if (std::string why = nest::checkTransformable(k, *f.loop); !why.empty()) return why;
  if (!f.topLevel)
    return "only a loop at the kernel's top level can be parallel (the runtime calls the kernel once per chunk of "
           "that loop); reorder it outermost first";
  if (std::string why = nest::parallelProblem(k, *f.loop); !why.empty()) return why;
  Loop* loop = f.loop;
  clearParallel(k.body);
  loop->parallel = true;
  nest::refreshParallelExtent(k);
  return "";
}

}  // namespace texc::loops
