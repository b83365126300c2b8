// sum-lanes: the order of every sum's terms, fixed from the loop and the target's vector width
// (--cpu), so that a sum gives the same bits in every kernel (loops/SumLanes.h). CPU target only.
#include "compiler/loops/SumLanes.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runSumLanes(CompileState& s) {
  s.sumOrderDecisions.clear();
  return loops::pinSumLanes(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads).vectorFloats, &s.sumOrderDecisions) > 0;
}

}  // namespace texc
