// tile: cache- and register-blocked contractions (TileContractions.h), with the schedule rule of
// Schedule.h for this host and the user's overrides (--schedule FILE); --no-tile skips it.
#include "compiler/loops/TileContractions.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runTile(CompileState& s) {
  if (!s.options.tile) return false;
  return loops::tileContractions(*s.loops, loops::hostMachineInfo(), s.options.schedule) > 0;
}

}  // namespace texc
