// CodeGenCUDA: loop IR -> readable CUDA C, one `extern "C" __global__` function per kernel.
//
// Each kernel takes every buffer of the program as a parameter, in buffer order (const unless it
// is the kernel's output), so the launcher passes the same pointer table to every kernel. Each
// kernel is mapped onto a 1-D grid by one of four strategies (docs/cuda.md):
//   grid-stride      the left-hand loops flattened into one index t that each thread strides
//                    over (t = blockIdx.x*B+threadIdx.x, step gridDim.x*B); reductions run
//                    serially in the thread;
//   block-reduce     one block per output element (row), its threads striding over the
//                    reduction, combined with warp shuffles and a shared-memory step;
//   row-block        one block per row of a fused row kernel (softmax, layernorm): each loop of
//                    the row body is strided over the block's threads, each reduction in it
//                    combined across the block and broadcast to every thread;
//   tiled-contract   a sum over one variable k of terms that read (i,k) and (k,j) tiles, staged
//                    through shared memory, each thread computing a register block of outputs
//                    (128x128 tiles of 8x8 per thread, 64x64 of 4x4 for smaller outputs),
//                    double-buffered so the next k-step loads while this one computes.
// Skipped terms keep the loop IR's guards; f16/bf16 are held as 16-bit integers and converted
// with the same rounding as the CPU backend. The source is plain enough to compile as C++ against
// an emulation header (tests/unit/cuda/CudaEmulation.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc {

enum class CudaStrategy : uint8_t { GridStride, BlockReduce, TiledContraction, RowBlock };
const char* strategyName(CudaStrategy s);

struct CudaKernel {
  std::string symbol;      // the extern "C" name
  std::string loopKernel;  // the loop IR kernel it comes from
  CudaStrategy strategy = CudaStrategy::GridStride;
  int64_t blocks = 1;  // 1-D grid
  int threads = 256;   // per block
  std::vector<std::string> paramTypes;  // one C type per buffer, in buffer order
  std::vector<std::string> mapping;     // "i → blockIdx.x*256+threadIdx.x" lines
};

struct CudaModule {
  std::string source;
  std::vector<CudaKernel> kernels;  // in program order
};

struct CudaCodeGenOptions {
  std::string symbolPrefix = "texc_";
  int threadsPerBlock = 256;     // grid-stride, block-reduce and row-block kernels; a power of two >= 32
  int64_t maxBlocks = 8192;      // the grid-stride loops cover the rest
  bool blockReductions = true;   // block-reduce where it fits (else grid-stride); false also disables row-block
  bool rowBlocks = true;         // row-block where it fits (else grid-stride)
  bool tiledContractions = true;  // tiled-contract where it fits (else grid-stride)
};

CudaModule generateCUDA(const loops::LoopProgram& program, const CudaCodeGenOptions& options = {});

// Checks what the launcher relies on: one kernel per loop kernel, each defined in the source under
// its symbol, a launch shape the hardware accepts (1 <= blocks < 2^31, threads a multiple of 32
// up to 1024), one parameter per buffer. (NVRTC checks the rest.) Returns the problems found.
std::vector<std::string> verifyCudaModule(const CudaModule& module, const loops::LoopProgram& program);

}  // namespace texc
