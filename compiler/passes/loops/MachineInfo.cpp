#include "compiler/passes/loops/MachineInfo.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace texc::loops {

MachineInfo machineInfo(const CpuTarget& cpu) {
  MachineInfo m;
  m.vectorFloats = cpu.vectorFloats();
  m.vectorRegisters = cpu.vectorRegisters();
  m.l1Bytes = cpu.l1Bytes;
  m.l2Bytes = cpu.l2Bytes;
  m.l3Bytes = cpu.l3Bytes;
  m.bf16Dot = m.vectorFloats == 16 && cpu.has("avx512bf16");
  m.amxBf16 = m.bf16Dot && amxUsable(cpu);
  m.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  m.source = fmt::format("{}{}, {}, {} {}-bit registers; caches {}", cpu.name, cpu.host ? " (host)" : "", cpu.isaName(),
                         m.vectorRegisters, m.vectorFloats * 32, cpu.cacheSource);
  return m;
}

MachineInfo hostMachineInfo() { return machineInfo(cpuTarget("host")); }

MachineInfo scheduleMachine(const std::string& cpu, int threads) {
  MachineInfo m = machineInfo(cpuTarget(cpu));
  if (threads > 0) m.threads = threads;
  return m;
}

}  // namespace texc::loops
