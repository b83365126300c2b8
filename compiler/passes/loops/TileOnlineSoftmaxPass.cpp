// tile-online-softmax: the one-pass online-softmax kernels of lowering, blocked over query rows
// and keys so that both contractions run on the register-blocked micro-kernel
// (loops/TileOnline.h), with the register tile of the target CPU (--cpu) and the schedule file's
// mr, nr, mc (query rows per block) and nc (keys per tile).
#include "compiler/loops/TileOnline.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runTileOnlineSoftmax(CompileState& s) {
  return loops::tileOnlineSoftmax(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads), s.options.schedule) > 0;
}

}  // namespace texc
