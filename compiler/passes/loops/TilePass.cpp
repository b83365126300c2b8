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
  return loops::tileContractions(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads), s.options.schedule) > 0;
}

}  // namespace texc
