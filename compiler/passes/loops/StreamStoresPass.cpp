// stream-stores: stores of tensors larger than the last-level cache, written once, become
// non-temporal (loops/StreamStores.h); the threshold is the target CPU's last-level cache
// (--cpu: sysconf for the host, 32 MiB for a named CPU). CPU target only.
#include "compiler/loops/StreamStores.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

bool runStreamStores(CompileState& s) {
  return loops::markStreamingStores(*s.loops, loops::scheduleMachine(s.options.cpu, s.options.threads).l3Bytes) > 0;
}

}  // namespace texc
