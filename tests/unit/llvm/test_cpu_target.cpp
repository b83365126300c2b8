// CpuTarget (--cpu): named CPUs resolve to their features on any host, the schedule facts follow
// them, an unknown name is refused, and the host check names what a CPU needs that the host lacks.

#include <catch2/catch.hpp>

#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/loops/Schedule.h"
#include "compiler/passes/loops/MachineInfo.h"
#include "compiler/target/CpuTarget.h"

using texc::cpuTarget;

TEST_CASE("cpu target: named CPUs have their own features and machine facts on any host", "[llvm][cpu]") {
  const texc::CpuTarget& haswell = cpuTarget("haswell");
  CHECK(haswell.name == "haswell");
  CHECK_FALSE(haswell.host);
  CHECK(haswell.has("avx2"));
  CHECK(haswell.has("fma"));
  CHECK_FALSE(haswell.has("avx512f"));
  CHECK(haswell.vectorFloats() == 8);
  CHECK(haswell.vectorRegisters() == 16);
  CHECK(std::is_sorted(haswell.features.begin(), haswell.features.end()));

  const texc::CpuTarget& skx = cpuTarget("skylake-avx512");
  CHECK(skx.has("avx512f"));
  CHECK(skx.vectorFloats() == 16);
  CHECK(skx.vectorRegisters() == 32);
  // LLVM would prefer 256-bit vectors on Intel's AVX-512 parts; texc asks for the full width.
  CHECK(std::find(skx.features.begin(), skx.features.end(), "-prefer-256-bit") != skx.features.end());

  // The schedule rule reads the same facts; caches are the documented defaults unless the CPU is
  // the host's own.
  texc::loops::MachineInfo m = texc::loops::machineInfo(haswell);
  CHECK(m.vectorFloats == 8);
  CHECK(m.vectorRegisters == 16);
  if (haswell.name != cpuTarget("host").name) {
    CHECK(m.l1Bytes == 32 * 1024);
    CHECK(m.l2Bytes == 256 * 1024);
    CHECK(haswell.cacheSource == "defaults for haswell");
  }
  CHECK(m.source.find("haswell, avx2, 16 256-bit registers") == 0);
  CHECK(texc::loops::machineInfo(skx).vectorFloats == 16);
  // Prefetches fill L1 on AMD cores before Zen 4 only (stream-stores' next-row rule).
  CHECK_FALSE(m.prefetchFillsL1);
  CHECK_FALSE(texc::loops::machineInfo(skx).prefetchFillsL1);
  CHECK(texc::loops::machineInfo(cpuTarget("znver3")).prefetchFillsL1);
  CHECK(texc::loops::machineInfo(cpuTarget("znver2")).prefetchFillsL1);
  CHECK_FALSE(texc::loops::machineInfo(cpuTarget("znver4")).prefetchFillsL1);
  // Underflowing products take an assist on Intel cores, not on AMD's (exp[<=0]'s clamp form).
  CHECK(m.underflowAssist);
  CHECK(texc::loops::machineInfo(skx).underflowAssist);
  CHECK_FALSE(texc::loops::machineInfo(cpuTarget("znver4")).underflowAssist);
  CHECK_FALSE(texc::loops::machineInfo(cpuTarget("znver3")).underflowAssist);
  CHECK(texc::isAmdCpu("znver5"));
  CHECK(texc::isAmdCpu("bdver2"));
  CHECK_FALSE(texc::isAmdCpu("sapphirerapids"));
  CHECK_FALSE(texc::isAmdCpu("x86-64"));
}

TEST_CASE("cpu target: host is the machine texc runs on, and needs nothing it lacks", "[llvm][cpu]") {
  const texc::CpuTarget& host = cpuTarget("host");
  CHECK(host.host);
  CHECK(host.name == texc::hostCPUName());
  CHECK(&cpuTarget("") == &host);
  CHECK(texc::missingHostFeatures(host).empty());
  CHECK(host.describe().find("(host)") != std::string::npos);
}

TEST_CASE("cpu target: an unknown CPU is refused with examples", "[llvm][cpu]") {
  try {
    (void)cpuTarget("pentium-9000");
    FAIL("an unknown CPU was accepted");
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    CHECK(what.find("--cpu pentium-9000: not a CPU that LLVM knows") != std::string::npos);
    CHECK(what.find("haswell") != std::string::npos);
  }
}

TEST_CASE("cpu target: no host runs both an AMD-only and an Intel-only CPU's code", "[llvm][cpu]") {
  // znver3 has SSE4a (AMD only); sapphirerapids has AMX and AVX512-FP16 (Intel only). Whatever
  // the host, at least one of them needs a feature it lacks, and that feature is named.
  std::vector<std::string> amd = texc::missingHostFeatures(cpuTarget("znver3"));
  std::vector<std::string> intel = texc::missingHostFeatures(cpuTarget("sapphirerapids"));
  CHECK((!amd.empty() || !intel.empty()));
  for (const std::string& f : amd) CHECK(cpuTarget("znver3").has(f));
  for (const std::string& f : intel) CHECK(cpuTarget("sapphirerapids").has(f));
  // System features (protection keys, shadow stacks) never stop a run: no kernel uses them.
  for (const std::string& f : intel) {
    CHECK(f != "pku");
    CHECK(f != "shstk");
  }
}

TEST_CASE("cpu target: a TargetMachine for any CPU, on any host", "[llvm][cpu]") {
  for (const char* name : {"haswell", "skylake-avx512", "znver3", "sapphirerapids"}) {
    INFO(name);
    auto tm = texc::createTargetMachine(cpuTarget(name), 3);
    REQUIRE(tm);
    CHECK(tm->getTargetCPU().str() == name);
  }
}
