// The row machinery of RowEval.h.
#include "compiler/reference/RowEval.h"

#include <algorithm>
#include <stdexcept>

#include "core/IndexAlgebra.h"

namespace texc::rows {

namespace {

bool mentionsRowVar(const IndexExpr& e, const Ctx& c) {
  return std::any_of(c.rowVars.begin(), c.rowVars.end(), [&](int v) { return usesVar(e, v); });
}

// Prepares `li` for `e`. An affine expression is f(rest) + sum_k coef_k * row_k, so each
// coefficient is f at the k-th unit vector minus f at zero.
LaneIndex makeLaneIndex(const IndexExpr& e, const Ctx& c) {
  LaneIndex li;
  li.expr = &e;
  // Affine in the row variables: no floor division or modulo (an atom of the affine form) has a
  // row variable in its operand.
  const AffineForm form = affineForm(e);
  li.affine = std::none_of(c.rowVars.begin(), c.rowVars.end(), [&](int v) { return form.varInAtom(v); });
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

}  // namespace

void planRows(Ctx& c, const std::vector<int64_t>& outShape) {
  const Computation& comp = c.comp;
  const int numLhs = comp.numLhsVars;
  if (static_cast<size_t>(numLhs) != outShape.size())
    throw std::logic_error("reference: left-hand side rank differs from the tensor's");
  for (int d = 0; d < numLhs; ++d)
    if (comp.vars[d].extent != outShape[d]) throw std::logic_error("reference: left-hand extent differs from the tensor's");
  c.vals.assign(comp.vars.size(), 0);
  c.rowVars.clear();
  c.rowSlot.assign(comp.vars.size(), -1);
  c.laneRel.clear();
  c.outerRow = numLhs;
  c.inner = 1;
  if (numLhs > 0) {
    c.outerRow = numLhs - 1;
    while (c.outerRow > 0 && c.inner * comp.vars[c.outerRow].extent < kMinLanes) c.inner *= comp.vars[c.outerRow--].extent;
  }
  c.chunk = 1;
  if (c.outerRow < numLhs) c.chunk = std::max<int64_t>(1, std::min(kMaxLanes / c.inner, comp.vars[c.outerRow].extent));
  c.maxLanes = c.chunk * c.inner;
  for (int d = c.outerRow; d < numLhs; ++d) {
    c.rowSlot[d] = static_cast<int>(c.rowVars.size());
    c.rowVars.push_back(d);
    c.laneRel.emplace_back(static_cast<size_t>(c.maxLanes));
  }
  // Lane l's variables are l in mixed radix (chunk, extents of the inner row variables).
  for (int64_t l = 0; l < c.maxLanes; ++l) {
    int64_t rest = l;
    for (size_t k = c.rowVars.size(); k-- > 0;) {
      int64_t ext = k == 0 ? c.chunk : comp.vars[c.rowVars[k]].extent;
      c.laneRel[k][l] = rest % ext;
      rest /= ext;
    }
  }
}

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

void splitLanes(const double* cond, const uint8_t* mask, int64_t n, uint8_t* ma, uint8_t* mb, int64_t& na, int64_t& nb) {
  na = nb = 0;
  for (int64_t l = 0; l < n; ++l) {
    const bool active = !mask || mask[l];
    ma[l] = active && cond[l] != 0;
    mb[l] = active && cond[l] == 0;
    na += ma[l];
    nb += mb[l];
  }
}

bool termLanes(Node& x, Ctx& c, int64_t n, const uint8_t* mask, const uint8_t*& lanes) {
  uint8_t* scratch = x.m1.data();
  lanes = mask;
  for (Node* g : x.guards) {
    Span s = g->span = locate(*g, c, n, g->base);
    g->located = true;
    if (s == Span::AllOut) return false;
    if (s == Span::Partial) {
      const uint8_t* in = g->m1.data();
      if (lanes)
        for (int64_t l = 0; l < n; ++l) scratch[l] = lanes[l] & in[l];
      else
        std::copy(in, in + n, scratch);
      lanes = scratch;
    }
  }
  return !lanes || std::find(lanes, lanes + n, uint8_t{1}) != lanes + n;
}

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

Span locateRead(Node& a, Ctx& c, int64_t n, const uint8_t* mask, int64_t& base) {
  base = a.base;
  Span s = a.located ? a.span : locate(a, c, n, base);
  // A guarded access's reduction has masked the lanes where it falls outside, so an active lane
  // outside is a bug.
  bool missingGuard = false;
  if (s == Span::AllOut) {
    missingGuard = !mask || std::find(mask, mask + n, uint8_t{1}) != mask + n;
  } else if (s == Span::Partial && !a.located) {
    const uint8_t* ok = a.m1.data();
    for (int64_t l = 0; l < n; ++l) missingGuard = missingGuard || (!ok[l] && (!mask || mask[l]));
  }
  if (missingGuard) throw std::logic_error("reference: access out of bounds (missing guard)");
  return s;
}

Row gather(const Node& a, const double* data, double* out, Span s, int64_t base, int64_t n) {
  if (s == Span::AllIn && a.allAffine) {
    if (a.contiguous) return {data + base, false};
    for (int64_t l = 0; l < n; ++l) out[l] = data[base + a.laneOff[l]];
    return {out, false};
  }
  if (s == Span::AllOut) {
    std::fill(out, out + n, 0.0);
    return {out, false};
  }
  // Per-lane offsets: lane l at base + off[l] (base is 0 when they are absolute).
  const int64_t* off = a.allAffine ? a.laneOff.data() : a.offs.data();
  if (s == Span::AllIn) {
    for (int64_t l = 0; l < n; ++l) out[l] = data[base + off[l]];
  } else {
    // Lanes outside read element 0 and drop it, which keeps the loop free of branches.
    const uint8_t* ok = a.m1.data();
    for (int64_t l = 0; l < n; ++l) {
      double x = data[ok[l] ? base + off[l] : 0];
      out[l] = ok[l] ? x : 0.0;
    }
  }
  return {out, false};
}

Row indexRow(Node& x, Ctx& c, int64_t n) {
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

}  // namespace texc::rows
