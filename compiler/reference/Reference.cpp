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
// the element-wise walk. The row machinery (which lanes, where an access reads, which lanes a
// guard keeps) is in RowEval.h, shared with the error-bound evaluator (ErrorBound.cpp) only:
// nothing here is shared with the compiler's passes or backends.
#include "compiler/reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "compiler/reference/RowEval.h"

namespace texc {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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

using rows::Ctx;
using rows::Node;
using rows::Row;
using rows::Span;

Row eval(Node& x, Ctx& c, int64_t n, const uint8_t* mask);

Row evalAccess(Node& a, Ctx& c, int64_t n, const uint8_t* mask) {
  int64_t base = 0;
  Span s = rows::locateRead(a, c, n, mask, base);
  return rows::gather(a, a.tensor->data.data(), a.buf.data(), s, base, n);
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
  rows::splitLanes(cond.p, mask, n, ma, mb, na, nb);
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
  for (;;) {
    const uint8_t* m = nullptr;
    const bool skipped = !termLanes(x, c, n, mask, m);
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
    case ValueKind::IndexValue: return rows::indexRow(x, c, n);
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
  Ctx c{comp, tensors, {}, {}, {}, {}, 1, 0, 1, 1};
  rows::planRows(c, out.shape);
  Node root = rows::build(comp.body, -1, c, ready);
  rows::collectGuards(root, nullptr);
  if (out.data.empty()) return;
  rows::forEachRow(c, [&](size_t off, int64_t n) {
    Row r = eval(root, c, n, nullptr);
    if (r.uniform)
      std::fill(out.data.begin() + off, out.data.begin() + off + n, r.p[0]);
    else
      std::copy(r.p, r.p + n, out.data.begin() + off);
  });
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
    // The reference computes exactly; the rounding a fused f16/bf16 producer keeps is part of
    // the error bound (ErrorBound.cpp), as a stored f16/bf16 tensor's is.
    case Builtin::RoundF16:
    case Builtin::RoundBF16: return a;
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
