// stream-stores: stores of tensors larger than the last-level cache, written once, become
// non-temporal (loops/StreamStores.h); the threshold is the target CPU's last-level cache
// (--cpu: sysfs for the host, 32 MiB for a named CPU), counted as at most kLastLevelCacheCap.
// CPU target only. Where the CPU's prefetches fill L1 (MachineInfo::prefetchFillsL1), only a
// row's last pass asks for the next row.
#include <algorithm>

#include "compiler/loops/StreamStores.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/loops/MachineInfo.h"

namespace texc {

namespace {

// The most last-level cache one program's cores can count on. A virtual machine reports its
// socket's L3, shared with every other core of the socket (and their tenants): 480 MiB on a
// 2-core Xeon of the Sapphire Rapids class, which kept a 64 MiB GELU output in ordinary stores,
// 1.32x slower than streamed (16.5 -> 12.5 ms, 1 thread). 32 MiB is one AMD CCD's L3, the figure
// every host before it reported, so their choices are unchanged.
constexpr int64_t kLastLevelCacheCap = int64_t{32} << 20;

}  // namespace

bool runStreamStores(CompileState& s) {
  const loops::MachineInfo m = loops::scheduleMachine(s.options.cpu, s.options.threads);
  return loops::markStreamingStores(*s.loops, std::min(m.l3Bytes, kLastLevelCacheCap), m.prefetchFillsL1) > 0;
}

}  // namespace texc
