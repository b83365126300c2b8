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

// Compiles `module` and runs its kernels in program order, twice: forward on an arena whose
// non-input bytes are 0, then adversarially (blocks and threads in reverse order, shared memory
// and every non-input byte of the arena 0xFF, a NaN in every dtype). `host[b]` is loop buffer b's
// memory: inputs are copied into the arena first, outputs of the second run out of it at the end.
// Throws std::runtime_error when the generated C does not compile (with the compiler's
// messages), cannot be loaded, or when the two runs' outputs differ in any bit.
void runEmulatedCuda(const CudaModule& module, const loops::LoopProgram& program, const loops::MemoryPlan* plan,
                     void* const* host);

}  // namespace texc::random
