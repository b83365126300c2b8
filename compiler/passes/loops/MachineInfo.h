// The schedule rule's machine facts (loops::MachineInfo, compiler/loops/Schedule.h) for a target
// CPU (compiler/target/CpuTarget.h). The loop layer takes them as plain data; this layer, which
// sees both, fills them in for the tile pass and `texc tune`.
#pragma once

#include <string>

#include "compiler/loops/Schedule.h"
#include "compiler/target/CpuTarget.h"

namespace texc::loops {

// The MachineInfo of `cpu` (--cpu): vector width and register count from its features, cache
// sizes from sysconf for the host, else the documented defaults for that CPU (CpuTarget.cpp).
// `threads` is the host's core count.
MachineInfo machineInfo(const CpuTarget& cpu);
MachineInfo hostMachineInfo();
// The machine the tiling passes schedule for: machineInfo of `cpu`, with `threads` (--threads)
// in place of the host's core count when it is set (> 0).
MachineInfo scheduleMachine(const std::string& cpu, int threads);

}  // namespace texc::loops
