#include "compiler/loops/gpu/SyncGpuThreads.h"

#include <stdexcept>

#include "compiler/loops/gpu/GpuLegality.h"

namespace texc::loops::gpu {

void syncGpuThreadsKernel(const LoopProgram& p, Kernel& k) {
  if (!k.gpu) return;
  GpuMapping& m = *k.gpu;
  m.sync.clear();
  m.rowEndBarrier.clear();
  m.synced = true;
  if (m.strategy != GpuStrategy::RowBlock) return;
  KernelShape shape = kernelShape(k);
  GpuMapOptions o;
  o.threadsPerBlock = m.threads;
  std::optional<RowPlan> plan = planRowBlock(p, k, shape, o);
  if (!plan) throw std::logic_error("sync-gpu-threads: kernel " + k.name + " is mapped row-block, but its row body is not one");
  const bool severalWarps = m.threads > 32;
  // A phase waits for the block when it reads an element written since the last barrier, or
  // writes one read or written since then, unless the same thread made that access (sameThread).
  std::vector<std::pair<const RowPhase*, RowAccess>> since;
  for (const RowPhase& ph : plan->phases) {
    GpuRowSync s;
    s.stmt = static_cast<int>(ph.stmt);
    bool readAfterWrite = false, writeAfterUse = false;
    for (const auto& [before, a] : since)
      for (const RowAccess& b : ph.accesses) {
        if (a.buffer != b.buffer || !(a.write || b.write) || sameThread(*before, a, ph, b)) continue;
        (b.write ? writeAfterUse : readAfterWrite) = true;
      }
    if (readAfterWrite) s.barrierBefore = "this phase reads what other threads wrote";
    else if (writeAfterUse) s.barrierBefore = "this phase overwrites what other threads use";
    if (!s.barrierBefore.empty()) since.clear();
    for (const RowAccess& a : ph.accesses) since.push_back({&ph, a});
    s.accs = ph.reduced;
    s.kinds = ph.kinds;
    // Combining over several warps goes through shared memory between two barriers, which also
    // order everything stored before them.
    if (!s.accs.empty() && severalWarps) since.clear();
    m.sync.push_back(std::move(s));
  }
  if (!since.empty() && !rowPrivate(p, shape)) m.rowEndBarrier = "the block's next row may touch what this row touched";
}

int syncGpuThreads(LoopProgram& p) {
  int n = 0;
  for (Kernel& k : p.kernels) {
    syncGpuThreadsKernel(p, k);
    if (k.gpu && !k.gpu->sync.empty()) ++n;
  }
  return n;
}

}  // namespace texc::loops::gpu
