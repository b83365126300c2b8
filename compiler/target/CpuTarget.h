// The CPU that CPU code is generated for (--cpu NAME): its LLVM name, its instruction-set features,
// and the facts the schedule rule and the vector math read from them. Plain data; resolving a name
// asks LLVM's target tables, so code for any CPU can be emitted on any host (docs/cli.md, "--cpu").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace texc {

struct CpuTarget {
  std::string name;                   // an LLVM CPU name: "haswell", "skylake-avx512", ...
  std::vector<std::string> features;  // "+avx2", "-avx512f", ...: sorted, over the keys the host reports
  bool host = false;                  // --cpu host (or the host's own name): caches come from sysconf
  int64_t l1Bytes = 32 * 1024;        // L1 data cache per core
  int64_t l2Bytes = 512 * 1024;       // L2 per core
  int64_t l3Bytes = 32 * 1024 * 1024; // last-level cache, shared by the cores
  std::string cacheSource;            // "sysconf" or "defaults for NAME" (for the explanation)

  bool has(const std::string& feature) const;  // feature without the sign: has("avx512f")
  int vectorFloats() const;                    // f32 lanes of one vector register: 16, 8 or 4
  int vectorRegisters() const;                 // architectural vector registers: 32 or 16
  std::string isaName() const;                 // "avx512", "avx2" or "sse"
  // One line for `texc passes` and `explain`: "sapphirerapids (host): avx512, 32 x 512-bit ...".
  std::string describe() const;
};

// "host" (or "") is the machine texc runs on; any other NAME must be a CPU that LLVM's x86 target
// knows. Throws std::invalid_argument naming a few valid CPUs otherwise. Resolved once per name.
const CpuTarget& cpuTarget(const std::string& name);

// Whether `name` (an LLVM CPU name: "znver4", "bdver2", "k8", ...) is one of AMD's cores.
bool isAmdCpu(const std::string& name);

// The instruction-set features `cpu` has that this host lacks ("avx512f", "sse4a", ...): the vector
// and arithmetic extensions only, since texc's kernels use no system instructions (pku, shstk, ...).
// Empty when code for `cpu` runs here.
std::vector<std::string> missingHostFeatures(const CpuTarget& cpu);

// Whether code for `cpu` may use AMX tiles (amx-tile and amx-bf16): the CPU has them, and when this
// host has them too, Linux has granted the process the tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, asked once here; without it the first tile instruction faults). Code for
// an AMX CPU on a host without AMX is for another machine and keeps its tiles.
bool amxUsable(const CpuTarget& cpu);

}  // namespace texc
