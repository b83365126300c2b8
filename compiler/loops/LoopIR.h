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
#pragma once

#include <cstdint>
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

enum class StmtKind : uint8_t { Loop, Store, AccInit, AccUpdate, Guard };

// A check that `index` lies in [0, extent) before a guarded body runs.
struct GuardCond {
  IndexExpr index;
  int64_t extent = 0;
};

struct Stmt {
  StmtKind kind = StmtKind::Loop;
  // Loop: `for var < extent`; parallel loops are split across threads, vector loops are the
  // contiguous innermost ones the LLVM vectorizer should widen.
  int var = -1;
  int64_t extent = 0;
  bool parallel = false;
  bool vectorize = false;
  std::vector<Stmt> body;  // Loop and Guard
  // Store: buffer[index] = value.
  int buffer = -1;
  std::vector<IndexExpr> index;
  Expr value;  // Store, AccUpdate
  // AccInit sets acc to the identity of `reduce`; AccUpdate combines value into it.
  int acc = -1;
  ReduceKind reduce = ReduceKind::Sum;
  std::vector<GuardCond> conds;  // Guard
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
};

struct LoopProgram {
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
};

std::string printLoopProgram(const LoopProgram& p);

// Checks structural invariants (variables bound by an enclosing loop, buffers and accumulators in
// range, ranks match, guards only inside loops). Returns the problems found, empty when valid.
std::vector<std::string> verifyLoopProgram(const LoopProgram& p);

}  // namespace texc::loops
