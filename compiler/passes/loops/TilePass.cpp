// tile: cache- and register-blocked contractions (TileContractions.h), with the schedule rule of
// Schedule.h for the target CPU (--cpu) and the user's overrides (--schedule FILE); --no-tile skips it.
#include "compiler/loops/TileContractions.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runTile(CompileState& s) {
  // The rule and the micro-kernel are the target CPU's; the CUDA backend tiles contractions its own
  // way (through shared memory), from the untiled nest.
  if (!s.options.tile || s.options.target == Target::Cuda) return false;
  loops::MachineInfo machine = loops::machineInfo(cpuTarget(s.options.cpu));
  if (s.options.threads > 0) machine.threads = s.options.threads;
  return loops::tileContractions(*s.loops, machine, s.options.schedule) > 0;
}

}  // namespace texc
