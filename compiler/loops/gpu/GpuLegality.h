// Where each GPU mapping strategy applies (docs/cuda.md, "Mapping rules"): the shape matchers and
// legality analyses that map-gpu and sync-gpu-threads share. They read a kernel as lowered (its
// left-hand nest, its row body) and change nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops::gpu {

// The switches of the mapping (what CudaCodeGenOptions held before the mapping was a pass).
struct GpuMapOptions {
  int threadsPerBlock = 256;      // grid-stride, block-reduce and row-block kernels; a power of two >= 32
  int64_t maxBlocks = 8192;       // the grid-stride loops cover the rest
  bool blockReductions = true;    // block-reduce where it fits (else grid-stride); false also disables row-block
  bool rowBlocks = true;          // row-block where it fits (else grid-stride)
  bool tiledContractions = true;  // tiled-contract where it fits (else grid-stride)
  bool onlineTiles = true;        // online-tile for online-softmax kernels where it fits (else grid-stride)
  bool tf32 = false;              // --math=fast: f32 contractions on tensor cores, operands rounded to TF32
  int64_t multiprocessors = 132;  // the GPU's SMs (H100 SXM, H200): tiles shrink until each has two blocks
};

// A kernel's left-hand nest (the perfect nest from its single top statement, its outputs) and its
// row body (what sits at the innermost point: the kernel body when there is no left-hand loop).
struct KernelShape {
  std::vector<const Loop*> lhs;
  const Block* inner = nullptr;
  int64_t outputs = 1;  // the product of the left-hand extents
};
KernelShape kernelShape(const Kernel& k);

// The expressions that recover each loop of a flattened nest (extents outermost first) from the
// flat index `flat`, innermost fastest: "flat % 64", "flat / 64", "(flat / 64) % 8" ...
std::vector<std::string> unflattenExprs(const std::vector<int64_t>& extents, const std::string& flat);

// The loads of `e` in pre-order (the numbering GpuMapping's operand lists use).
std::vector<const Expr*> loadsInOrder(const Expr& e);

// tiled-contract: inner = [acc = identity, for k { acc op= term }, (the same again)*, store f(acc)]
// (or the implicit GEMM's `for k { if padding { acc += row x column } }`, the guard not reading i)
// inside at least two left-hand loops i, j (the last two), extents >= 16, some loads of the term
// reading (i, k) but not j and some (k, j) but not i, and the staged tiles fitting 48 KB.
// Or a pool in the epilogue (gpu/FusePoolIntoGemm.h): inner = [m = identity (max or min),
// for w { acc = 0, for k { .. }, m op= f(acc) }, store g(m)], the window loop w of 2, 4 or 8
// iterations: the tile's columns are then (j, w) flattened, w fastest, so that a window's
// elements lie in neighbouring lanes and combine by shuffles.
struct TiledMatch {
  int tile = 0, regBlock = 0, kStep = 16;  // the tile's rows, and each thread's
  int tileCols = 0, regCols = 0;           // its columns, and each thread's
  std::vector<int> rowOperands, colOperands;  // load numbers in the term
  std::vector<int> copies;                    // accumulators of the repeated reductions
  int64_t tilesI = 0, tilesJ = 0, tiles = 0;
  std::string mma;  // "bf16", "f16" or "tf32": the product on tensor cores (GpuMapping::mma)
  bool asyncCopy = false;  // staged with cp.async (GpuMapping::asyncCopy)
  bool padded = false;     // the k loop's update under a guard: zeros of the column operand where it fails
  int stages = 2;          // shared buffers per operand (GpuMapping::stages)
  int rowPad = 0;          // elements of padding per row of a row operand's shared tile
  int colPad = 0;          // ... and of a column operand's
  std::vector<int> vectorCopies;  // staged operands copied 16 bytes at a time (GpuMapping::vectorCopies)
  int window = 1;                 // columns per output: the pool window's elements (GpuMapping::window)
};
// The window loop of a tiled contraction with a pool in its epilogue (the form above), or null.
const Loop* poolWindow(const Block& inner);
// A staged operand copied 16 bytes at a time (TiledMatch::vectorCopies) reads consecutive
// elements along `var`: the same load with its address written as such, the indices that read
// `var` 0 but the last, which is `var` plus the first element's offset (the implicit GEMM's
// W[k, crs / 9, crs / 3 % 3, crs % 3] becomes W[k, 0, 0, crs]: no divisions in the copy's address).
Expr linearAlong(const LoopProgram& p, const Kernel& k, const Expr& load, int var);
// The update of a tiled contraction's k loop: its one statement, or the one inside the implicit
// GEMM's padding guard.
const AccUpdate& kLoopUpdate(const Loop& kLoop);

// With o.tf32 (--math=fast), a sum of products of two f32 operands goes to tensor cores too
// (mma "tf32": each operand rounded to TF32, 10 bits of mantissa, products summed in f32). The
// tiles shrink (to 64 along a side) while there are fewer than two per SM of o.multiprocessors.
std::optional<TiledMatch> matchTiledContraction(const LoopProgram& p, const Kernel& k, const KernelShape& shape, const GpuMapOptions& o = {});

// online-tile: an online-softmax kernel as lowered (LowerToLoops.cpp, runOnline): in its row body
// one loop over the keys j whose body sets accumulators (the running max and sum). Each thread
// of a block takes one query row (the innermost left-hand loop i); the block walks the keys in
// stages, and the loads that every row of the block reads alike are staged in shared memory:
// a load of the key body, not under a guard of its own, that reads j and one variable v of a
// loop inside the key body (the dot product's d, the weighted update's c), otherwise only the
// outer left-hand loops (batch, heads) and not i: K[.., j, d], V[.., j, c].
struct StagedLoad {
  const Expr* load = nullptr;
  int var = -1;  // v
  int slot = 0;  // its shared array (equal loads share one)
};
struct OnlineTileMatch {
  size_t keyStmt = 0;                // the key loop's place in the row body
  const Loop* keys = nullptr;
  int rowsPerBlock = 64;             // threads: one query row each
  int keysPerStage = 32;
  std::vector<StagedLoad> staged;
  std::vector<int64_t> slotExtents;  // per shared array: v's extent (it holds keysPerStage of them per key)
  std::vector<size_t> slotFirst;     // per shared array: the staged load (index) that fills it
  int64_t tiles = 0;                 // query tiles per batch row
  int64_t work = 0;                  // blocks' worth of work: batch rows x tiles
  // Rows in registers (docs/cuda.md, "Online softmax"): when every loop of the row body (before,
  // in and after the key loop) is one loop of the same extent `rowWidth` (the head dimension)
  // whose body holds no loop or guard, each query row is taken by `lanes` consecutive threads of
  // a warp, lane l taking the row elements l, l + lanes, ...; the output row (and the inputs read
  // per row, `preloaded`, when they fit) live in registers, written to memory once at the end; the
  // reductions over the row are combined by xor shuffles among the row's lanes. `splitLoops` are
  // those loops, `reduced[loop]` the accumulators each combines. Empty `splitLoops`: one thread
  // per row, the output row in memory (the older form, for row bodies of another shape).
  int lanes = 1;
  int64_t rowWidth = 0;
  // Consecutive row elements per lane group: 4 where each lane holds a multiple of 4 f32
  // elements (lane l takes 4l .. 4l + 3, then 4(l + lanes) ..: a key's staged row is read with
  // one 16-byte shared load per group), else 1 (lane l takes l, l + lanes, ...).
  int group = 1;
  std::set<const Loop*> splitLoops;
  std::vector<std::pair<const Loop*, std::vector<std::pair<int, ReduceKind>>>> reduced;
  std::vector<int> preloaded;  // input buffers read as [outer.., i, v]
};
std::optional<OnlineTileMatch> matchOnlineTile(const LoopProgram& p, const Kernel& k, const KernelShape& shape);

// block-reduce: inner = [acc = identity, reduction nest, store f(acc)] with enough terms (at least
// 256, or 32 with at most 16384 outputs). Returns the number of terms.
std::optional<int64_t> matchBlockReduce(const KernelShape& shape);

// float4 grid-stride: an elementwise f32 kernel (inner is one f32 store) over a multiple of 4
// elements. Returns the buffers read exactly like the output (as float4), and which loads of the
// store's value (numbered in pre-order) read them so.
struct Float4Match {
  std::vector<int> buffers;
  std::vector<int> loads;
};
std::optional<Float4Match> matchFloat4(const LoopProgram& p, const Kernel& k, const KernelShape& shape);

// row-block: the row body as a sequence of phases (docs/cuda.md, rule 3).
struct RowAccess {
  int buffer = -1;
  bool write = false;
  const std::vector<IndexExpr>* index = nullptr;
};
struct RowPhase {
  size_t stmt = 0;                // its position in the row body
  std::vector<const Loop*> nest;  // a Loop: the perfect nest strided over the threads
  int64_t extent = 1;             // a Loop: its flattened iterations
  std::vector<int> reduced;       // the row accumulators combined after it, in order
  std::vector<ReduceKind> kinds;  // and how
  std::set<int> stores;           // buffers written
  std::vector<RowAccess> accesses;
};
struct RowPlan {
  std::vector<RowPhase> phases;  // one per row-body statement
  int threads = 0;               // the block
  int maxReduced = 0;            // the most accumulators one phase combines
  // Rows in registers (docs/cuda.md, rule 3): when every phase is one loop over the row's
  // `rowWidth` elements and at most 32 fall to each thread, the buffers read or written there only
  // as [i.., j] (j the phase's variable: every thread touches its own elements in every phase)
  // live in registers: the inputs read once before the first phase, the output (its row in the
  // compute type) written once after the last.
  int64_t rowWidth = 0;
  std::vector<int> rowRegisters;  // the output first when it is held
  // The held rows moved as float4 (GpuMapping::rowFloat4): all held buffers f32, the row width
  // and every held buffer's last dimension multiples of 4, so that each group of 4 is 16-byte
  // aligned (buffers are at least 64-byte aligned).
  bool rowFloat4 = false;
};
// Declines (nullopt) where docs/cuda.md says row-block does.
std::optional<RowPlan> planRowBlock(const LoopProgram& p, const Kernel& k, const KernelShape& shape, const GpuMapOptions& o);

// Whether access a of phase p and access b of phase q touch each element from the same thread.
bool sameThread(const RowPhase& p, const RowAccess& a, const RowPhase& q, const RowAccess& b);

// Whether every buffer the row body writes is touched only at elements of the current row.
bool rowPrivate(const LoopProgram& p, const KernelShape& shape);

}  // namespace texc::loops::gpu
