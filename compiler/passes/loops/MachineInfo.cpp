#include "compiler/passes/loops/MachineInfo.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <thread>

namespace texc::loops {

namespace {

// LLVM's names of the AMD cores before Zen 4 (K8 to Zen 3): their prefetches all fill L1.
bool amdBeforeZen4(const std::string& name) {
  static const char* const kNames[] = {"k8",       "k8-sse3",  "opteron", "opteron-sse3", "athlon64", "athlon64-sse3",
                                       "athlon-fx", "amdfam10", "barcelona", "btver1", "btver2", "bdver1",
                                       "bdver2",   "bdver3",   "bdver4",  "znver1",       "znver2",   "znver3"};
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

}  // namespace

MachineInfo machineInfo(const CpuTarget& cpu) {
  MachineInfo m;
  m.vectorFloats = cpu.vectorFloats();
  m.vectorRegisters = cpu.vectorRegisters();
  m.l1Bytes = cpu.l1Bytes;
  m.l2Bytes = cpu.l2Bytes;
  m.l3Bytes = cpu.l3Bytes;
  m.bf16Dot = m.vectorFloats == 16 && cpu.has("avx512bf16");
  m.amxBf16 = m.bf16Dot && amxUsable(cpu);
  m.prefetchFillsL1 = amdBeforeZen4(cpu.name);
  m.underflowAssist = !isAmdCpu(cpu.name);
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
