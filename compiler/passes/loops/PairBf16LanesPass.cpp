// pair-bf16-lanes: innermost loops over bf16 rows run over pairs of elements, each pair read and
// written as one 32-bit word (loops/PairBf16Lanes.h). CPU target only.
#include "compiler/loops/PairBf16Lanes.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runPairBf16Lanes(CompileState& s) { return loops::pairBf16Lanes(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads).vectorRegisters) > 0; }

}  // namespace texc
