// The row machinery shared by the float64 reference (Reference.cpp) and the error-bound evaluator
// (ErrorBound.cpp): both walk a computation's expression once per *row* of up to kMaxLanes
// consecutive output elements, every node computing one value per lane, so that they visit the
// same terms and skip the same ones. What is here decides which lanes a row has, where an access
// reads in each lane and which lanes a guard keeps; the evaluators add the arithmetic. Nothing
// here is shared with the compiler's passes or backends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/reference/Reference.h"
#include "frontend/Program.h"

namespace texc::rows {

// A row spans at most kMaxLanes elements: 8 KiB per node buffer, so a body's buffers stay in
// cache, and a strided read (K[j, d] across j) touches few enough lines and pages to stay cheap
// (4096 was ~15 % slower on attention and softmax, 512 slower on matmul). Trailing left-hand
// variables join the row until it has kMinLanes, so that a short innermost dimension (conv's 56
// columns) still amortises the walk.
inline constexpr int64_t kMaxLanes = 1024;
inline constexpr int64_t kMinLanes = 256;

// A row of values: p[l] for lane l, or p[0] in every lane when uniform.
struct Row {
  const double* p = nullptr;
  bool uniform = true;
  double operator[](int64_t l) const { return uniform ? p[0] : p[l]; }
};

// One index expression (an access's dimension, or an index value) and how it varies over the
// lanes. When it is affine in the row variables (no floor division or modulo over them), its
// value at lane l is its value at lane 0 plus delta[l], whatever the other variables are;
// otherwise it is evaluated lane by lane.
struct LaneIndex {
  const IndexExpr* expr = nullptr;
  bool affine = true;
  std::vector<int64_t> delta;
  int64_t lo = 0, hi = 0;  // min and max of delta
};

enum class Span { AllIn, Partial, AllOut };

// A Value node with what evaluating it over a row needs.
struct Node {
  const Value* v = nullptr;
  std::vector<Node> kids;
  bool invariant = true;     // the same value in every lane of a row: evaluated for one lane
  std::vector<double> buf;   // this node's lane values (a Reduce's accumulators)
  std::vector<uint8_t> m1, m2;  // Access: lanes in bounds; Reduce: term mask; Select: branch masks

  // Access and index value
  const RefTensor* tensor = nullptr;
  std::vector<LaneIndex> dims;
  std::vector<int64_t> strides;
  std::vector<int64_t> laneOff;  // every dim affine: offset of lane l from lane 0
  std::vector<int64_t> offs;     // otherwise: the offset of each lane at the current point
  std::vector<int64_t> at;       // every dim affine: each index at lane 0 (scratch)
  bool allAffine = true;
  bool contiguous = false;  // laneOff[l] == l: the row is a slice of the tensor
  // A guarded access located by its reduction for the current term, so evaluating it does not
  // locate it again (its mask already excludes the lanes outside).
  bool located = false;
  Span span = Span::AllIn;
  int64_t base = 0;

  std::vector<Node*> guards;  // Reduce: the guarded accesses it owns

  // Used by the error-bound evaluator only (left empty by the reference): an access's tensor of
  // bounds, the node's lane bounds, and a reduction's other per-lane accumulators.
  const std::vector<double>* bounds = nullptr;
  std::vector<double> ebuf;
  std::vector<double> aux;
};

// The state of one computation's evaluation.
struct Ctx {
  const Computation& comp;
  const std::vector<RefTensor>& tensors;
  std::vector<int64_t> vals;  // index variables; row variables hold lane 0's values
  std::vector<int> rowVars;   // the row's left-hand variables, outermost first
  std::vector<int> rowSlot;   // by variable: its position in rowVars, or -1
  std::vector<std::vector<int64_t>> laneRel;  // by row variable: lane l's value minus lane 0's
  int64_t maxLanes = 1;
  int outerRow = 0;   // the row's outermost variable (numLhsVars: rank 0, one lane)
  int64_t inner = 1;  // lanes per value of that variable
  int64_t chunk = 1;  // values of that variable per row
};

// Checks that the left-hand side matches `outShape` and chooses the row (sets everything in `c`
// past `tensors`): the innermost left-hand variable, joined by outer ones while it is shorter
// than kMinLanes; its outermost variable is cut into chunks so a row has at most kMaxLanes lanes.
// A row is then a contiguous run of the output.
void planRows(Ctx& c, const std::vector<int64_t>& outShape);

// Sets the row variables to lane l's values (restored by the caller from `lane0`).
void setLane(Ctx& c, const std::vector<int64_t>& lane0, int64_t l);
std::vector<int64_t> lane0Values(const Ctx& c);
void restoreLane0(Ctx& c, const std::vector<int64_t>& lane0);

// Builds the node for `v`, checking the invariants evaluation relies on. `ready` marks tensors
// already evaluated. Then collectGuards(root, nullptr) records in each Reduce node the guarded
// accesses its body owns.
Node build(const Value& v, int enclosingReduce, const Ctx& c, const std::vector<bool>& ready);
void collectGuards(Node& n, Node* owner);

// Where access `a` reads at the current point for lanes [0, n): lane l at base + laneOff[l]
// (every dim affine) or offs[l]. When Partial, m1[l] says whether lane l is in bounds.
Span locate(Node& a, Ctx& c, int64_t n, int64_t& base);

// The lanes of the current term of reduction `x`: locates each of x's guarded accesses and
// combines their in-bounds masks with `mask` (all lanes when null) in x.m1. Returns false when no
// lane takes part (a guard is out for the whole row, or no lane survives); else sets `lanes` to
// the mask to use, null when every lane takes part.
bool termLanes(Node& x, Ctx& c, int64_t n, const uint8_t* mask, const uint8_t*& lanes);

// A select's lanes: ma[l] marks the active lanes (all when `mask` is null) whose condition is
// true, mb[l] those whose condition is false; na and nb count them.
void splitLanes(const double* cond, const uint8_t* mask, int64_t n, uint8_t* ma, uint8_t* mb, int64_t& na, int64_t& nb);

// Where an access read reads for the active lanes of `mask` (all when null): its reduction's
// location when it has one, else locate's. Throws std::logic_error when an active lane falls
// outside the tensor (a missing guard).
Span locateRead(Node& a, Ctx& c, int64_t n, const uint8_t* mask, int64_t& base);

// The row of `data` (a tensor laid out like a.tensor) at a location from locateRead, in `out`
// unless it is a contiguous slice of `data`. Lanes outside read 0.
Row gather(const Node& a, const double* data, double* out, Span s, int64_t base, int64_t n);

// The lane values of an index-value node (a variable, or the expression fusion put in its place).
Row indexRow(Node& x, Ctx& c, int64_t n);

// Calls f(size_t off, int64_t n) for every row, in order: off is the row's first element in the
// output, n its number of lanes; c.vals holds lane 0's variables meanwhile.
template <typename F>
void forEachRow(Ctx& c, F f) {
  const int numLhs = c.comp.numLhsVars;
  size_t off = 0;
  for (;;) {
    if (c.outerRow == numLhs) {
      f(off, int64_t{1});
      off += 1;
    } else {
      const int64_t extent = c.comp.vars[c.outerRow].extent;
      for (int64_t y0 = 0; y0 < extent; y0 += c.chunk) {
        c.vals[c.outerRow] = y0;
        int64_t n = std::min(c.chunk, extent - y0) * c.inner;
        f(off, n);
        off += static_cast<size_t>(n);
      }
      c.vals[c.outerRow] = 0;
    }
    // The next value of the left-hand variables outside the row, the last fastest.
    int d = c.outerRow - 1;
    for (; d >= 0; --d) {
      if (++c.vals[d] < c.comp.vars[d].extent) break;
      c.vals[d] = 0;
    }
    if (d < 0) break;
  }
}

}  // namespace texc::rows
