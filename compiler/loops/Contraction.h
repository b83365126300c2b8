// A contraction as the tile pass and the register_block transformation find it in a lowered
// kernel: the nest
//
//   for i { for j { acc = 0; for k { acc += X * Y }; store(acc) } }
//
// where one operand (the row operand, A) does not read j and the other (the column operand, B)
// reads j but not i. Lowering produces this nest for `C[i, j] = sum(k: A[i, k] * B[k, j])` and
// for its batched and fused forms (an epilogue after the sum, repeated sums fusion duplicated).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// A contraction found in a kernel: the i loop (whose single statement is the j loop) and the
// parts of the j loop's body. `store` is the epilogue: the store that reads acc.
struct Contraction {
  Stmt* iLoop = nullptr;
  int i = -1, j = -1, k = -1;
  int64_t M = 0, N = 0, K = 0;
  int acc = -1;
  Expr rowOperand, colOperand;  // A[.., i, k] (no j) and B[.., k, j] (uses j, not i)
  // Whether B is contiguous in j (j exactly its last index, nowhere else). When it is not (A B^T:
  // B[j, k]), the micro-kernel cannot read its columns as vectors, so B must be packed.
  bool colContiguous = true;
  Stmt store;
};

// The body a lowered contraction's innermost output loop holds, in both backends' recognisers
// (the tile pass's matchContraction here, the GPU's tiled-contract mapping):
//
//   acc = identity; for k { acc op= term }; (the same again, fusion's copies)*; store f(acc...)
//
// Fusion may repeat the same reduction for several uses (matmul + bias + gelu reads it twice):
// each repeat has its own accumulator and k variable, the same extent, op and term (equal up to
// renaming its k to the first's).
//
// With `allowGuard`, the k loop's one statement may also be a guard around the update
// (`for k { if padding { acc op= term } }`: the implicit-GEMM nest, ImplicitGemm.h), without
// repeats. With `allowFold`, the last statement may be an update of an outer accumulator
// instead of the store (`m op= f(acc)`: a pool window's element, gpu/FusePoolIntoGemm.h).
struct ReductionBody {
  const Loop* kLoop = nullptr;
  const AccUpdate* update = nullptr;  // acc op= term, kLoop's only statement (or the guard's)
  const Guard* guard = nullptr;       // with allowGuard: the padding around the update, if any
  std::vector<int> copies;            // the repeats' accumulators
  const Store* store = nullptr;       // the epilogue, last
  const AccUpdate* fold = nullptr;    // with allowFold: the epilogue when it is an update (store null)
};
std::optional<ReductionBody> matchReductionBody(const Block& body, bool allowGuard = false, bool allowFold = false);

// Whether `iLoop` is the i loop of a contraction (its body exactly the j loop); fills `c`.
bool matchContraction(const LoopProgram& p, Stmt& iLoop, Contraction& c);

// Whether the load `load` reads variable `var` in one of its indices.
bool loadUses(const Expr& load, int var);

// Whether `e` is a load of an f32 buffer.
bool isF32Load(const LoopProgram& p, const Expr& e);

// Whether `e` is a load the CPU micro-kernel can take as an operand: f32, or f16/bf16, which the
// packs widen to f32 once per panel (the tile pass packs such operands always).
bool isTileOperandLoad(const LoopProgram& p, const Expr& e);

}  // namespace texc::loops
