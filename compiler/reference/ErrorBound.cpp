// The error-bound evaluator of ErrorBound.h: a tree walk that mirrors compiler/reference/
// Reference.cpp node for node, carrying an error bound next to each value.
#include "compiler/reference/ErrorBound.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "compiler/reference/Reference.h"

namespace texc {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

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


class Walker {
 public:
  Walker(const Computation& comp, const std::vector<RefTensor>& values, const std::vector<std::vector<double>>& bounds,
         DType compute)
      : comp_(comp), values_(values), bounds_(bounds), compute_(compute), u_(unitRoundoff(compute)),
        vals_(comp.vars.size(), 0), guards_(static_cast<size_t>(std::max(comp.numReduces, 0))) {
    collectGuards(comp.body);
  }

  std::vector<int64_t>& vars() { return vals_; }
  EV eval(const Value& v);

 private:
  void collectGuards(const Value& v) {
    if (v.kind == ValueKind::Access && v.check == AccessCheck::Guarded) {
      if (v.ownerReduce < 0) throw std::logic_error("bounds: guarded access outside a reduction");
      if (static_cast<size_t>(v.ownerReduce) >= guards_.size()) guards_.resize(v.ownerReduce + 1);
      guards_[v.ownerReduce].push_back(&v);
    }
    if (v.kind == ValueKind::Reduce && static_cast<size_t>(v.reduceId) >= guards_.size()) guards_.resize(v.reduceId + 1);
    for (const Value& a : v.args) collectGuards(a);
  }

  int64_t offset(const Value& a) const {
    const RefTensor& t = values_[a.tensor];
    int64_t off = 0;
    for (size_t d = 0; d < a.indices.size(); ++d) {
      int64_t i = evalIndex(a.indices[d], vals_);
      if (i < 0 || i >= t.shape[d]) return -1;
      off = off * t.shape[d] + i;
    }
    return off;
  }

  // The rounding error of one basic operation whose exact result is r: none when the operands
  // are exact and so is the operation (then every correctly rounded implementation gives r).
  double rounding(double r, bool exact) const {
    if (!std::isfinite(r)) return 0;
    if (exact && representable(r, compute_)) return 0;
    return u_ * std::fabs(r);
  }

  EV evalConst(double c) const {
    if (!std::isfinite(c) || compute_ == DType::F64) return {c, 0};
    return {c, std::fabs(c - static_cast<double>(static_cast<float>(c)))};
  }

  EV evalBinary(const Value& v);
  EV evalCall(const Value& v);
  EV evalReduce(const Value& v);

  const Computation& comp_;
  const std::vector<RefTensor>& values_;
  const std::vector<std::vector<double>>& bounds_;
  DType compute_;
  double u_;
  std::vector<int64_t> vals_;
  std::vector<std::vector<const Value*>> guards_;
};

EV Walker::evalBinary(const Value& v) {
  EV a = eval(v.args[0]);
  EV b = eval(v.args[1]);
  bool unc = isUncertain(a.e) || isUncertain(b.e);
  bool exactOps = a.e == 0 && b.e == 0;
  switch (v.binaryOp) {
    case BinaryOp::Add:
    case BinaryOp::Sub: {
      double bv = v.binaryOp == BinaryOp::Add ? b.v : -b.v;
      double s = a.v + bv;
      // TwoSum: the exact error of the double addition.
      double bp = s - a.v;
      double err = (a.v - (s - bp)) + (bv - bp);
      return finish(s, a.e + b.e + rounding(s, exactOps && err == 0), unc);
    }
    case BinaryOp::Mul: {
      double p = a.v * b.v;
      bool exact = exactOps && std::isfinite(p) && std::fma(a.v, b.v, -p) == 0;
      double e = mulAbs(a.e, std::fabs(b.v)) + mulAbs(std::fabs(a.v), b.e) + mulAbs(a.e, b.e);
      return finish(p, e + rounding(p, exact), unc);
    }
    case BinaryOp::Div: {
      double q = a.v / b.v;
      if (b.e >= 0.5 * std::fabs(b.v) && b.e > 0) return finish(q, kInf, true);
      bool exact = exactOps && std::isfinite(q) && std::fma(q, b.v, -a.v) == 0;
      double e = (a.e + mulAbs(std::fabs(q), b.e)) / (std::fabs(b.v) - b.e);
      return finish(q, e + rounding(q, exact), unc);
    }
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::Eq:
    case BinaryOp::Ne: {
      double r = 0;
      switch (v.binaryOp) {
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
    case BinaryOp::And: {
      bool decided = (a.e == 0 && a.v == 0) || (b.e == 0 && b.v == 0);
      return {(a.v != 0 && b.v != 0) ? 1.0 : 0.0, (unc && !decided) ? kInf : 0};
    }
    case BinaryOp::Or: {
      bool decided = (a.e == 0 && a.v != 0) || (b.e == 0 && b.v != 0);
      return {(a.v != 0 || b.v != 0) ? 1.0 : 0.0, (unc && !decided) ? kInf : 0};
    }
    case BinaryOp::Mod: break;
  }
  throw std::logic_error("bounds: '%' in a value expression");
}

EV Walker::evalCall(const Value& v) {
  if (v.builtin == Builtin::Select) {
    EV c = eval(v.args[0]);
    EV r = c.v != 0 ? eval(v.args[1]) : eval(v.args[2]);
    if (isUncertain(c.e)) r.e = kInf;
    return r;
  }
  EV a = eval(v.args[0]);
  bool unc = isUncertain(a.e);
  const double x = a.v, ex = a.e;
  const double tu = kTranscendentalUnits * u_;
  switch (v.builtin) {
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
      return finish(r, e + kSqrtUnits * u_ * r, unc);
    }
    case Builtin::Rsqrt: {
      double r = 1 / std::sqrt(x);
      if (ex > 0 && ex >= 0.5 * x) return finish(r, kInf, true);
      double e = ex > 0 ? 0.5 * ex * std::pow(x - ex, -1.5) : 0;
      return finish(r, e + kRsqrtUnits * u_ * std::fabs(r), unc);
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
    case Builtin::Erf: {
      double r = std::erf(x);
      return finish(r, mulAbs(1.1283791670955126 * std::exp(-x * x), ex) + tu * std::fabs(r), unc);
    }
    case Builtin::Sin:
    case Builtin::Cos: {
      double r = v.builtin == Builtin::Sin ? std::sin(x) : std::cos(x);
      double slope = v.builtin == Builtin::Sin ? std::fabs(std::cos(x)) : std::fabs(std::sin(x));
      return finish(r, mulAbs(slope, ex) + 0.5 * ex * ex + tu, unc);
    }
    case Builtin::Floor:
    case Builtin::Ceil: {
      double r = v.builtin == Builtin::Floor ? std::floor(x) : std::ceil(x);
      if (ex > 0 && !(std::fabs(x - std::nearbyint(x)) > kDecisionMargin * ex)) return finish(r, kInf, true);
      return finish(r, 0, unc);
    }
    case Builtin::Pow: {
      EV b = eval(v.args[1]);
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
      EV b = eval(v.args[1]);
      double r = applyBuiltin(v.builtin, x, b.v);
      return finish(r, std::max(ex, b.e), unc || isUncertain(b.e));
    }
    case Builtin::Select: break;
  }
  throw std::logic_error("bounds: unknown builtin");
}

EV Walker::evalReduce(const Value& v) {
  const std::vector<const Value*>& guards = guards_.at(v.reduceId);
  double acc = reductionIdentity(v.reduceKind);
  double accE = 0;        // Sum: sum of the terms' bounds; Prod: propagated bound; Max/Min: max
  double sumAbs = 0;      // Sum: sum |term|
  bool allExactInts = true;
  bool unc = false;
  int64_t n = 0;
  for (int var : v.reduceVars) vals_[var] = 0;
  for (;;) {
    bool skip = false;
    for (const Value* g : guards) {
      if (offset(*g) < 0) {
        skip = true;
        break;
      }
    }
    if (!skip) {
      EV t = eval(v.args[0]);
      unc = unc || isUncertain(t.e);
      switch (v.reduceKind) {
        case ReduceKind::Sum:
          accE += t.e;
          sumAbs += std::fabs(t.v);
          allExactInts = allExactInts && t.e == 0 && t.v == std::nearbyint(t.v);
          break;
        case ReduceKind::Prod:
          accE = mulAbs(accE, std::fabs(t.v)) + mulAbs(std::fabs(acc), t.e) + mulAbs(accE, t.e);
          break;
        case ReduceKind::Max:
        case ReduceKind::Min: accE = std::max(accE, t.e); break;
      }
      acc = reductionCombine(v.reduceKind, acc, t.v);
      ++n;
    }
    int k = static_cast<int>(v.reduceVars.size()) - 1;
    for (; k >= 0; --k) {
      int var = v.reduceVars[k];
      if (++vals_[var] < comp_.vars[var].extent) break;
      vals_[var] = 0;
    }
    if (k < 0) break;
  }
  double roundings = 0;
  if (n > 1) {
    if (v.reduceKind == ReduceKind::Sum) {
      // Integers below 2^24 (2^53) add exactly in any order.
      double limit = compute_ == DType::F64 ? 0x1p53 : 0x1p24;
      if (!(allExactInts && sumAbs < limit)) roundings = static_cast<double>(n - 1) * u_ * sumAbs;
    } else if (v.reduceKind == ReduceKind::Prod) {
      roundings = static_cast<double>(n - 1) * u_ * std::fabs(acc);
    }
  }
  return finish(acc, accE + roundings, unc);
}

EV Walker::eval(const Value& v) {
  switch (v.kind) {
    case ValueKind::Const: return evalConst(v.constant);
    case ValueKind::IndexValue: {
      int64_t i = vals_[v.var];
      // Exact in f32 below 2^24.
      double e = (compute_ != DType::F64 && std::llabs(i) > (int64_t{1} << 24)) ? kInf : 0;
      return {static_cast<double>(i), e};
    }
    case ValueKind::Access: {
      int64_t off = offset(v);
      if (off < 0) throw std::logic_error("bounds: access out of bounds (missing guard)");
      return {values_[v.tensor].data[off], bounds_[v.tensor][off]};
    }
    case ValueKind::Unary: {
      EV a = eval(v.args[0]);
      if (v.unaryOp == UnaryOp::Neg) return {-a.v, a.e};
      return {a.v == 0 ? 1.0 : 0.0, a.e};
    }
    case ValueKind::Binary: return evalBinary(v);
    case ValueKind::Call: return evalCall(v);
    case ValueKind::Reduce: return evalReduce(v);
  }
  return {};
}

// The extra rounding of storing a value computed in f32 into an f16 or bf16 tensor.
double storageRoundoff(DType storage) {
  switch (storage) {
    case DType::F16: return 0x1p-11;
    case DType::BF16: return 0x1p-8;
    default: return 0;
  }
}

}  // namespace

double unitRoundoff(DType computeDtype) { return computeDtype == DType::F64 ? 0x1p-53 : 0x1p-24; }

BoundResult evaluateBounds(const Program& p, const std::vector<RefTensor>& inputs) {
  if (inputs.size() != p.inputs.size()) throw std::invalid_argument("bounds: wrong number of inputs");
  BoundResult r;
  r.values.resize(p.tensors.size());
  r.bounds.resize(p.tensors.size());
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const TensorInfo& info = p.tensors[p.inputs[i]];
    if (inputs[i].shape != info.shape || inputs[i].data.size() != static_cast<size_t>(info.numElements()))
      throw std::invalid_argument("bounds: input '" + info.name + "' has the wrong shape");
    r.values[p.inputs[i]] = inputs[i];
    r.bounds[p.inputs[i]].assign(inputs[i].data.size(), 0.0);
  }
  for (const Computation& comp : p.computations) {
    const TensorInfo& info = p.tensors.at(comp.tensor);
    DType compute = computeDType(info.dtype);
    Walker w(comp, r.values, r.bounds, compute);
    RefTensor out;
    out.shape = info.shape;
    out.data.assign(static_cast<size_t>(info.numElements()), 0.0);
    std::vector<double> bound(out.data.size(), 0.0);
    const double store = storageRoundoff(info.dtype);
    for (size_t off = 0; off < out.data.size(); ++off) {
      EV ev = w.eval(comp.body);
      out.data[off] = ev.v;
      bound[off] = std::isfinite(ev.v) ? ev.e + store * std::fabs(ev.v) : ev.e;
      for (int d = comp.numLhsVars - 1; d >= 0; --d) {
        if (++w.vars()[d] < comp.vars[d].extent) break;
        w.vars()[d] = 0;
      }
    }
    r.values[comp.tensor] = std::move(out);
    r.bounds[comp.tensor] = std::move(bound);
  }
  return r;
}

}  // namespace texc
