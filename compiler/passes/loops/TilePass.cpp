// tile: cache- and register-blocked contractions (TileContractions.h), with the schedule rule of
// Schedule.h for the target CPU (--cpu) and the user's overrides (--schedule FILE); --no-tile leaves
// it out of the pipeline.
#include "compiler/loops/TileContractions.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runTile(CompileState& s) {
  // The rule and the micro-kernel are the target CPU's. The pipeline runs this pass on the cpu
  // target with tiling on (Pipeline.cpp); the CUDA backend tiles contractions its own way
  // (through shared memory), from the untiled nest.
  loops::MachineInfo machine = loops::scheduleMachine(s.options.cpu, s.options.threads);
  // At -O0 LLVM lowers AMX tiles through its fast tile configuration, which crashed on the tiles
  // carried through the k loop (seen with LLVM 19): -O0 keeps to the vdpbf16ps micro-kernel.
  if (s.options.optLevel == 0) machine.amxBf16 = false;
  return loops::tileContractions(*s.loops, machine, s.options.schedule) > 0;
}

}  // namespace texc
