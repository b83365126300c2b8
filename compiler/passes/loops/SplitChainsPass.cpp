// split-chains: vector loops whose bodies are one long chain of dependent arithmetic (exp, tanh
// and the like) run in blocks, each block as two or three loops that each do one stretch of the
// chain, the values crossing a cut kept in L1 arrays (loops/SplitChains.h), on targets with 16
// vector registers (--cpu). CPU target only.
#include "compiler/loops/SplitChains.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runSplitChains(CompileState& s) {
  const int64_t block = s.options.phaseBlock > 0 ? s.options.phaseBlock : loops::kPhaseBlock;
  return loops::splitChains(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads).vectorRegisters, block) > 0;
}

}  // namespace texc
