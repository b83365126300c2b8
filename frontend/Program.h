// The analysed program: what semantic analysis proves about a module, and the input of every
// later stage (the dataflow IR builder, the float64 reference interpreter).
//
// Everything is resolved: `let` values are numbers, every statement is in index form (the
// whole-tensor form is desugared with fresh index variables and broadcasting), every index
// variable has an extent and the reason for it, every tensor access has its affine index
// expressions and the result of the bounds analysis (in bounds, or guarded: its term is skipped
// when it falls outside).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/DType.h"
#include "core/IndexExpr.h"
#include "core/Operators.h"
#include "frontend/AST.h"
#include "frontend/Source.h"

namespace texc {




struct IndexVar;
// The exact range of `e` over the boxes of `vars` (affine parts summed per variable; floor
// division and modulo applied to the range of their operand), as semantic analysis computes it.
// Saturates instead of overflowing.
Interval rangeOfIndex(const IndexExpr& e, const std::vector<IndexVar>& vars);

// Where an index variable's extent came from.
enum class RangeSource : uint8_t { Bound, Inferred, Broadcast };

struct IndexVar {
  std::string name;
  int64_t extent = 0;
  bool isReduction = false;
  int reduction = -1;  // for reduction variables: the id of the Reduce node that binds it
  RangeSource source = RangeSource::Bound;
  SourceRange declRange;    // where it is declared (left-hand side or reduction list)
  SourceRange sourceRange;  // the bound, or the access that gave the extent
  std::string sourceText;   // "bound H / 2", "dimension 1 of x (f32[64, 128])"
};

// A node of the value expression of a computation.
enum class ValueKind : uint8_t {
  Const,       // a number (`let` names used as values are folded in)
  IndexValue,  // an index variable used as a value (converted to the float dtype); after fusion
               // substitutes variables, the value of indices[0] when `indices` is not empty
  Access,      // T[indices]: a tensor element
  Unary,       // -a, !a
  Binary,      // a op b (arithmetic, comparison or logic)
  Call,        // a builtin function
  Reduce,      // sum/max/min/prod over reduction variables
};

// The result of the bounds analysis for one access.
enum class AccessCheck : uint8_t {
  InBounds,  // proven in bounds: no guard
  Guarded,   // may fall outside: the term of `ownerReduce` is skipped when it does
};

struct Value {
  ValueKind kind = ValueKind::Const;
  SourceRange range;
  bool isBool = false;

  double constant = 0;  // Const
  int var = -1;         // IndexValue

  // Access
  int tensor = -1;
  std::vector<IndexExpr> indices;
  std::vector<Interval> indexRanges;  // the range of each index over the variables' boxes
  AccessCheck check = AccessCheck::InBounds;
  int ownerReduce = -1;  // innermost enclosing Reduce id, -1 outside reductions

  UnaryOp unaryOp = UnaryOp::Neg;    // Unary
  BinaryOp binaryOp = BinaryOp::Add; // Binary
  Builtin builtin = Builtin::Exp;    // Call

  // Reduce
  ReduceKind reduceKind = ReduceKind::Sum;
  int reduceId = -1;            // unique within the computation
  std::vector<int> reduceVars;  // indices into Computation::vars

  std::vector<Value> args;  // operands, arguments; Reduce: args[0] is the body
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  bool isInput = false;
  bool isOutput = false;
  int computation = -1;  // index into Program::computations, -1 for inputs
  SourceRange defRange;  // the name in its defining statement
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// A node that the online-softmax pass rewrote (docs/online-softmax.md): its body is the naive
// expression in one fixed shape, and lowering computes it in one pass over the keys.
//   WeightedAverage  sum(j: exp(s - max(j': s')) * w) / sum(j'': exp(s'' - max(...)))
//   WeightedSum      sum(j: exp(s - max(j': s')) * w)   (not normalised)
//   LogSumExp        max(j: s) + log(sum(j': exp(s' - max(...))))
enum class OnlineForm : uint8_t { None, WeightedAverage, WeightedSum, LogSumExp };

// One statement in index form: tensor[lhsVars...] = body.
struct Computation {
  int tensor = -1;
  std::vector<IndexVar> vars;  // left-hand variables first (in order), then reduction variables
  int numLhsVars = 0;
  Value body;
  int numReduces = 0;
  bool wholeTensorForm = false;
  SourceRange range;
  // The source statement this computation comes from (its index among the program's
  // statements); passes that split or merge computations keep it, so fusion can tell which
  // nodes one statement produced.
  int statement = -1;
  OnlineForm online = OnlineForm::None;
};

struct LetInfo {
  std::string name;
  int64_t value = 0;
  bool isLiteral = false;  // may be overridden with -D
  bool overridden = false;
  SourceRange range;
};

struct Program {
  std::vector<LetInfo> lets;
  std::vector<TensorInfo> tensors;          // inputs and live computed tensors, in program order
  std::vector<Computation> computations;    // live computations, in program order
  std::vector<int> inputs;                  // tensor ids, in declaration order
  std::vector<int> outputs;                 // tensor ids, in declaration order

  int findTensor(std::string_view name) const;
};

// The index variables `v` depends on: those its accesses and index values use, less the ones
// its own reductions bind. Sorted, without duplicates. Lowering places a reduction at the
// innermost loop that binds one of them (so it runs once per iteration of that loop), and
// fusion counts a reduction's cost the same way.
std::vector<int> freeVars(const Value& v);

// Walks every Value node in `v`, parents before children.
template <typename F>
void forEachValue(const Value& v, F&& f) {
  f(v);
  for (const Value& a : v.args) forEachValue(a, f);
}

}  // namespace texc
