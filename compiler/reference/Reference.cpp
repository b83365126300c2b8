// The float64 reference interpreter.
//
// The meaning is spec 5's, element by element: an output element is its value expression in
// float64, a reduction combines its terms in the order of its variables (the last fastest), and
// a term is skipped when a guarded access it owns falls outside its tensor. Walking the
// expression tree once per element (or per term) costs far more than the arithmetic, so the walk
// is done once per *row*: up to kMaxLanes consecutive output elements (the trailing left-hand
// variables), every node computing one double per lane. A reduction loops over its terms outside
// the lanes and combines each term into a row of accumulators, so every element still sees its
// terms in the same order with the same float64 operations: the results are bit for bit those of
// the element-wise walk. Nothing here is shared with the compiler's passes or backends.
#include "compiler/reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace texc {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A row spans at most kMaxLanes elements: 8 KiB per node buffer, so a body's buffers stay in
// cache, and a strided read (K[j, d] across j) touches few enough lines and pages to stay cheap
// (4096 was ~15 % slower on attention and softmax, 512 slower on matmul). Trailing left-hand
// variables join the row until it has kMinLanes, so that a short innermost dimension (conv's 56
// columns) still amortises the walk.
constexpr int64_t kMaxLanes = 1024;
constexpr int64_t kMinLanes = 256;

// np.maximum / np.minimum: a NaN on either side gives NaN.
// NaN propagates (np.maximum); -0 < +0 (IEEE maximum, as the compiled code computes it).
double maxNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return maximumOf(a, b);
}
double minNaN(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  return minimumOf(a, b);
}

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
};

// Sets the row variables to lane l's values (restored by the caller from `lane0`).
void setLane(Ctx& c, const std::vector<int64_t>& lane0, int64_t l) {
  for (size_t k = 0; k < c.rowVars.size(); ++k) c.vals[c.rowVars[k]] = lane0[k] + c.laneRel[k][l];
}

std::vector<int64_t> lane0Values(const Ctx& c) {
  std::vector<int64_t> v;
  for (int var : c.rowVars) v.push_back(c.vals[var]);
  return v;
}

void restoreLane0(Ctx& c, const std::vector<int64_t>& lane0) {
  for (size_t k = 0; k < c.rowVars.size(); ++k) c.vals[c.rowVars[k]] = lane0[k];
}

bool mentionsRowVar(const IndexExpr& e, const Ctx& c) {
  if (e.kind == IndexExpr::Kind::Var) return c.rowSlot[e.var] >= 0;
  for (const IndexExpr& o : e.ops)
    if (mentionsRowVar(o, c)) return true;
  return false;
}

// Affine in the row variables: no floor division or modulo has a row variable in its operand.
bool rowAffine(const IndexExpr& e, const Ctx& c) {
  if ((e.kind == IndexExpr::Kind::FloorDiv || e.kind == IndexExpr::Kind::Mod) && mentionsRowVar(e, c)) return false;
  for (const IndexExpr& o : e.ops)
    if (!rowAffine(o, c)) return false;
  return true;
}

// Prepares `li` for `e`. An affine expression is f(rest) + sum_k coef_k * row_k, so each
// coefficient is f at the k-th unit vector minus f at zero.
LaneIndex makeLaneIndex(const IndexExpr& e, const Ctx& c) {
  LaneIndex li;
  li.expr = &e;
  li.affine = rowAffine(e, c);
  if (!li.affine) return li;
  std::vector<int64_t> zero(c.comp.vars.size(), 0);
  int64_t f0 = evalIndex(e, zero);
  li.delta.assign(static_cast<size_t>(c.maxLanes), 0);
  for (size_t k = 0; k < c.rowVars.size(); ++k) {
    std::vector<int64_t> unit = zero;
    unit[c.rowVars[k]] = 1;
    int64_t coef = evalIndex(e, unit) - f0;
    if (coef == 0) continue;
    for (int64_t l = 0; l < c.maxLanes; ++l) li.delta[l] += coef * c.laneRel[k][l];
  }
  auto [lo, hi] = std::minmax_element(li.delta.begin(), li.delta.end());
  li.lo = *lo;
  li.hi = *hi;
  return li;
}

// Builds the node for `v`, checking the invariants evaluation relies on. `ready` marks tensors
// already evaluated.
Node build(const Value& v, int enclosingReduce, const Ctx& c, const std::vector<bool>& ready) {
  Node n;
  n.v = &v;
  if (v.kind == ValueKind::Access) {
    if (v.tensor < 0 || static_cast<size_t>(v.tensor) >= ready.size() || !ready[v.tensor])
      throw std::logic_error("reference: access to a tensor not yet computed");
    n.tensor = &c.tensors[v.tensor];
    const std::vector<int64_t>& shape = n.tensor->shape;
    if (v.indices.size() != shape.size()) throw std::logic_error("reference: access rank differs from its tensor's");
    if (v.check == AccessCheck::Guarded && (enclosingReduce < 0 || v.ownerReduce != enclosingReduce))
      throw std::logic_error("reference: guarded access outside its owning reduction");
    n.strides.assign(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;) n.strides[d - 1] = n.strides[d] * shape[d];
  }
  if (v.kind == ValueKind::Reduce) {
    if (v.reduceId < 0 || v.args.size() != 1) throw std::logic_error("reference: malformed reduction");
    for (int var : v.reduceVars)
      if (c.comp.vars[var].extent <= 0) throw std::logic_error("reference: empty reduction range");
    enclosingReduce = v.reduceId;
  }
  if (v.kind == ValueKind::Access || (v.kind == ValueKind::IndexValue && !v.indices.empty())) {
    for (const IndexExpr& e : v.indices) {
      n.dims.push_back(makeLaneIndex(e, c));
      n.allAffine = n.allAffine && n.dims.back().affine;
      n.invariant = n.invariant && !mentionsRowVar(e, c);
    }
    n.at.resize(n.dims.size());
    if (v.kind == ValueKind::Access && n.allAffine) {
      n.laneOff.assign(static_cast<size_t>(c.maxLanes), 0);
      n.contiguous = true;
      for (int64_t l = 0; l < c.maxLanes; ++l) {
        for (size_t d = 0; d < n.dims.size(); ++d) n.laneOff[l] += n.strides[d] * n.dims[d].delta[l];
        n.contiguous = n.contiguous && n.laneOff[l] == l;
      }
    }
  }
  if (v.kind == ValueKind::IndexValue && v.indices.empty()) n.invariant = c.rowSlot[v.var] < 0;
  for (const Value& a : v.args) {
    n.kids.push_back(build(a, enclosingReduce, c, ready));
    n.invariant = n.invariant && n.kids.back().invariant;
  }
  n.buf.resize(static_cast<size_t>(c.maxLanes));
  if (v.kind == ValueKind::Access || v.kind == ValueKind::Reduce || (v.kind == ValueKind::Call && v.builtin == Builtin::Select))
    n.m1.resize(static_cast<size_t>(c.maxLanes));
  if (v.kind == ValueKind::Call && v.builtin == Builtin::Select) n.m2.resize(static_cast<size_t>(c.maxLanes));
  if (!n.allAffine) n.offs.resize(static_cast<size_t>(c.maxLanes));
  return n;
}

// Records in `owner` the guarded accesses of its body outside nested reductions (the tree is
// complete, so the pointers stay valid).
void collectGuards(Node& n, Node* owner) {
  if (n.v->kind == ValueKind::Access && n.v->check == AccessCheck::Guarded) owner->guards.push_back(&n);
  if (n.v->kind == ValueKind::Reduce) owner = &n;
  for (Node& k : n.kids) collectGuards(k, owner);
}

// Where access `a` reads at the current point for lanes [0, n): lane l at base + laneOff[l]
// (every dim affine) or offs[l]. When Partial, m1[l] says whether lane l is in bounds.
Span locate(Node& a, Ctx& c, int64_t n, int64_t& base) {
  const std::vector<int64_t>& shape = a.tensor->shape;
  if (a.allAffine) {
    base = 0;
    bool allIn = true;
    std::vector<int64_t>& at = a.at;
    for (size_t d = 0; d < a.dims.size(); ++d) {
      at[d] = evalIndex(*a.dims[d].expr, c.vals);
      base += at[d] * a.strides[d];
      if (at[d] + a.dims[d].hi < 0 || at[d] + a.dims[d].lo >= shape[d]) return Span::AllOut;
      allIn = allIn && at[d] + a.dims[d].lo >= 0 && at[d] + a.dims[d].hi < shape[d];
    }
    if (allIn) return Span::AllIn;
    // Lane by lane, only in the dimensions that are not in bounds for the whole row.
    uint8_t* __restrict ok = a.m1.data();
    std::fill(ok, ok + n, uint8_t{1});
    for (size_t d = 0; d < a.dims.size(); ++d) {
      const int64_t first = at[d];
      if (first + a.dims[d].lo >= 0 && first + a.dims[d].hi < shape[d]) continue;
      const int64_t* __restrict delta = a.dims[d].delta.data();
      const uint64_t extent = static_cast<uint64_t>(shape[d]);
      for (int64_t l = 0; l < n; ++l) ok[l] &= static_cast<uint64_t>(first + delta[l]) < extent;  // also < 0
    }
    int64_t in = 0;
    for (int64_t l = 0; l < n; ++l) in += ok[l];
    return in == n ? Span::AllIn : in == 0 ? Span::AllOut : Span::Partial;
  }
  // Some index is not affine in the row variables: every lane on its own.
  std::vector<int64_t> lane0 = lane0Values(c);
  int64_t in = 0;
  for (int64_t l = 0; l < n; ++l) {
    setLane(c, lane0, l);
    int64_t off = 0;
    bool ok = true;
    for (size_t d = 0; d < a.dims.size(); ++d) {
      int64_t i = evalIndex(*a.dims[d].expr, c.vals);
      ok = ok && i >= 0 && i < shape[d];
      off = off * shape[d] + i;
    }
    a.offs[l] = off;
    a.m1[l] = ok;
    in += ok;
  }
  restoreLane0(c, lane0);
  base = 0;
  return in == n ? Span::AllIn : in == 0 ? Span::AllOut : Span::Partial;
}

Row eval(Node& x, Ctx& c, int64_t n, const uint8_t* mask);

Row evalAccess(Node& a, Ctx& c, int64_t n, const uint8_t* mask) {
  int64_t base = a.base;
  Span s = a.located ? a.span : locate(a, c, n, base);
  const double* data = a.tensor->data.data();
  double* out = a.buf.data();
  if (s == Span::AllIn && a.allAffine) {
    if (a.contiguous) return {data + base, false};
    for (int64_t l = 0; l < n; ++l) out[l] = data[base + a.laneOff[l]];
    return {out, false};
  }
  // Only lanes in bounds are read. A guarded access's reduction has masked the lanes where it
  // falls outside, so an active lane outside is a bug.
  const uint8_t* ok = a.m1.data();
  bool missingGuard = false;
  if (s == Span::AllOut) {
    std::fill(out, out + n, 0.0);
    missingGuard = !mask || std::find(mask, mask + n, uint8_t{1}) != mask + n;
  } else {
    // Per-lane offsets: lane l at base + off[l] (base is 0 when they are absolute).
    const int64_t* off = a.allAffine ? a.laneOff.data() : a.offs.data();
    if (s == Span::AllIn) {
      for (int64_t l = 0; l < n; ++l) out[l] = data[base + off[l]];
    } else {
      // Lanes outside read element 0 and drop it, which keeps the loop free of branches.
      for (int64_t l = 0; l < n; ++l) {
        double x = data[ok[l] ? base + off[l] : 0];
        out[l] = ok[l] ? x : 0.0;
      }
      if (!a.located)
        for (int64_t l = 0; l < n; ++l) missingGuard = missingGuard || (!ok[l] && (!mask || mask[l]));
    }
  }
  if (missingGuard) throw std::logic_error("reference: access out of bounds (missing guard)");
  return {out, false};
}

Row evalIndexValue(Node& x, Ctx& c, int64_t n) {
  const Value& v = *x.v;
  double* out = x.buf.data();
  if (v.indices.empty()) {
    int slot = c.rowSlot[v.var];
    if (slot < 0) {
      out[0] = static_cast<double>(c.vals[v.var]);
      return {out, true};
    }
    for (int64_t l = 0; l < n; ++l) out[l] = static_cast<double>(c.vals[v.var] + c.laneRel[slot][l]);
    return {out, false};
  }
  const LaneIndex& li = x.dims[0];
  if (li.affine) {
    int64_t at = evalIndex(*li.expr, c.vals);
    for (int64_t l = 0; l < n; ++l) out[l] = static_cast<double>(at + li.delta[l]);
    return {out, false};
  }
  std::vector<int64_t> lane0 = lane0Values(c);
  for (int64_t l = 0; l < n; ++l) {
    setLane(c, lane0, l);
    out[l] = static_cast<double>(evalIndex(*li.expr, c.vals));
  }
  restoreLane0(c, lane0);
  return {out, false};
}

// out = f(a) lane by lane.
template <typename F>
Row map1(Row a, int64_t n, double* out, F f) {
  if (a.uniform) {
    out[0] = f(a.p[0]);
    return {out, true};
  }
  for (int64_t l = 0; l < n; ++l) out[l] = f(a.p[l]);
  return {out, false};
}

// out = f(a, b) lane by lane; a uniform side stays a scalar in the loop.
template <typename F>
Row map2(Row a, Row b, int64_t n, double* out, F f) {
  if (a.uniform && b.uniform) {
    out[0] = f(a.p[0], b.p[0]);
    return {out, true};
  }
  if (a.uniform) {
    double s = a.p[0];
    for (int64_t l = 0; l < n; ++l) out[l] = f(s, b.p[l]);
  } else if (b.uniform) {
    double s = b.p[0];
    for (int64_t l = 0; l < n; ++l) out[l] = f(a.p[l], s);
  } else {
    for (int64_t l = 0; l < n; ++l) out[l] = f(a.p[l], b.p[l]);
  }
  return {out, false};
}

Row evalBinary(Node& x, Ctx& c, int64_t n, const uint8_t* mask) {
  Row a = eval(x.kids[0], c, n, mask);
  Row b = eval(x.kids[1], c, n, mask);
  double* o = x.buf.data();
  switch (x.v->binaryOp) {
    case BinaryOp::Add: return map2(a, b, n, o, [](double p, double q) { return p + q; });
    case BinaryOp::Sub: return map2(a, b, n, o, [](double p, double q) { return p - q; });
    case BinaryOp::Mul: return map2(a, b, n, o, [](double p, double q) { return p * q; });
    case BinaryOp::Div: return map2(a, b, n, o, [](double p, double q) { return p / q; });
    case BinaryOp::Lt: return map2(a, b, n, o, [](double p, double q) { return double(p < q); });
    case BinaryOp::Le: return map2(a, b, n, o, [](double p, double q) { return double(p <= q); });
    case BinaryOp::Gt: return map2(a, b, n, o, [](double p, double q) { return double(p > q); });
    case BinaryOp::Ge: return map2(a, b, n, o, [](double p, double q) { return double(p >= q); });
    case BinaryOp::Eq: return map2(a, b, n, o, [](double p, double q) { return double(p == q); });
    case BinaryOp::Ne: return map2(a, b, n, o, [](double p, double q) { return double(p != q); });
    case BinaryOp::And: return map2(a, b, n, o, [](double p, double q) { return double(p != 0 && q != 0); });
    case BinaryOp::Or: return map2(a, b, n, o, [](double p, double q) { return double(p != 0 || q != 0); });
    case BinaryOp::Mod: break;  // sema rejects % in values
  }
  throw std::logic_error("reference: '%' in a value expression");
}

// select evaluates each branch only in the lanes that choose it (the other branch need not be
// meaningful there), and not at all when no lane does.
Row evalSelect(Node& x, Ctx& c, int64_t n, const uint8_t* mask) {
  Row cond = eval(x.kids[0], c, n, mask);
  if (cond.uniform) return eval(x.kids[cond.p[0] != 0 ? 1 : 2], c, n, mask);
  uint8_t* ma = x.m1.data();
  uint8_t* mb = x.m2.data();
  int64_t na = 0, nb = 0;
  for (int64_t l = 0; l < n; ++l) {
    bool active = !mask || mask[l];
    ma[l] = active && cond.p[l] != 0;
    mb[l] = active && cond.p[l] == 0;
    na += ma[l];
    nb += mb[l];
  }
  if (nb == 0) return eval(x.kids[1], c, n, ma);
  if (na == 0) return eval(x.kids[2], c, n, mb);
  Row a = eval(x.kids[1], c, n, ma);
  Row b = eval(x.kids[2], c, n, mb);
  double* out = x.buf.data();
  for (int64_t l = 0; l < n; ++l) out[l] = ma[l] ? a[l] : b[l];
  return {out, false};
}

Row evalCall(Node& x, Ctx& c, int64_t n, const uint8_t* mask) {
  const Value& v = *x.v;
  if (v.builtin == Builtin::Select) return evalSelect(x, c, n, mask);
  Row a = eval(x.kids[0], c, n, mask);
  Builtin fn = v.builtin;
  if (x.kids.size() == 1) return map1(a, n, x.buf.data(), [fn](double p) { return applyBuiltin(fn, p); });
  Row b = eval(x.kids[1], c, n, mask);
  return map2(a, b, n, x.buf.data(), [fn](double p, double q) { return applyBuiltin(fn, p, q); });
}

// acc[l] = f(acc[l], t[l]) in the active lanes.
template <typename F>
void fold(double* acc, Row t, int64_t n, const uint8_t* mask, F f) {
  if (mask && t.uniform) {
    double s = t.p[0];
    for (int64_t l = 0; l < n; ++l) acc[l] = mask[l] ? f(acc[l], s) : acc[l];
  } else if (mask) {
    for (int64_t l = 0; l < n; ++l) acc[l] = mask[l] ? f(acc[l], t.p[l]) : acc[l];
  } else if (t.uniform) {
    double s = t.p[0];
    for (int64_t l = 0; l < n; ++l) acc[l] = f(acc[l], s);
  } else {
    for (int64_t l = 0; l < n; ++l) acc[l] = f(acc[l], t.p[l]);
  }
}

// The terms in the order of the reduction variables (the last fastest), each combined into the
// lanes it is not skipped in.
Row evalReduce(Node& x, Ctx& c, int64_t n, const uint8_t* mask) {
  const Value& v = *x.v;
  double* acc = x.buf.data();
  std::fill(acc, acc + n, reductionIdentity(v.reduceKind));
  for (int var : v.reduceVars) c.vals[var] = 0;
  uint8_t* termMask = x.m1.data();
  for (;;) {
    const uint8_t* m = mask;
    bool skipped = false;
    for (Node* g : x.guards) {
      Span s = g->span = locate(*g, c, n, g->base);
      g->located = true;
      if (s == Span::AllOut) {
        skipped = true;
        break;
      }
      if (s == Span::Partial) {
        const uint8_t* in = g->m1.data();
        if (m)
          for (int64_t l = 0; l < n; ++l) termMask[l] = m[l] & in[l];
        else
          std::copy(in, in + n, termMask);
        m = termMask;
      }
    }
    if (!skipped && m) skipped = std::find(m, m + n, uint8_t{1}) == m + n;
    if (!skipped) {
      Row t = eval(x.kids[0], c, n, m);
      switch (v.reduceKind) {
        case ReduceKind::Sum: fold(acc, t, n, m, [](double a, double b) { return reductionCombine(ReduceKind::Sum, a, b); }); break;
        case ReduceKind::Prod: fold(acc, t, n, m, [](double a, double b) { return reductionCombine(ReduceKind::Prod, a, b); }); break;
        case ReduceKind::Max: fold(acc, t, n, m, [](double a, double b) { return reductionCombine(ReduceKind::Max, a, b); }); break;
        case ReduceKind::Min: fold(acc, t, n, m, [](double a, double b) { return reductionCombine(ReduceKind::Min, a, b); }); break;
      }
    }
    int k = static_cast<int>(v.reduceVars.size()) - 1;
    for (; k >= 0; --k) {
      int var = v.reduceVars[k];
      if (++c.vals[var] < c.comp.vars[var].extent) break;
      c.vals[var] = 0;
    }
    if (k < 0) break;
  }
  for (Node* g : x.guards) g->located = false;
  return {acc, false};
}

Row evalNode(Node& x, Ctx& c, int64_t n, const uint8_t* mask) {
  const Value& v = *x.v;
  switch (v.kind) {
    case ValueKind::Const: x.buf[0] = v.constant; return {x.buf.data(), true};
    case ValueKind::IndexValue: return evalIndexValue(x, c, n);
    case ValueKind::Access: return evalAccess(x, c, n, mask);
    case ValueKind::Unary: {
      Row a = eval(x.kids[0], c, n, mask);
      if (v.unaryOp == UnaryOp::Neg) return map1(a, n, x.buf.data(), [](double p) { return -p; });
      return map1(a, n, x.buf.data(), [](double p) { return p == 0 ? 1.0 : 0.0; });
    }
    case ValueKind::Binary: return evalBinary(x, c, n, mask);
    case ValueKind::Call: return evalCall(x, c, n, mask);
    case ValueKind::Reduce: return evalReduce(x, c, n, mask);
  }
  return {x.buf.data(), true};
}

// A node whose value is the same in every lane is evaluated for lane 0 only (callers evaluate a
// node only when some lane is active, so lane 0 stands for it).
Row eval(Node& x, Ctx& c, int64_t n, const uint8_t* mask) {
  if (x.invariant && n > 1) {
    n = 1;
    mask = nullptr;
  }
  Row r = evalNode(x, c, n, mask);
  if (n == 1) r.uniform = true;
  return r;
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void evaluateComputation(const Computation& comp, std::vector<RefTensor>& tensors, const std::vector<bool>& ready) {
  RefTensor& out = tensors[comp.tensor];
  const int numLhs = comp.numLhsVars;
  if (static_cast<size_t>(numLhs) != out.shape.size())
    throw std::logic_error("reference: left-hand side rank differs from the tensor's");
  for (int d = 0; d < numLhs; ++d)
    if (comp.vars[d].extent != out.shape[d]) throw std::logic_error("reference: left-hand extent differs from the tensor's");

  // The row: the innermost left-hand variable, joined by outer ones while it is shorter than
  // kMinLanes; its outermost variable is cut into chunks so a row has at most kMaxLanes lanes.
  // A row is then a contiguous run of the output.
  Ctx c{comp, tensors, std::vector<int64_t>(comp.vars.size(), 0), {}, std::vector<int>(comp.vars.size(), -1), {}, 1};
  int outerRow = numLhs;  // the row's outermost variable (numLhs: rank 0, one lane)
  int64_t inner = 1;      // lanes per value of that variable
  if (numLhs > 0) {
    outerRow = numLhs - 1;
    while (outerRow > 0 && inner * comp.vars[outerRow].extent < kMinLanes) inner *= comp.vars[outerRow--].extent;
  }
  int64_t chunk = 1;  // values of the outermost row variable per row
  if (outerRow < numLhs) chunk = std::max<int64_t>(1, std::min(kMaxLanes / inner, comp.vars[outerRow].extent));
  c.maxLanes = chunk * inner;
  for (int d = outerRow; d < numLhs; ++d) {
    c.rowSlot[d] = static_cast<int>(c.rowVars.size());
    c.rowVars.push_back(d);
    c.laneRel.emplace_back(static_cast<size_t>(c.maxLanes));
  }
  // Lane l's variables are l in mixed radix (chunk, extents of the inner row variables).
  for (int64_t l = 0; l < c.maxLanes; ++l) {
    int64_t rest = l;
    for (size_t k = c.rowVars.size(); k-- > 0;) {
      int64_t ext = k == 0 ? chunk : comp.vars[c.rowVars[k]].extent;
      c.laneRel[k][l] = rest % ext;
      rest /= ext;
    }
  }

  Node root = build(comp.body, -1, c, ready);
  collectGuards(root, nullptr);
  if (out.data.empty()) return;

  size_t off = 0;
  for (;;) {
    if (outerRow == numLhs) {
      Row r = eval(root, c, 1, nullptr);
      out.data[off++] = r[0];
    } else {
      const int64_t extent = comp.vars[outerRow].extent;
      for (int64_t y0 = 0; y0 < extent; y0 += chunk) {
        c.vals[outerRow] = y0;
        int64_t n = std::min(chunk, extent - y0) * inner;
        Row r = eval(root, c, n, nullptr);
        if (r.uniform)
          std::fill(out.data.begin() + off, out.data.begin() + off + n, r.p[0]);
        else
          std::copy(r.p, r.p + n, out.data.begin() + off);
        off += n;
      }
      c.vals[outerRow] = 0;
    }
    // The next value of the left-hand variables outside the row, the last fastest.
    int d = outerRow - 1;
    for (; d >= 0; --d) {
      if (++c.vals[d] < comp.vars[d].extent) break;
      c.vals[d] = 0;
    }
    if (d < 0) break;
  }
}

}  // namespace

double reductionIdentity(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return 0;
    case ReduceKind::Prod: return 1;
    case ReduceKind::Max: return -kInf;
    case ReduceKind::Min: return kInf;
  }
  return 0;
}

double reductionCombine(ReduceKind k, double acc, double x) {
  switch (k) {
    case ReduceKind::Sum: return acc + x;
    case ReduceKind::Prod: return acc * x;
    case ReduceKind::Max: return maxNaN(acc, x);
    case ReduceKind::Min: return minNaN(acc, x);
  }
  return acc;
}

double applyBuiltin(Builtin fn, double a, double b) {
  switch (fn) {
    case Builtin::Exp: return std::exp(a);
    case Builtin::Log: return std::log(a);
    case Builtin::Sqrt: return std::sqrt(a);
    case Builtin::Rsqrt: return 1 / std::sqrt(a);
    case Builtin::Tanh: return std::tanh(a);
    case Builtin::Sigmoid: return 1 / (1 + std::exp(-a));
    case Builtin::Relu: return maxNaN(a, 0);
    case Builtin::Abs: return std::fabs(a);
    case Builtin::Erf: return std::erf(a);
    case Builtin::Sin: return std::sin(a);
    case Builtin::Cos: return std::cos(a);
    case Builtin::Floor: return std::floor(a);
    case Builtin::Ceil: return std::ceil(a);
    case Builtin::Pow: return std::pow(a, b);
    case Builtin::Min: return minNaN(a, b);
    case Builtin::Max: return maxNaN(a, b);
    case Builtin::Select: break;
  }
  throw std::logic_error("applyBuiltin: select has no float64 function");
}

std::vector<RefTensor> evaluateReference(const Program& p, const std::vector<RefTensor>& inputs) {
  if (inputs.size() != p.inputs.size())
    throw std::invalid_argument("reference: expected " + std::to_string(p.inputs.size()) + " inputs, got " +
                                std::to_string(inputs.size()));
  std::vector<RefTensor> tensors(p.tensors.size());
  std::vector<bool> ready(p.tensors.size(), false);
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const TensorInfo& info = p.tensors[p.inputs[i]];
    const RefTensor& in = inputs[i];
    if (in.shape != info.shape || in.data.size() != static_cast<size_t>(info.numElements()))
      throw std::invalid_argument("reference: input '" + info.name + "' has shape " + shapeText(in.shape) + " and " +
                                  std::to_string(in.data.size()) + " elements, expected " + shapeText(info.shape));
    tensors[p.inputs[i]] = in;
    ready[p.inputs[i]] = true;
  }
  for (const Computation& comp : p.computations) {
    if (comp.tensor < 0 || static_cast<size_t>(comp.tensor) >= p.tensors.size() || ready[comp.tensor])
      throw std::logic_error("reference: computation defines a bad or already defined tensor");
    const TensorInfo& info = p.tensors[comp.tensor];
    tensors[comp.tensor].shape = info.shape;
    tensors[comp.tensor].data.assign(static_cast<size_t>(info.numElements()), 0.0);
    evaluateComputation(comp, tensors, ready);
    ready[comp.tensor] = true;
  }
  return tensors;
}

ErrorStats compareToReference(const double* ref, const double* got, size_t n) {
  ErrorStats s;
  double scale = 0;
  for (size_t i = 0; i < n; ++i)
    if (std::isfinite(ref[i])) scale = std::max(scale, std::fabs(ref[i]));
  double floor = std::max(kRelScale * scale, kRelErrorTiny);
  for (size_t i = 0; i < n; ++i) {
    double r = ref[i], g = got[i];
    if (!std::isfinite(r) || !std::isfinite(g)) {
      bool same = (std::isnan(r) && std::isnan(g)) || r == g;  // r == g: the same infinity
      if (!same) s.maxAbs = s.maxRel = kInf;
      continue;
    }
    double d = std::fabs(g - r);
    s.maxAbs = std::max(s.maxAbs, d);
    s.maxRel = std::max(s.maxRel, d / std::max(std::fabs(r), floor));
  }
  return s;
}

}  // namespace texc
