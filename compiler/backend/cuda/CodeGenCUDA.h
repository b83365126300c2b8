// CodeGenCUDA: loop IR -> readable CUDA C, one `extern "C" __global__` function per kernel.
//
// Each kernel takes every buffer of the program as a parameter, in buffer order (const unless it
// is the kernel's output), so the launcher passes the same pointer table to every kernel. How a
// kernel maps onto the 1-D grid is not decided here: the loop-IR passes map-gpu and
// sync-gpu-threads (compiler/loops/gpu/) choose the strategy, the launch shape and where each
// loop's iterations go, and place the cross-thread combines and barriers; this file prints that
// mapping (docs/cuda.md):
//   grid-stride      the loops marked grid flattened into one index t that each thread strides
//                    over (t = blockIdx.x*B+threadIdx.x, step gridDim.x*B), four elements per
//                    thread with float4 accesses where the mapping says so;
//   block-reduce     one block per output element (loops marked blocks), its threads striding
//                    over the reduction (marked threads), combined with warp shuffles and a
//                    shared-memory step;
//   row-block        one block per row; each loop of the row body strided over the block's
//                    threads, with the combines and barriers of the mapping;
//   tiled-contract   the tile-rows and tile-cols loops in tiles of the mapping's size, the staged
//                    k loop through shared memory, double-buffered, register blocks per thread.
// Skipped terms keep the loop IR's guards; f16/bf16 are held as 16-bit integers and converted
// with the same rounding as the CPU backend. The source is plain enough to compile as C++ against
// an emulation header (tests/unit/cuda/CudaEmulation.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"
#include "compiler/loops/gpu/GpuLegality.h"

namespace texc {

// The strategy enum lives in the loop layer (GpuMapping); these names stay for the backend's users.
using CudaStrategy = loops::GpuStrategy;
const char* strategyName(CudaStrategy s);

struct CudaKernel {
  std::string symbol;      // the extern "C" name
  std::string loopKernel;  // the loop IR kernel it comes from
  CudaStrategy strategy = CudaStrategy::GridStride;
  int64_t blocks = 1;  // 1-D grid
  int threads = 256;   // per block
  int minBlocksPerSM = 1;  // __launch_bounds__'s second argument when above 1 (GpuMapping)
  std::vector<std::string> paramTypes;  // one C type per buffer, in buffer order
  std::vector<std::string> mapping;     // "i → blockIdx.x*256+threadIdx.x" lines
};

struct CudaModule {
  std::string source;
  std::vector<CudaKernel> kernels;  // in program order
};

// The mapping's switches (loops::gpu::GpuMapOptions) and the symbols' prefix, for generateCUDA.
struct CudaCodeGenOptions {
  std::string symbolPrefix = "texc_";
  int threadsPerBlock = 256;     // grid-stride, block-reduce and row-block kernels; a power of two >= 32
  int64_t maxBlocks = 8192;      // the grid-stride loops cover the rest
  bool blockReductions = true;   // block-reduce where it fits (else grid-stride); false also disables row-block
  bool rowBlocks = true;         // row-block where it fits (else grid-stride)
  bool tiledContractions = true;  // tiled-contract where it fits (else grid-stride)
  bool tf32 = false;              // --math=fast: f32 contractions on tensor cores (GpuMapOptions::tf32)
  int64_t multiprocessors = 132;  // the GPU's SMs, for the tile sizes (GpuMapOptions::multiprocessors)
};

// Prints a mapped program (every kernel has its GPU mapping; row-block kernels their combines
// and barriers): what codegen-cuda does after map-gpu and sync-gpu-threads.
// Whether kernel k needs 64-bit indices: some buffer it touches, loop or flattened nest reaches
// 2^30 elements (CodeGenCUDA.cpp); otherwise its CUDA C indexes with int.
bool needsWideIndex(const loops::LoopProgram& program, const loops::Kernel& k);

CudaModule printCUDA(const loops::LoopProgram& program, const std::string& symbolPrefix = "texc_");

// Maps a copy of `program` with the options' switches (map-gpu and sync-gpu-threads, replacing
// whatever mapping its kernels had) and prints it.
CudaModule generateCUDA(const loops::LoopProgram& program, const CudaCodeGenOptions& options = {});

// The mapping's options for these switches.
loops::gpu::GpuMapOptions gpuMapOptions(const CudaCodeGenOptions& options);

// Checks what the launcher relies on: one kernel per loop kernel, each defined in the source under
// its symbol, a launch shape the hardware accepts (1 <= blocks < 2^31, threads a multiple of 32
// up to 1024), one parameter per buffer. (NVRTC checks the rest.) Returns the problems found.
std::vector<std::string> verifyCudaModule(const CudaModule& module, const loops::LoopProgram& program);

}  // namespace texc
