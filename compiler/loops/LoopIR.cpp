#include "compiler/loops/LoopIR.h"

#include "compiler/loops/Walk.h"

namespace texc::loops {

std::vector<bool> buffersStored(const LoopProgram& p, const Kernel& k) {
  std::vector<bool> out(p.buffers.size(), false);
  forEachAccess(k.body, [](const Expr&) {}, [&](const Store& s) { out[s.buffer] = true; });
  return out;
}

}  // namespace texc::loops
