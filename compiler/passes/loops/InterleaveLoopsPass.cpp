// interleave-loops: innermost vector loops that call transcendental functions keep several
// vectors in flight per iteration (loops/InterleaveLoops.h), for the target CPU's vector width
// (--cpu). CPU target only.
#include "compiler/loops/InterleaveLoops.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runInterleaveLoops(CompileState& s) {
  return loops::interleaveVectorLoops(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads).vectorFloats) > 0;
}

}  // namespace texc
