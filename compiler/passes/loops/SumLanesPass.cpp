// sum-lanes: the order of every sum's terms, fixed from the loop alone, so that a sum gives the
// same bits in every kernel and on every CPU (loops/SumLanes.h). CPU target only.
#include "compiler/loops/SumLanes.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runSumLanes(CompileState& s) {
  s.sumOrderDecisions.clear();
  return loops::pinSumLanes(*s.loops, &s.sumOrderDecisions) > 0;
}

}  // namespace texc
