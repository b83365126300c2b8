// The CUDA emulation as a variant of the differential tester: a program's generated CUDA C is
// compiled as C++ with the host compiler against tests/unit/cuda/CudaEmulation.h (fibers for the
// threads of a block, real barriers and shuffles) and run on the CPU in a device-like arena laid
// out by the memory plan, exactly as CudaExecutable lays out the GPU's (docs/testing.md).
#pragma once

#include <string>

#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/MemoryPlan.h"

namespace texc::random {

// Builds the emulation header once per process (precompiled, so that each program's kernels
// compile in about 0.2 s). Returns "" when ready, else why the emulation cannot run (no C++
// compiler). Later calls return the first answer. Call it before forking checks.
const std::string& prepareCudaEmulation();

// Compiles `module` and runs its kernels in program order. `host[b]` is loop buffer b's memory:
// inputs are copied into the arena first, outputs out of it at the end (every other byte of the
// arena starts as 0xFF, a NaN in every dtype). Throws std::runtime_error when the generated C
// does not compile (with the compiler's messages) or cannot be loaded.
void runEmulatedCuda(const CudaModule& module, const loops::LoopProgram& program, const loops::MemoryPlan* plan,
                     void* const* host);

}  // namespace texc::random
