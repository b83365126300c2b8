// The loop IR: explicit loop nests, one function ("kernel") each, over flat buffers.
//
//   kernel k0_h  (parallel over i0 < 4096)
//     for i0 < 4096 parallel
//       for i1 < 14336 vector
//         h[i0, i1] = x[i0, i1] + b[i1]
//
// Loops have constant extents and start at 0. A loop variable is an integer; used as a value it
// is converted to the kernel's compute type. Accumulators are scalar temporaries that carry a
// reduction across its loops. A Guard runs its body only when every index it lists lies in
// [0, extent): that is how a skipped term of a reduction is expressed. Both backends (LLVM and
// CUDA) start from this IR.
//
// The tile pass (TileContractions.h) and the register_block and pack transformations
// (transforms/LoopTransforms.h) add two statements: Pack, which copies a block of one operand of
// a contraction into a kernel-local scratch array, and Tile, a register-blocked contraction tile
// with its epilogue (docs/ir.md has their exact meaning). A backend that does not handle them
// runs the pipeline with PipelineOptions::tile off (and refuses loop transformations).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/IndexAlgebra.h"
#include "frontend/Program.h"

namespace texc::loops {

enum class ExprKind : uint8_t { Const, VarValue, Load, AccRead, Unary, Binary, Call };

struct Expr {
  ExprKind kind = ExprKind::Const;
  bool isBool = false;
  double constant = 0;             // Const
  int var = -1;                    // VarValue: a loop variable, or index[0] when index is set
  int buffer = -1;                 // Load
  std::vector<IndexExpr> index;    // Load: one per dimension, over loop variables
  int acc = -1;                    // AccRead
  UnaryOp unaryOp = UnaryOp::Neg;  // Unary
  BinaryOp binaryOp = BinaryOp::Add;
  Builtin builtin = Builtin::Exp;  // Call
  // Call exp: its argument is <= 0 or NaN (softmax's x - max(x); nonpositive-exp,
  // loops/NonPositiveExp.h), so the CPU code generator may use exp's cheaper form for that range.
  // A fact about the value, not a different value: equality ignores it.
  bool nonPositiveArg = false;
  std::vector<Expr> args;
};

// The statement kinds. Each is its own type holding only its own fields; `Stmt` holds one of
// them (docs/ir.md, "Statements"). The order of StmtKind is the order of Stmt::Node.
enum class StmtKind : uint8_t { Loop, Store, AccInit, AccUpdate, Guard, Pack, Tile, AccSet };

struct Stmt;
using Block = std::vector<Stmt>;

// A check that `index` lies in [0, extent) before a guarded body runs. With extent
// kNoUpperBound it checks 0 <= index alone (printed so).
constexpr int64_t kNoUpperBound = INT64_MAX;
struct GuardCond {
  IndexExpr index;
  int64_t extent = 0;
};

// Where the iterations of a loop go on a GPU (set by the map-gpu pass, CUDA pipeline only;
// docs/ir.md, "GPU mapping"). The loops a kernel flattens together carry the same mark.
//   Grid      flattened with the other Grid loops into one index strided over every thread of
//             the grid (blockIdx.x * threads + threadIdx.x, step gridDim.x * threads)
//   Blocks    flattened with the other Blocks loops into one index strided over the blocks
//             (blockIdx.x, step gridDim.x): one block per iteration
//   Threads   flattened with the loops of its perfect nest over the block's threads
//             (threadIdx.x, step threads)
//   TileRows, TileCols  the rows and columns of a tiled contraction's output tile: the tile from
//             blockIdx.x, the element from threadIdx.x and the register block
//   Staged    a tiled contraction's reduction: steps of the tile's k-step through shared memory
enum class GpuLoop : uint8_t { None, Grid, Blocks, Threads, TileRows, TileCols, Staged };
const char* gpuLoopName(GpuLoop g);

// `for var < extent`. Parallel loops are split across threads, vector loops are the contiguous
// innermost ones the LLVM vectorizer should widen, scalar loops (a schedule's `vectorize V off`)
// ones it must leave scalar; a loop with neither mark is LLVM's choice.
// Loads of `buffer` in a loop's body are preceded by a prefetch of the address `bytes` further
// on (stream-stores; the CPU backend only).
struct Prefetch {
  int buffer = -1;
  int64_t bytes = 0;
  bool operator==(const Prefetch&) const = default;
};

struct Loop {
  int var = -1;
  int64_t extent = 0;
  bool parallel = false;
  bool vectorize = false;
  bool scalar = false;
  // Vectors the LLVM vectorizer keeps in flight per iteration of a vector loop
  // (llvm.loop.interleave.count); 0 leaves it to LLVM's cost model (interleave-loops).
  int interleave = 0;
  // Runs over pairs of bf16 elements, each pair loaded and stored as one 32-bit word
  // (pair-bf16-lanes, loops/PairBf16Lanes.h).
  bool pairs = false;
  // The partial results its sums and products keep: the first sumLanes * n terms go to lanes in
  // turn, the rest are added in order; 0: every term in order (sum-lanes, loops/SumLanes.h).
  int64_t sumLanes = 0;
  // Runs its iterations in blocks of `phaseBlock`, each block as `phases` loops one after the
  // other, each doing one stretch of the body's chain of dependent operations, the values that
  // cross between them kept in L1 arrays of `phaseBlock` elements; 0: one loop (split-chains,
  // loops/SplitChains.h; the CPU backend only).
  int phases = 0;
  int64_t phaseBlock = 0;
  Block body;
  GpuLoop gpu = GpuLoop::None;  // map-gpu (CUDA pipeline only)
  std::vector<Prefetch> prefetch = {};  // stream-stores (CPU pipeline only)
};

// buffer[index] = value.
struct Store {
  int buffer = -1;
  std::vector<IndexExpr> index;
  Expr value;
  // A non-temporal store, around the caches (stream-stores, loops/StreamStores.h): the CPU
  // backend marks it !nontemporal and ends the kernel with a store fence.
  bool streaming = false;
};

// acc = the identity of `reduce`.
struct AccInit {
  int acc = -1;
  ReduceKind reduce = ReduceKind::Sum;
};

// acc = reduce(acc, value).
struct AccUpdate {
  int acc = -1;
  ReduceKind reduce = ReduceKind::Sum;
  Expr value;
};

// acc = value, where value may read any accumulator, this one included: one step of online
// softmax's running statistics (docs/online-softmax.md). The analyses treat it like an AccUpdate:
// it carries the accumulator across the iterations of the loops around it, unless an AccInit
// inside those loops sets it first.
struct AccSet {
  int acc = -1;
  Expr value;
};

// Runs `body` only when every cond holds.
struct Guard {
  std::vector<GuardCond> conds;
  Block body;
  std::string skips;  // what a failed check skips, for the printer (empty: a reduction's term)
};

// The reduction window of a contraction block (Pack and Tile): k = var < extent, worked on in
// the window [base, min(base + block, extent)), of length L = block; block = 0 means the whole
// of k (base 0, L = extent).
struct KWindow {
  int var = -1;
  int64_t extent = 0;
  int64_t block = 0;
  IndexExpr base;
  int64_t length() const { return block > 0 ? block : extent; }
};

enum class PackSide : uint8_t { Rows, Columns };

// Copies one operand of a contraction block into kernel-local scratch array `scratch`.
//   Columns: the column operand (`value`, over column variable `var` = j and k) at
//            j = base + c for c < count (0 where j >= extent), in micro-panels of P = panel
//            columns (P = count when panel is 0): scratch[(c / P) * P * L + (k - k.base) * P + c % P].
//            With `padding`, writes 0 where one of those conditions fails instead of reading the
//            operand: each cond's index must lie in [0, extent), like a Guard's.
//   Rows:    the row operand (over row variable `var` = i and k) at i = min(base + r, extent - 1)
//            for r < count, in micro-panels of `panel` rows:
//            scratch[(r / panel) * panel * L + (k - k.base) * panel + r % panel].
// With `bf16Pairs` (a bf16 operand, for vdpbf16ps) the pack copies the bf16 bits unconverted, two
// k steps to one 32-bit scratch element (k - k.base even in the low half): the formulas above
// hold with L' = ceil(L / 2) for L and (k - k.base) / 2 for k - k.base, and an odd window's last
// pair ends in +0.
// With `amx` as well (bf16Pairs, an AMX tile's packs) the window's pairs are padded with zeros to
// G = ceil(L' / 16) groups of 16 (one tile's k, 32 steps), L'' = 16 G in the formulas: the
// Columns layout is otherwise the one above (16 columns of a group are a B tile: 16 rows of 16
// pairs, P * 4 bytes apart); Rows keeps each group of a panel as rows of 16
// consecutive pairs, scratch[(r / panel) * panel * L'' + (q / 16) * panel * 16 + (r % panel) * 16
// + q % 16], so that 16 rows of one group are an A tile of 1 KiB, 64 bytes a row.
// 32-bit scratch elements per row or column of a bf16-pair pack for `steps` k steps: L', or L''
// with `amx`.
inline int64_t packedPairs(int64_t steps, bool amx) {
  const int64_t pairs = (steps + 1) / 2;
  return amx ? (pairs + 15) / 16 * 16 : pairs;
}

struct Pack {
  PackSide side = PackSide::Columns;
  int var = -1;
  IndexExpr base;
  int64_t count = 0;
  int64_t panel = 0;
  int64_t extent = 0;
  int scratch = -1;
  KWindow k;
  Expr value;
  std::vector<GuardCond> padding;  // Columns only
  int64_t lanes = 8;  // padded packs: values per vector load (the target's f32 lanes, 8 or 16)
  bool bf16Pairs = false;
  bool amx = false;
};

// A register-blocked contraction tile with its epilogue: the rows x cols block whose row and
// column variables are rowVar (i) and colVar (j), starting at rowBase and colBase; rows past
// rowExtent and columns past colExtent are not part of the result. For every (i, j) of the block
// inside the extents,
//     acc = sum(k in the window) value   (value = row operand * column operand)
// then `epilogue` runs (it reads acc and stores). The row operand comes from row pack
// `rowScratch` when >= 0 (element blockRow * L + (k - k.base) * rows + r, blockRow being the
// tile's first row inside the packed block; with rowPackWhole the row pack holds all of k
// instead: element blockRow * k.extent + k * rows + r), the column operand from column pack
// `colScratch` when >= 0 (element blockCol * L + (k - k.base) * cols + c, blockCol the tile's
// first column inside the block). A tile starting past either extent does nothing.
// With k.block > 0 the sum starts from the element epilogue[0] (a store) wrote when k.base > 0,
// and the tile runs the epilogue only for the last window; before it, it stores the partial sum
// there instead. With `perWindow` the sum is over this window alone, from 0, and the epilogue
// runs after it (online softmax's P V tile, whose epilogue rescales and adds: TileOnline.h).
// With `sumScratch` >= 0 the partial sums live there instead of in the output (which is stored
// in f16/bf16 and cannot hold them): element (sumRow + r) * sumStride + sumCol + c.
// With `bf16Pairs` both packs hold bf16 pairs along k (Pack) and each step of the k loop adds two
// products per accumulator lane with one vdpbf16ps (AVX512-BF16), in f32.
// With `amx` as well, the accumulators are AMX tiles of 16 x 16 f32 (rows and cols multiples of
// 16, at most 4 of them beside 2 + 2 operand tiles) and each group of 16 pairs (32 k steps) is one
// tdpbf16ps per accumulator tile, from packs laid out for tile loads (Pack::amx).
struct Tile {
  int rowVar = -1;
  int colVar = -1;
  IndexExpr rowBase;
  IndexExpr colBase;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rowExtent = 0;
  int64_t colExtent = 0;
  KWindow k;
  int acc = -1;  // the accumulator the sum goes to, which the epilogue reads
  Expr value;
  int rowScratch = -1;
  bool rowPackWhole = false;
  IndexExpr blockRow;
  int colScratch = -1;
  IndexExpr blockCol;
  std::vector<GuardCond> colPadding;  // only without a column pack
  bool perWindow = false;
  int64_t kUnroll = 1;  // k steps per iteration of the k loop (the schedule's ku; code generation's unroll)
  // The rows left past the last whole tile (rowExtent % rows; 0 when the tiles fit). A tile with
  // at most that many rows inside the extent runs a k loop of those rows only, instead of all of
  // them with the last row repeated (CPU; not with AMX).
  int64_t edgeRows = 0;
  int sumScratch = -1;  // partial sums of k blocks, when the output cannot hold them
  IndexExpr sumRow, sumCol;
  int64_t sumStride = 0;
  bool bf16Pairs = false;
  bool amx = false;
  Block epilogue;
};

struct Stmt {
  using Node = std::variant<Loop, Store, AccInit, AccUpdate, Guard, Pack, Tile, AccSet>;
  Node node;

  Stmt() = default;
  template <class T, class = std::enable_if_t<std::is_constructible_v<Node, T&&> &&
                                              !std::is_same_v<std::decay_t<T>, Stmt>>>
  Stmt(T&& n) : node(std::forward<T>(n)) {}  // NOLINT: implicit, so `Stmt s = Loop{...}` reads well

  StmtKind kind() const { return static_cast<StmtKind>(node.index()); }
  template <class T> bool is() const { return std::holds_alternative<T>(node); }
  // The statement as kind T; the caller has checked the kind.
  template <class T> T& as() { return std::get<T>(node); }
  template <class T> const T& as() const { return std::get<T>(node); }
  // The statement as kind T, or null.
  template <class T> T* getIf() { return std::get_if<T>(&node); }
  template <class T> const T* getIf() const { return std::get_if<T>(&node); }
};

// The statements nested in `s`: a Loop's or Guard's body, a Tile's epilogue; null for the others.
Block* nestedBlock(Stmt& s);
const Block* nestedBlock(const Stmt& s);

// Input, Output and Temp are the program's tensors, in the program's order; Temps after them are
// the loop program's own, which no tensor of the graph backs (split-K's partial sums and
// split-keys' per-slice results, gpu/SplitK.h and gpu/SplitKeys.h: cuda target only), planned
// and placed in the arena like the others. Local buffers come
// after them: small arrays one kernel keeps per call (per thread), like scratch, but indexed like
// a tensor (online softmax's tile of scores and running statistics, TileOnline.h). They are not
// in the memory plan and never leave the kernel.
enum class BufferKind : uint8_t { Input, Output, Temp, Local };

struct Buffer {
  std::string name;
  DType dtype = DType::F32;  // storage type
  std::vector<int64_t> shape;
  BufferKind kind = BufferKind::Temp;
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// How a kernel runs on a GPU (docs/cuda.md, "Mapping rules"; docs/ir.md, "GPU mapping"): chosen
// by map-gpu, its cross-thread combines and barriers placed by sync-gpu-threads.
enum class GpuStrategy : uint8_t { GridStride, BlockReduce, TiledContraction, RowBlock, OnlineTile };
const char* gpuStrategyName(GpuStrategy s);

// What a row-block kernel's threads do around statement `stmt` of its row body (the body of the
// innermost left-hand loop, or the kernel body without one), in the order the code runs it:
//   barrier (when `barrierBefore` is not empty): __syncthreads() before the statement, for that reason;
//   the statement, per thread (a Loop strided over the threads, a Store in thread 0);
//   combine (when `accs` is not empty): the accumulators, each reduced by its kind, combined
//     across the block's threads (warp shuffles, then shared memory when the block has several
//     warps, with its two barriers) and broadcast to every thread.
struct GpuRowSync {
  int stmt = -1;
  std::string barrierBefore;
  std::vector<int> accs;
  std::vector<ReduceKind> kinds;
};

struct GpuMapping {
  GpuStrategy strategy = GpuStrategy::GridStride;
  int64_t blocks = 1;  // the 1-D grid
  int threads = 256;   // per block
  // The flattened iterations the grid strides over: outputs (grid-stride, block-reduce,
  // row-block: rows) or tiles (tiled-contract).
  int64_t work = 1;
  // grid-stride: four consecutive elements per thread; `float4Buffers` are read as float4 where
  // a load indexes them exactly like the output.
  bool float4 = false;
  std::vector<int> float4Buffers;
  std::vector<int> float4Loads;  // the loads of the store's value (numbered in pre-order) read from them
  // block-reduce: the terms of the reduction, strided over the threads.
  int64_t terms = 0;
  // tiled-contract: the output tile is tile x tileCols, computed by threads of regBlock x regCols
  // outputs each, k advancing by kStep. The term's loads numbered in pre-order: `rowOperands`
  // read (i, k) and `colOperands` (k, j), staged through shared memory; `copies` are the
  // accumulators of the same reduction repeated, given its value.
  int tile = 0;
  int regBlock = 0;
  int kStep = 0;
  // ... its columns: tileCols x ... of the tile, regCols of a thread's block (the tile is tile x
  // tileCols, a thread's block regBlock x regCols; square on tensor cores).
  int tileCols = 0;
  int regCols = 0;
  std::vector<int> rowOperands;
  std::vector<int> colOperands;
  std::vector<int> copies;
  // tiled-contract on tensor cores: "bf16" or "f16" when the term is the product of one row and
  // one column operand of that dtype, which the tile multiplies with mma.sync m16n8k16 (f32
  // accumulation; the operands staged as 16-bit values), else empty.
  std::string mma;
  // tiled-contract without tensor cores: the operands go from global to shared memory with
  // cp.async (sm_80+; a plain copy before), the next k-step's copies in flight during this
  // step's arithmetic, when every staged operand is stored in the compute type.
  bool asyncCopy = false;
  // tiled-contract: the shared buffers per operand (2, or 3 with asyncCopy where they fit: the
  // copies of `stages - 1` k-steps in flight), and the padding of each row of a row operand's
  // and of a column operand's shared tile (elements, against bank conflicts).
  int stages = 2;
  int rowPad = 0;
  int colPad = 0;
  // tiled-contract with asyncCopy: the staged operands (load numbers) copied 16 bytes of a row
  // at a time (four f32 elements, or eight f16/bf16 ones on tensor cores), with cp.async.
  std::vector<int> vectorCopies;
  // tiled-contract with a pool in the epilogue (gpu/FusePoolIntoGemm.h): the window's elements
  // per output (2, 4 or 8), neighbouring columns of the tile combined by warp shuffles; 1 without.
  int window = 1;
  // The blocks per SM that the registers are budgeted for: __launch_bounds__(threads, this), so
  // that ptxas keeps each thread under 65536 / (threads * this) registers (tiled-contract: 2).
  int minBlocksPerSM = 1;
  // online-tile: `tile` query rows per block (one per thread), the keys in stages of `kStep`
  // through shared memory (docs/cuda.md, "Online softmax").
  // row-block: the most accumulators one combine holds (the shared partials' rows); the phases'
  // combines and barriers (sync-gpu-threads; `synced` once it ran), and the barrier that ends a
  // row, with its reason (empty: none).
  int maxCombined = 0;
  // row-block: rows in registers (GpuLegality.h, RowPlan): the row's length (0: none) and the
  // buffers held, the output first when it is.
  int64_t rowWidth = 0;
  std::vector<int> rowRegisters;
  // ... and read and written as float4: each thread's elements are groups of 4 consecutive ones,
  // group q at 4 (threadIdx.x + threads q) (every held buffer f32, rows a multiple of 4 wide).
  bool rowFloat4 = false;
  bool synced = false;
  std::vector<GpuRowSync> sync;
  std::string rowEndBarrier;
  // Where each loop variable went, one line each (the CUDA source's comment).
  std::vector<std::string> notes;
};

struct Kernel {
  std::string name;
  std::vector<std::string> varNames;  // loop variables by id
  int numAccs = 0;
  DType computeType = DType::F32;  // f32 or f64
  Block body;
  // The range of the outermost parallel loop (0 when the kernel runs on one thread): the runtime
  // splits [0, parallelExtent) into chunks and calls the kernel once per chunk.
  int64_t parallelExtent = 0;
  int outputBuffer = -1;
  // Kernel-local scratch arrays of the compute type (packed operand panels), by id: element
  // counts. Each call of the kernel has its own.
  std::vector<int64_t> scratchSizes;
  std::string schedule;  // why the tile pass chose its tile sizes (printed as a comment)
  std::string streaming;  // stream-stores' decision on this kernel's stores (printed as a comment)
  std::optional<GpuMapping> gpu;  // map-gpu (CUDA pipeline only)
};

struct LoopProgram {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
};

// Whether an index expression reads a loop variable: core/IndexAlgebra.h.
using texc::usesVar;

// Whether some index of `index` reads loop variable `var`.
bool usesVar(const std::vector<IndexExpr>& index, int var);

// Whether `index` walks `var` along its last dimension at step 1 (`j + c`), and no other
// dimension with it: an access in memory order along the loop (pair-bf16-lanes, sum-lanes).
bool walksLastDimension(const std::vector<IndexExpr>& index, int var);

// Walking, rewriting, substituting and comparing the IR: Walk.h, Substitute.h, Equal.h.

// Which buffers kernel `k` stores to (every Store, tile epilogues included): usually its output
// alone; a kernel that fuse-into-tiles made writes its intermediate too.
std::vector<bool> buffersStored(const LoopProgram& p, const Kernel& k);

// Appends a local buffer (after every tensor, as locals must be) named `name`, or name2, name3,
// ... when taken; returns its id.
int addLocalBuffer(LoopProgram& p, const std::string& name, std::vector<int64_t> shape, DType dtype);

// Appends a temporary that no tensor of the graph backs (split-K's, split-keys'; after the
// tensors, so only while the program has no local buffers) named `name`, or name2, ...; returns its id.
int addProgramTemp(LoopProgram& p, const std::string& name, std::vector<int64_t> shape, DType dtype);

// The loop program as `--emit loops` prints it. With `lines`, each statement's line in the text
// (1-based; a tile's is the line of its k loop): what the code generator's line table
// (CodeGenOptions::stmtLines) and `run --profile` refer to.
std::string printLoopProgram(const LoopProgram& p, std::map<const Stmt*, int>* lines = nullptr);

// A kernel's GPU mapping as the printer shows it, one line each without the "# gpu: " prefix
// (docs/ir.md, "GPU mapping"); empty when it has none. Buffer names come from `p`.
std::vector<std::string> gpuMappingLines(const LoopProgram& p, const Kernel& k);

// Problems with a kernel's GPU mapping and loop marks (part of verifyLoopProgram): marks only in a
// mapped kernel and only of its strategy's kinds, a launch shape the hardware accepts, combines
// and barriers only in row-block kernels, at statements of its row body.
std::vector<std::string> verifyGpuMapping(const LoopProgram& p, const Kernel& k);

// Checks structural invariants (variables bound by an enclosing loop, buffers and accumulators in
// range, ranks match, guards only inside loops, at most one parallel loop, at the top level, whose
// extent is the kernel's parallelExtent). Returns the problems found, empty when valid.
std::vector<std::string> verifyLoopProgram(const LoopProgram& p);

}  // namespace texc::loops
