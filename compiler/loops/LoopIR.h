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
#include <string>
#include <vector>

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
  std::vector<Expr> args;
};

enum class StmtKind : uint8_t { Loop, Store, AccInit, AccUpdate, Guard, Pack, Tile };

// A check that `index` lies in [0, extent) before a guarded body runs.
struct GuardCond {
  IndexExpr index;
  int64_t extent = 0;
};

struct Stmt {
  StmtKind kind = StmtKind::Loop;
  // Loop: `for var < extent`; parallel loops are split across threads, vector loops are the
  // contiguous innermost ones the LLVM vectorizer should widen, scalar loops (a schedule's
  // `vectorize V off`) ones it must leave scalar; a loop with neither mark is LLVM's choice.
  int var = -1;
  int64_t extent = 0;
  bool parallel = false;
  bool vectorize = false;
  bool scalar = false;
  std::vector<Stmt> body;  // Loop and Guard
  // Store: buffer[index] = value.
  int buffer = -1;
  std::vector<IndexExpr> index;
  Expr value;  // Store, AccUpdate
  // AccInit sets acc to the identity of `reduce`; AccUpdate combines value into it.
  int acc = -1;
  ReduceKind reduce = ReduceKind::Sum;
  std::vector<GuardCond> conds;  // Guard
  // Pack and Tile: the rows x cols block of a contraction whose row and column variables are
  // `rowVar` (i) and `colVar` (j), starting at rowBase and colBase, reduced over `var` < extent
  // (k). Rows past rowExtent and columns past colExtent are not part of the result. Both work on
  // the k window [kBase, min(kBase + kBlock, extent)), of length L = kBlock; kBlock = 0 means
  // the whole of k (kBase 0, L = extent).
  //   Pack (column block, rowVar < 0): the column operand value at j = colBase + c for c <
  //         cols (0 where j >= colExtent), in micro-panels of P = rows columns (P = cols when
  //         rows is 0): scratch[(c / P) * P * L + (k - kBase) * P + c % P].
  //         A column pack with `conds` (padding) writes 0 where one of them fails instead of
  //         reading the operand: each cond's index must lie in [0, extent), like a Guard's.
  //   Pack (row block, rowVar >= 0): the row operand value at i = min(rowBase + r,
  //         rowExtent - 1) for r < rows, in micro-panels of `cols` rows:
  //         scratch[(r / cols) * cols * L + (k - kBase) * cols + r % cols].
  //   Tile: for every (i, j) of the block inside the extents,
  //           acc = sum(k in the window) value   (value = row operand * column operand)
  //         then `body` runs (the epilogue: reads acc, stores). The row operand comes from row
  //         pack `rowScratch` when >= 0 (element blockRow * L + (k - kBase) * rows + r, blockRow
  //         being the tile's first row inside the packed block; with rowPackWhole the row pack
  //         holds all of k instead: element blockRow * extent + k * rows + r), the column operand from column
  //         block `scratch` when >= 0 (element blockCol * L + (k - kBase) * cols + c, blockCol
  //         the tile's first column inside the block). A tile starting past either extent does
  //         nothing.
  //         With kBlock > 0 the sum starts from the element body[0] (a store) wrote when kBase
  //         > 0, and the tile runs the epilogue only for the last window; before it, it stores
  //         the partial sum there instead.
  int rowVar = -1;
  int colVar = -1;
  IndexExpr rowBase;
  IndexExpr colBase;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t rowExtent = 0;
  int64_t colExtent = 0;
  int scratch = -1;
  int64_t kBlock = 0;
  IndexExpr kBase;
  IndexExpr blockRow;
  IndexExpr blockCol;
  int rowScratch = -1;
  bool rowPackWhole = false;  // Tile: rowScratch holds every k, not just the window
};

enum class BufferKind : uint8_t { Input, Output, Temp };

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

struct Kernel {
  std::string name;
  std::vector<std::string> varNames;  // loop variables by id
  int numAccs = 0;
  DType computeType = DType::F32;  // f32 or f64
  std::vector<Stmt> body;
  // The range of the outermost parallel loop (0 when the kernel runs on one thread): the runtime
  // splits [0, parallelExtent) into chunks and calls the kernel once per chunk.
  int64_t parallelExtent = 0;
  int outputBuffer = -1;
  // Kernel-local scratch arrays of the compute type (packed operand panels), by id: element
  // counts. Each call of the kernel has its own.
  std::vector<int64_t> scratchSizes;
  std::string schedule;  // why the tile pass chose its tile sizes (printed as a comment)
};

struct LoopProgram {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
};

// Whether `ix` reads loop variable `var`.
bool usesVar(const IndexExpr& ix, int var);

// Whether two index expressions are the same expression, node by node (the fields a node's kind
// does not use are not compared).
bool sameIndex(const IndexExpr& a, const IndexExpr& b);

// Calls `f` for every Load in `e`.
void forEachLoad(const Expr& e, const std::function<void(const Expr&)>& f);

// Calls `load` for every Load and `store` for every Store statement under `body`: the operands a
// Pack or Tile reads (through `value`), and a Tile's epilogue, included.
void forEachAccess(const std::vector<Stmt>& body, const std::function<void(const Expr&)>& load,
                   const std::function<void(const Stmt&)>& store);

// Which buffers kernel `k` stores to (every Store, tile epilogues included): usually its output
// alone; a kernel that fuse-into-tiles made writes its intermediate too.
std::vector<bool> buffersStored(const LoopProgram& p, const Kernel& k);

std::string printLoopProgram(const LoopProgram& p);

// Checks structural invariants (variables bound by an enclosing loop, buffers and accumulators in
// range, ranks match, guards only inside loops, at most one parallel loop, at the top level, whose
// extent is the kernel's parallelExtent). Returns the problems found, empty when valid.
std::vector<std::string> verifyLoopProgram(const LoopProgram& p);

}  // namespace texc::loops
