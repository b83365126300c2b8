// sync-gpu-threads: in each row-block kernel that map-gpu chose, places the cross-thread combines
// (the row accumulators a phase reduces, combined across the block and broadcast) and the
// barriers (a phase that reads what other threads wrote, or overwrites what they use; the end of
// a row whose buffers other rows touch) as GpuMapping::sync (docs/cuda.md, rule 3). CUDA only.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops::gpu {

// Places one kernel's combines and barriers (a kernel that is not row-block gets none).
void syncGpuThreadsKernel(const LoopProgram& p, Kernel& k);

// Every mapped kernel; returns how many row-block kernels got combines.
int syncGpuThreads(LoopProgram& p);

}  // namespace texc::loops::gpu
