// The error-bound evaluator of ErrorBound.h. It walks each computation a row at a time with the
// float64 reference's machinery (RowEval.h): the same rows, the same terms skipped, the same
// branches taken, every node computing a value and a bound per lane. The value of every lane gets
// the float64 operations of the reference in the same order, so the values are bit for bit the
// reference's; the bound of every lane gets the per-element formulas below, applied to that
// element's operands, so the bounds are those of an element-wise walk.
#include "compiler/reference/ErrorBound.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "compiler/reference/Reference.h"
#include "compiler/reference/RowEval.h"

namespace texc {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The extra rounding of storing a value computed in f32 into an f16 or bf16 tensor: relative
// (half an ulp) for normal results, and at most half the smallest subnormal for the results
// below the smallest normal, where the spacing is fixed (f16: 2^-24 apart below 2^-14; x0 * x0
// for x0 = -5.4e-4 is 4.93 * 2^-24 and rounds to 5 * 2^-24, 1.4 % away).
struct StorageRoundoff {
  double relative = 0;   // half an ulp, of the stored value
  double subnormal = 0;  // half the smallest subnormal, absolute
};
StorageRoundoff storageRoundoff(DType storage) {
  switch (storage) {
    case DType::F16: return {0x1p-11, 0x1p-25};
    case DType::BF16: return {0x1p-8, 0x1p-134};
    default: return {};
  }
}

// A value and the bound on its absolute error. For booleans the bound is 0 (decided) or +inf
// (the comparison could go either way).
struct EV {
  double v = 0;
  double e = 0;
};

// x * y for non-negative factors where 0 * inf is 0: an exact zero stays exact whatever the
// other factor's bound.
double mulAbs(double x, double y) { return (x == 0 || y == 0) ? 0 : x * y; }

bool isUncertain(double e) { return e == kInf; }

// The result of an operation: a non-finite value must be matched exactly (bound 0) unless an
// operand was uncertain.
EV finish(double v, double e, bool operandUncertain) {
  if (!std::isfinite(v)) return {v, operandUncertain ? kInf : 0};
  return {v, operandUncertain ? kInf : e};
}

bool representable(double r, DType compute) {
  return compute == DType::F64 || static_cast<double>(static_cast<float>(r)) == r;
}

// The compute dtype of the computation being evaluated and its unit roundoff.
// `zeros` is a row of zero bounds: those of a tensor read whose bounds are all 0 (inputs, exact
// results), which then need not be gathered.
struct Fmt {
  DType compute = DType::F32;
  double u = 0;
  const double* zeros = nullptr;
  MathMode math = MathMode::Precise;
  const Program* program = nullptr;  // for the dtypes of the tensors a term reads
};

// Whether the term of sum `v` may be formed on TF32 tensor cores under --math=fast: a product
// of two elements of f32 tensors, summed in f32 (ErrorBound.h, kTf32Relative).
bool tf32Term(const Value& v, const Fmt& f) {
  if (f.math != MathMode::Fast || f.compute != DType::F32 || !f.program || v.reduceKind != ReduceKind::Sum) return false;
  const Value& t = v.args[0];
  if (t.kind != ValueKind::Binary || t.binaryOp != BinaryOp::Mul) return false;
  for (const Value& a : t.args)
    if (a.kind != ValueKind::Access || f.program->tensors[a.tensor].dtype != DType::F32) return false;
  return true;
}

// The rounding error of one basic operation whose exact result is r: none when the operands
// are exact and so is the operation (then every correctly rounded implementation gives r).
double rounding(const Fmt& f, double r, bool exact) {
  if (!std::isfinite(r)) return 0;
  if (exact && representable(r, f.compute)) return 0;
  return f.u * std::fabs(r);
}

EV constBound(const Fmt& f, double c) {
  if (!std::isfinite(c) || f.compute == DType::F64) return {c, 0};
  return {c, std::fabs(c - static_cast<double>(static_cast<float>(c)))};
}

// Exact in f32 below 2^24.
double indexBound(const Fmt& f, double i) { return (f.compute != DType::F64 && std::fabs(i) > 0x1p24) ? kInf : 0; }

// The per-element rules of the binary operators. `sub` makes addSub a subtraction.
EV addSub(const Fmt& f, EV a, EV b, bool sub) {
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  bool exactOps = a.e == 0 && b.e == 0;
  double bv = sub ? -b.v : b.v;
  double s = a.v + bv;
  // TwoSum: the exact error of the double addition.
  double bp = s - a.v;
  double err = (a.v - (s - bp)) + (bv - bp);
  return finish(s, a.e + b.e + rounding(f, s, exactOps && err == 0), unc);
}

EV mul(const Fmt& f, EV a, EV b) {
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  bool exactOps = a.e == 0 && b.e == 0;
  double p = a.v * b.v;
  double e = mulAbs(a.e, std::fabs(b.v)) + mulAbs(std::fabs(a.v), b.e) + mulAbs(a.e, b.e);
  // rounding() only asks whether the product was exact when it is representable, and fma is a
  // library call where the target has none: ask only then.
  bool exact = exactOps && std::isfinite(p) && representable(p, f.compute) && std::fma(a.v, b.v, -p) == 0;
  return finish(p, e + rounding(f, p, exact), unc);
}

EV div(const Fmt& f, EV a, EV b) {
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  bool exactOps = a.e == 0 && b.e == 0;
  double q = a.v / b.v;
  if (b.e >= 0.5 * std::fabs(b.v) && b.e > 0) return finish(q, kInf, true);
  bool exact = exactOps && std::isfinite(q) && std::fma(q, b.v, -a.v) == 0;
  double e = (a.e + mulAbs(std::fabs(q), b.e)) / (std::fabs(b.v) - b.e);
  return finish(q, e + rounding(f, q, exact), unc);
}

EV compare(BinaryOp op, EV a, EV b) {
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  double r = 0;
  switch (op) {
    case BinaryOp::Lt: r = a.v < b.v; break;
    case BinaryOp::Le: r = a.v <= b.v; break;
    case BinaryOp::Gt: r = a.v > b.v; break;
    case BinaryOp::Ge: r = a.v >= b.v; break;
    case BinaryOp::Eq: r = a.v == b.v; break;
    default: r = a.v != b.v; break;
  }
  double slack = a.e + b.e;
  bool close = slack > 0 && !(std::fabs(a.v - b.v) > kDecisionMargin * slack);
  return {r, (unc || close) ? kInf : 0};
}

// An operand that is decided and decides the result on its own makes the result decided.
EV logicAnd(EV a, EV b) {
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  bool decided = (a.e == 0 && a.v == 0) || (b.e == 0 && b.v == 0);
  return {(a.v != 0 && b.v != 0) ? 1.0 : 0.0, (unc && !decided) ? kInf : 0};
}

EV logicOr(EV a, EV b) {
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  bool decided = (a.e == 0 && a.v != 0) || (b.e == 0 && b.v != 0);
  return {(a.v != 0 || b.v != 0) ? 1.0 : 0.0, (unc && !decided) ? kInf : 0};
}

// The per-element rule of every builtin but select; `b` is the second argument of pow, min
// and max.
EV callBound(const Fmt& f, Builtin fn, EV a, EV b) {
  bool unc = isUncertain(a.e);
  const double x = a.v, ex = a.e;
  const double tu = transcendentalUnits(fn, f.math, f.compute) * f.u;
  switch (fn) {
    case Builtin::Exp: {
      double r = std::exp(x);
      return finish(r, mulAbs(r, std::expm1(ex)) + tu * r, unc);
    }
    case Builtin::Log: {
      double r = std::log(x);
      if (ex > 0 && ex >= 0.5 * x) return finish(r, kInf, true);
      double e = ex > 0 ? ex / (x - ex) : 0;
      return finish(r, e + tu * std::fabs(r), unc);
    }
    case Builtin::Sqrt: {
      double r = std::sqrt(x);
      // |sqrt(x + d) - sqrt(x)| <= |d| / sqrt(x) when |d| <= 3x/4, and <= sqrt(|d|) always.
      double e = ex == 0 ? 0 : (ex <= 0.75 * x ? ex / std::sqrt(x) : std::sqrt(ex));
      return finish(r, e + kSqrtUnits * f.u * r, unc);
    }
    case Builtin::Rsqrt: {
      double r = 1 / std::sqrt(x);
      if (ex > 0 && ex >= 0.5 * x) return finish(r, kInf, true);
      double e = ex > 0 ? 0.5 * ex * std::pow(x - ex, -1.5) : 0;
      return finish(r, e + kRsqrtUnits * f.u * std::fabs(r), unc);
    }
    case Builtin::Tanh: {
      double r = std::tanh(x);
      return finish(r, mulAbs(1 - r * r, ex) + tu * std::fabs(r), unc);
    }
    case Builtin::Sigmoid: {
      double r = 1 / (1 + std::exp(-x));
      return finish(r, mulAbs(r * (1 - r), ex) + tu * std::fabs(r), unc);
    }
    case Builtin::Relu: {
      double r = applyBuiltin(Builtin::Relu, x);
      return finish(r, x < -ex ? 0 : ex, unc);
    }
    case Builtin::Abs: return finish(std::fabs(x), ex, unc);
    case Builtin::RoundF16:
    case Builtin::RoundBF16: {
      // A fused f16/bf16 producer's rounding, where the unfused program stored it: relative
      // above the type's smallest normal, at most half its smallest subnormal below.
      const StorageRoundoff r = storageRoundoff(fn == Builtin::RoundF16 ? DType::F16 : DType::BF16);
      return finish(x, ex + r.relative * (std::fabs(x) + ex) + r.subnormal, unc);
    }
    case Builtin::Erf: {
      double r = std::erf(x);
      return finish(r, mulAbs(1.1283791670955126 * std::exp(-x * x), ex) + tu * std::fabs(r), unc);
    }
    case Builtin::Sin:
    case Builtin::Cos: {
      double r = fn == Builtin::Sin ? std::sin(x) : std::cos(x);
      double slope = fn == Builtin::Sin ? std::fabs(std::cos(x)) : std::fabs(std::sin(x));
      return finish(r, mulAbs(slope, ex) + 0.5 * ex * ex + tu, unc);
    }
    case Builtin::Floor:
    case Builtin::Ceil: {
      double r = fn == Builtin::Floor ? std::floor(x) : std::ceil(x);
      if (ex > 0 && !(std::fabs(x - std::nearbyint(x)) > kDecisionMargin * ex)) return finish(r, kInf, true);
      return finish(r, 0, unc);
    }
    case Builtin::Pow: {
      unc = unc || isUncertain(b.e);
      double r = std::pow(x, b.v);
      if (ex == 0 && b.e == 0) return finish(r, tu * std::fabs(r), unc);
      if (x > 0) {
        if (ex >= 0.5 * x) return finish(r, kInf, true);
        double rel = ex / (x - ex);  // bound on |log(x + d) - log(x)|
        double dexp = std::fabs(b.v) * rel + std::fabs(std::log(x)) * b.e + rel * b.e;
        return finish(r, mulAbs(std::fabs(r), std::expm1(dexp)) + tu * std::fabs(r), unc);
      }
      if (x < 0 && b.e == 0 && ex < 0.5 * -x) {  // integral exponent: |x|^b with a sign
        double rel = ex / (-x - ex);
        return finish(r, mulAbs(std::fabs(r), std::expm1(std::fabs(b.v) * rel)) + tu * std::fabs(r), unc);
      }
      return finish(r, kInf, true);
    }
    case Builtin::Min:
    case Builtin::Max: {
      double r = applyBuiltin(fn, x, b.v);
      return finish(r, std::max(ex, b.e), unc || isUncertain(b.e));
    }
    case Builtin::Select: break;
  }
  throw std::logic_error("bounds: unknown builtin");
}

using rows::Ctx;
using rows::Node;
using rows::Row;
using rows::Span;

// A row of values and their bounds: lane l's at v[l] and e[l], or lane 0's in every lane when
// uniform.
struct ERow {
  const double* v = nullptr;
  const double* e = nullptr;
  bool uniform = true;
};

// out = f(a) lane by lane, into x's buffers.
template <typename F>
ERow map1(ERow a, int64_t n, Node& x, F f) {
  double* ov = x.buf.data();
  double* oe = x.ebuf.data();
  const int64_t m = a.uniform ? 1 : n;
  for (int64_t l = 0; l < m; ++l) {
    EV r = f(EV{a.v[l], a.e[l]});
    ov[l] = r.v;
    oe[l] = r.e;
  }
  return {ov, oe, a.uniform};
}

// out = f(a, b) lane by lane; a uniform side stays a scalar in the loop.
template <typename F>
ERow map2(ERow a, ERow b, int64_t n, Node& x, F f) {
  double* ov = x.buf.data();
  double* oe = x.ebuf.data();
  auto put = [ov, oe](int64_t l, EV r) {
    ov[l] = r.v;
    oe[l] = r.e;
  };
  if (a.uniform && b.uniform) {
    put(0, f(EV{a.v[0], a.e[0]}, EV{b.v[0], b.e[0]}));
    return {ov, oe, true};
  }
  if (a.uniform) {
    const EV s{a.v[0], a.e[0]};
    for (int64_t l = 0; l < n; ++l) put(l, f(s, EV{b.v[l], b.e[l]}));
  } else if (b.uniform) {
    const EV s{b.v[0], b.e[0]};
    for (int64_t l = 0; l < n; ++l) put(l, f(EV{a.v[l], a.e[l]}, s));
  } else {
    for (int64_t l = 0; l < n; ++l) put(l, f(EV{a.v[l], a.e[l]}, EV{b.v[l], b.e[l]}));
  }
  return {ov, oe, false};
}

// mul() over a row. The products of a matmul or a convolution are most of the work, so the
// common case runs as a loop free of branches and calls (the compiler vectorises it; every
// product is computed and then selected, so nothing is evaluated conditionally): a lane whose
// product might be exact (exact operands and a representable result, which needs an fma to
// tell) gets the bound -1 (a real one is never negative), and is redone by mul() afterwards.
template <bool UniformA, bool UniformB, bool Exact>
void mulLoop(const double* __restrict av, const double* __restrict ae, const double* __restrict bv,
             const double* __restrict be, double* __restrict ov, double* __restrict oe, int64_t n, double u, bool f64) {
  const double x0 = av[0], ex0 = ae[0], y0 = bv[0], ey0 = be[0];
  for (int64_t l = 0; l < n; ++l) {
    const double x = UniformA ? x0 : av[l], ex = UniformA ? ex0 : ae[l];
    const double y = UniformB ? y0 : bv[l], ey = UniformB ? ey0 : be[l];
    const double v = x * y;
    const bool finite = std::fabs(v) <= std::numeric_limits<double>::max();
    const bool repr = f64 | (static_cast<double>(static_cast<float>(v)) == v);
    if constexpr (Exact) {  // ex == ey == 0: no propagated error, nothing uncertain
      ov[l] = v;
      oe[l] = (finite & repr) ? -1.0 : (finite ? u * std::fabs(v) : 0.0);
      continue;
    }
    const double fx = std::fabs(x), fy = std::fabs(y);
    // mulAbs(ex, fy) + mulAbs(fx, ey) + mulAbs(ex, ey)
    const double t1 = ex * fy, t2 = fx * ey, t3 = ex * ey;
    const double e = (((ex == 0) | (fy == 0)) ? 0.0 : t1) + (((fx == 0) | (ey == 0)) ? 0.0 : t2) +
                     (((ex == 0) | (ey == 0)) ? 0.0 : t3);
    const bool unc = (ex == kInf) | (ey == kInf);
    const bool redo = (ex == 0) & (ey == 0) & finite & repr;
    // finish(v, e + rounding(v, false), unc)
    const double bound = e + u * std::fabs(v);
    ov[l] = v;
    oe[l] = redo ? -1.0 : unc ? kInf : (finite ? bound : 0.0);
  }
}

ERow mulRow(const Fmt& f, ERow a, ERow b, int64_t n, Node& x) {
  double* ov = x.buf.data();
  double* oe = x.ebuf.data();
  const bool f64 = f.compute == DType::F64;
  const bool uniform = a.uniform && b.uniform;
  if (uniform) n = 1;
  // Operands read from tensors whose bounds are all 0 (f.zeros), or uniform and exact, take
  // the short loop.
  auto exactRow = [&f](const ERow& r) { return r.e == f.zeros || (r.uniform && r.e[0] == 0); };
  const bool exact = exactRow(a) && exactRow(b);
  if (a.uniform && !b.uniform)
    exact ? mulLoop<true, false, true>(a.v, a.e, b.v, b.e, ov, oe, n, f.u, f64)
          : mulLoop<true, false, false>(a.v, a.e, b.v, b.e, ov, oe, n, f.u, f64);
  else if (b.uniform && !a.uniform)
    exact ? mulLoop<false, true, true>(a.v, a.e, b.v, b.e, ov, oe, n, f.u, f64)
          : mulLoop<false, true, false>(a.v, a.e, b.v, b.e, ov, oe, n, f.u, f64);
  else
    exact ? mulLoop<false, false, true>(a.v, a.e, b.v, b.e, ov, oe, n, f.u, f64)
          : mulLoop<false, false, false>(a.v, a.e, b.v, b.e, ov, oe, n, f.u, f64);
  // Any marked lane? A real bound is +0 or more, so the OR of the bit patterns has the sign bit
  // set when some lane is marked (an integer reduction, which vectorises). Redoing a lane that
  // was not marked would be harmless: mul() is the rule itself.
  uint64_t bits = 0;
  for (int64_t l = 0; l < n; ++l) {
    uint64_t b;
    std::memcpy(&b, oe + l, sizeof b);
    bits |= b;
  }
  for (int64_t l = 0; (bits >> 63) != 0 && l < n; ++l) {
    if (oe[l] >= 0) continue;
    const int64_t ka = a.uniform ? 0 : l, kb = b.uniform ? 0 : l;
    oe[l] = mul(f, EV{a.v[ka], a.e[ka]}, EV{b.v[kb], b.e[kb]}).e;
  }
  return {ov, oe, uniform};
}

ERow eval(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask);

ERow evalAccess(Node& a, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  int64_t base = 0;
  Span s = rows::locateRead(a, c, n, mask, base);
  Row v = rows::gather(a, a.tensor->data.data(), a.buf.data(), s, base, n);
  if (!a.bounds) return {v.p, f.zeros, false};
  Row e = rows::gather(a, a.bounds->data(), a.ebuf.data(), s, base, n);
  return {v.p, e.p, false};
}

ERow evalIndexValue(Node& x, Ctx& c, const Fmt& f, int64_t n) {
  Row r = rows::indexRow(x, c, n);
  const int64_t m = r.uniform ? 1 : n;
  for (int64_t l = 0; l < m; ++l) x.ebuf[l] = indexBound(f, r.p[l]);
  return {r.p, x.ebuf.data(), r.uniform};
}

ERow evalBinary(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  ERow a = eval(x.kids[0], c, f, n, mask);
  ERow b = eval(x.kids[1], c, f, n, mask);
  const BinaryOp op = x.v->binaryOp;
  switch (op) {
    case BinaryOp::Add: return map2(a, b, n, x, [&f](EV p, EV q) { return addSub(f, p, q, false); });
    case BinaryOp::Sub: return map2(a, b, n, x, [&f](EV p, EV q) { return addSub(f, p, q, true); });
    case BinaryOp::Mul: return mulRow(f, a, b, n, x);
    case BinaryOp::Div: return map2(a, b, n, x, [&f](EV p, EV q) { return div(f, p, q); });
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::Eq:
    case BinaryOp::Ne: return map2(a, b, n, x, [op](EV p, EV q) { return compare(op, p, q); });
    case BinaryOp::And: return map2(a, b, n, x, [](EV p, EV q) { return logicAnd(p, q); });
    case BinaryOp::Or: return map2(a, b, n, x, [](EV p, EV q) { return logicOr(p, q); });
    case BinaryOp::Mod: break;
  }
  throw std::logic_error("bounds: '%' in a value expression");
}

// select takes each branch only in the lanes that choose it, as the reference does; a lane
// whose condition is uncertain gets an uncertain result.
ERow evalSelect(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  ERow cond = eval(x.kids[0], c, f, n, mask);
  double* ov = x.buf.data();
  double* oe = x.ebuf.data();
  if (cond.uniform) {
    ERow r = eval(x.kids[cond.v[0] != 0 ? 1 : 2], c, f, n, mask);
    if (!isUncertain(cond.e[0])) return r;
    const int64_t m = r.uniform ? 1 : n;
    std::copy(r.v, r.v + m, ov);
    std::fill(oe, oe + m, kInf);
    return {ov, oe, r.uniform};
  }
  uint8_t* ma = x.m1.data();
  uint8_t* mb = x.m2.data();
  int64_t na = 0, nb = 0;
  rows::splitLanes(cond.v, mask, n, ma, mb, na, nb);
  ERow a, b;
  if (nb == 0 || na != 0) a = eval(x.kids[1], c, f, n, ma);
  if (nb != 0) b = eval(x.kids[2], c, f, n, mb);
  for (int64_t l = 0; l < n; ++l) {
    const bool useA = nb == 0 || (na != 0 && ma[l]);
    const ERow& r = useA ? a : b;
    const int64_t k = r.uniform ? 0 : l;
    ov[l] = r.v[k];
    oe[l] = isUncertain(cond.e[l]) ? kInf : r.e[k];
  }
  return {ov, oe, false};
}

ERow evalCall(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  const Builtin fn = x.v->builtin;
  if (fn == Builtin::Select) return evalSelect(x, c, f, n, mask);
  ERow a = eval(x.kids[0], c, f, n, mask);
  if (x.kids.size() == 1) return map1(a, n, x, [&f, fn](EV p) { return callBound(f, fn, p, EV{}); });
  ERow b = eval(x.kids[1], c, f, n, mask);
  return map2(a, b, n, x, [&f, fn](EV p, EV q) { return callBound(f, fn, p, q); });
}

// g(l, term) for every active lane l.
template <typename G>
void forActive(ERow t, int64_t n, const uint8_t* mask, G g) {
  if (t.uniform) {
    const EV s{t.v[0], t.e[0]};
    for (int64_t l = 0; l < n; ++l)
      if (!mask || mask[l]) g(l, s);
  } else if (mask) {
    for (int64_t l = 0; l < n; ++l)
      if (mask[l]) g(l, EV{t.v[l], t.e[l]});
  } else {
    for (int64_t l = 0; l < n; ++l) g(l, EV{t.v[l], t.e[l]});
  }
}

// The reduction's per-lane state, in x.buf (the value), x.ebuf (Sum: the sum of the terms'
// bounds; Prod: the propagated bound; Max/Min: the largest) and x.aux.
struct ReduceLanes {
  double* acc;
  double* accE;
  double* sumAbs;     // Sum: sum |term|
  double* exactInts;  // 1 while every term is an exact integer
  double* unc;        // 1 once a term is uncertain
  double* count;      // terms not skipped, of those that skip some lanes (see allCount)
};

// `a` where m is all ones, `b` where it is 0: a select written as bit operations, which gcc
// vectorises where a masked `?:` on doubles stays a branch.
inline double pick(uint64_t m, double a, double b) {
  uint64_t x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  const uint64_t r = (x & m) | (y & ~m);
  double d;
  std::memcpy(&d, &r, sizeof d);
  return d;
}

// One term of a sum once no lane's terms are all exact integers: a loop free of branches and
// calls (the compiler vectorises it), in which everything is computed in every lane and kept
// where the lane is active. The arrays are distinct, and saying so (__restrict) spares the loop
// its alias checks.
template <bool Masked, bool Uniform>
void sumLoop(double* __restrict accE, double* __restrict sumAbs, double* __restrict unc, double* __restrict acc,
             double* __restrict count, const double* __restrict tv, const double* __restrict te,
             const uint8_t* __restrict mask, int64_t n) {
  const double v0 = tv[0], e0 = te[0];
  for (int64_t l = 0; l < n; ++l) {
    const double v = Uniform ? v0 : tv[l];
    const double e = Uniform ? e0 : te[l];
    const double nUnc = e == kInf ? 1.0 : unc[l];
    if constexpr (Masked) {
      const uint64_t on = -static_cast<uint64_t>(mask[l] != 0);
      accE[l] = pick(on, accE[l] + e, accE[l]);
      sumAbs[l] = pick(on, sumAbs[l] + std::fabs(v), sumAbs[l]);
      unc[l] = pick(on, nUnc, unc[l]);
      acc[l] = pick(on, acc[l] + v, acc[l]);
      count[l] = pick(on, count[l] + 1, count[l]);
    } else {
      accE[l] += e;
      sumAbs[l] += std::fabs(v);
      unc[l] = nUnc;
      acc[l] = acc[l] + v;
    }
  }
}

void sumTerm(const ReduceLanes& s, ERow t, int64_t n, const uint8_t* mask) {
  if (t.uniform && mask)
    sumLoop<true, true>(s.accE, s.sumAbs, s.unc, s.acc, s.count, t.v, t.e, mask, n);
  else if (t.uniform)
    sumLoop<false, true>(s.accE, s.sumAbs, s.unc, s.acc, s.count, t.v, t.e, mask, n);
  else if (mask)
    sumLoop<true, false>(s.accE, s.sumAbs, s.unc, s.acc, s.count, t.v, t.e, mask, n);
  else
    sumLoop<false, false>(s.accE, s.sumAbs, s.unc, s.acc, s.count, t.v, t.e, mask, n);
}

// The terms in the order of the reduction variables (the last fastest), each combined into the
// lanes it is not skipped in, as the reference does; then each lane's rounding bound.
ERow evalReduce(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  const Value& v = *x.v;
  const size_t L = static_cast<size_t>(c.maxLanes);
  ReduceLanes s{x.buf.data(), x.ebuf.data(), x.aux.data(), x.aux.data() + L, x.aux.data() + 2 * L,
                x.aux.data() + 3 * L};
  std::fill(s.acc, s.acc + n, reductionIdentity(v.reduceKind));
  std::fill(s.accE, s.accE + n, 0.0);
  std::fill(s.sumAbs, s.sumAbs + n, 0.0);
  std::fill(s.exactInts, s.exactInts + n, 1.0);
  std::fill(s.unc, s.unc + n, 0.0);
  std::fill(s.count, s.count + n, 0.0);
  bool anyExactInts = true;  // some lane's terms are all exact integers so far
  double allCount = 0;       // terms no lane skipped (counted here rather than in every lane)
  for (int var : v.reduceVars) c.vals[var] = 0;
  for (;;) {
    const uint8_t* m = nullptr;
    const bool skipped = !rows::termLanes(x, c, n, mask, m);
    if (!skipped) {
      if (!m) allCount += 1;
      ERow t = eval(x.kids[0], c, f, n, m);
      // Sum and Prod combine as reductionCombine does (acc + t, acc * t), written out so the
      // hot loop needs no call.
      switch (v.reduceKind) {
        case ReduceKind::Sum:
          if (anyExactInts) {
            forActive(t, n, m, [&s, m](int64_t l, EV tm) {
              s.accE[l] += tm.e;
              s.sumAbs[l] += std::fabs(tm.v);
              if (s.exactInts[l] != 0) s.exactInts[l] = tm.e == 0 && tm.v == std::nearbyint(tm.v);
              if (isUncertain(tm.e)) s.unc[l] = 1;
              s.acc[l] = s.acc[l] + tm.v;
              if (m) s.count[l] += 1;
            });
            anyExactInts = std::any_of(s.exactInts, s.exactInts + n, [](double b) { return b != 0; });
          } else {
            sumTerm(s, t, n, m);
          }
          break;
        case ReduceKind::Prod:
          forActive(t, n, m, [&s, m](int64_t l, EV tm) {
            s.accE[l] = mulAbs(s.accE[l], std::fabs(tm.v)) + mulAbs(std::fabs(s.acc[l]), tm.e) + mulAbs(s.accE[l], tm.e);
            if (isUncertain(tm.e)) s.unc[l] = 1;
            s.acc[l] = s.acc[l] * tm.v;
            if (m) s.count[l] += 1;
          });
          break;
        case ReduceKind::Max:
        case ReduceKind::Min: {
          const ReduceKind kind = v.reduceKind;
          forActive(t, n, m, [&s, m, kind](int64_t l, EV tm) {
            s.accE[l] = std::max(s.accE[l], tm.e);
            if (isUncertain(tm.e)) s.unc[l] = 1;
            s.acc[l] = reductionCombine(kind, s.acc[l], tm.v);
            if (m) s.count[l] += 1;
          });
          break;
        }
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
  // A reduction of n terms adds (n - 1) * u * sum|terms| (prod: (n - 1) * u * |product|).
  // Integers below 2^24 (2^53) add exactly in any order.
  const double limit = f.compute == DType::F64 ? 0x1p53 : 0x1p24;
  const bool tf32 = tf32Term(v, f);
  for (int64_t l = 0; l < n; ++l) {
    double roundings = tf32 ? kTf32Relative * s.sumAbs[l] : 0;
    const double terms = s.count[l] + allCount;  // an exact integer
    if (terms > 1) {
      if (v.reduceKind == ReduceKind::Sum) {
        if (!(s.exactInts[l] != 0 && s.sumAbs[l] < limit)) roundings += (terms - 1) * f.u * s.sumAbs[l];
      } else if (v.reduceKind == ReduceKind::Prod) {
        roundings += (terms - 1) * f.u * std::fabs(s.acc[l]);
      }
    }
    EV r = finish(s.acc[l], s.accE[l] + roundings, s.unc[l] != 0);
    s.acc[l] = r.v;
    s.accE[l] = r.e;
  }
  return {s.acc, s.accE, false};
}

ERow evalNode(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  const Value& v = *x.v;
  switch (v.kind) {
    case ValueKind::Const: {
      EV k = constBound(f, v.constant);
      x.buf[0] = k.v;
      x.ebuf[0] = k.e;
      return {x.buf.data(), x.ebuf.data(), true};
    }
    case ValueKind::IndexValue: return evalIndexValue(x, c, f, n);
    case ValueKind::Access: return evalAccess(x, c, f, n, mask);
    case ValueKind::Unary: {
      ERow a = eval(x.kids[0], c, f, n, mask);
      if (v.unaryOp == UnaryOp::Neg) return map1(a, n, x, [](EV p) { return EV{-p.v, p.e}; });
      return map1(a, n, x, [](EV p) { return EV{p.v == 0 ? 1.0 : 0.0, p.e}; });
    }
    case ValueKind::Binary: return evalBinary(x, c, f, n, mask);
    case ValueKind::Call: return evalCall(x, c, f, n, mask);
    case ValueKind::Reduce: return evalReduce(x, c, f, n, mask);
  }
  return {x.buf.data(), x.ebuf.data(), true};
}

// A node whose value is the same in every lane is evaluated for lane 0 only (callers evaluate a
// node only when some lane is active, so lane 0 stands for it).
ERow eval(Node& x, Ctx& c, const Fmt& f, int64_t n, const uint8_t* mask) {
  if (x.invariant && n > 1) {
    n = 1;
    mask = nullptr;
  }
  ERow r = evalNode(x, c, f, n, mask);
  if (n == 1) r.uniform = true;
  return r;
}

// Gives every node its bound buffers and every access its tensor of bounds (none when they are
// all 0).
void addBoundBuffers(Node& x, const std::vector<std::vector<double>>& bounds, const std::vector<bool>& zeroBounds,
                     int64_t lanes) {
  x.ebuf.assign(static_cast<size_t>(lanes), 0.0);
  if (x.v->kind == ValueKind::Access && !zeroBounds[x.v->tensor]) x.bounds = &bounds[x.v->tensor];
  if (x.v->kind == ValueKind::Reduce) x.aux.assign(4 * static_cast<size_t>(lanes), 0.0);
  for (Node& k : x.kids) addBoundBuffers(k, bounds, zeroBounds, lanes);
}

}  // namespace

double unitRoundoff(DType computeDtype) { return computeDtype == DType::F64 ? 0x1p-53 : 0x1p-24; }

double transcendentalUnits(Builtin fn, MathMode mode, DType compute) {
  if (mode == MathMode::Precise || compute == DType::F64) return kTranscendentalUnits;
  switch (fn) {
    case Builtin::Exp: return kFastUnits.exp;
    case Builtin::Log: return kFastUnits.log;
    case Builtin::Tanh: return kFastUnits.tanh;
    case Builtin::Sigmoid: return kFastUnits.sigmoid;
    case Builtin::Erf: return kFastUnits.erf;
    default: return kTranscendentalUnits;
  }
}

BoundResult evaluateBounds(const Program& p, const std::vector<RefTensor>& inputs, MathMode math) {
  if (inputs.size() != p.inputs.size()) throw std::invalid_argument("bounds: wrong number of inputs");
  BoundResult r;
  r.values.resize(p.tensors.size());
  r.bounds.resize(p.tensors.size());
  std::vector<bool> ready(p.tensors.size(), false);
  std::vector<bool> zeroBounds(p.tensors.size(), false);  // every bound 0
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const TensorInfo& info = p.tensors[p.inputs[i]];
    if (inputs[i].shape != info.shape || inputs[i].data.size() != static_cast<size_t>(info.numElements()))
      throw std::invalid_argument("bounds: input '" + info.name + "' has the wrong shape");
    r.values[p.inputs[i]] = inputs[i];
    r.bounds[p.inputs[i]].assign(inputs[i].data.size(), 0.0);
    ready[p.inputs[i]] = true;
    zeroBounds[p.inputs[i]] = true;
  }
  for (const Computation& comp : p.computations) {
    if (comp.tensor < 0 || static_cast<size_t>(comp.tensor) >= p.tensors.size() || ready[comp.tensor])
      throw std::logic_error("bounds: computation defines a bad or already defined tensor");
    const TensorInfo& info = p.tensors[comp.tensor];
    const DType compute = computeDType(info.dtype);
    Fmt f{compute, unitRoundoff(compute), nullptr, math, &p};
    RefTensor out;
    out.shape = info.shape;
    out.data.assign(static_cast<size_t>(info.numElements()), 0.0);
    std::vector<double> bound(out.data.size(), 0.0);
    const StorageRoundoff store = storageRoundoff(info.dtype);

    // r.values is not resized from here on, so the nodes' pointers into it stay valid.
    Ctx c{comp, r.values, {}, {}, {}, {}, 1, 0, 1, 1};
    rows::planRows(c, out.shape);
    Node root = rows::build(comp.body, -1, c, ready);
    rows::collectGuards(root, nullptr);
    addBoundBuffers(root, r.bounds, zeroBounds, c.maxLanes);
    const std::vector<double> zeros(static_cast<size_t>(c.maxLanes), 0.0);
    f.zeros = zeros.data();
    if (!out.data.empty()) {
      rows::forEachRow(c, [&](size_t off, int64_t n) {
        ERow row = eval(root, c, f, n, nullptr);
        for (int64_t l = 0; l < n; ++l) {
          const int64_t k = row.uniform ? 0 : l;
          const double v = row.v[k], e = row.e[k];
          out.data[off + l] = v;
          bound[off + l] = std::isfinite(v) ? e + store.relative * std::fabs(v) + store.subnormal : e;
        }
      });
    }
    r.values[comp.tensor] = std::move(out);
    zeroBounds[comp.tensor] = std::all_of(bound.begin(), bound.end(), [](double e) { return e == 0; });
    r.bounds[comp.tensor] = std::move(bound);
    ready[comp.tensor] = true;
  }
  return r;
}

}  // namespace texc
