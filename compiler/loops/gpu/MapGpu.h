// map-gpu: chooses each kernel's GPU mapping (docs/cuda.md, "Mapping rules"): the strategy with
// its legality (GpuLegality.h), the launch shape, float4 vectorization, the tile and register
// block of a tiled contraction, and the notes that say where each loop variable went; marks every
// loop it maps with where its iterations go (Loop::gpu). CUDA pipeline only.
#pragma once

#include "compiler/loops/LoopIR.h"
#include "compiler/loops/gpu/GpuLegality.h"

namespace texc::loops::gpu {

// Maps one kernel (replacing any mapping it had, and its loop marks).
void mapGpuKernel(const LoopProgram& p, Kernel& k, const GpuMapOptions& o = {});

// Maps every kernel; returns how many were mapped.
int mapGpu(LoopProgram& p, const GpuMapOptions& o = {});

}  // namespace texc::loops::gpu
