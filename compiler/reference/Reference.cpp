// The float64 reference interpreter: a plain tree walk over each computation's value expression,
// kept obviously faithful to spec 5 rather than fast.
#include "compiler/reference/Reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

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


// Everything needed to evaluate one computation.
struct Eval {
  const Computation& comp;
  const std::vector<RefTensor>& tensors;
  std::vector<int64_t> vals;                    // current value of each index variable
  std::vector<std::vector<const Value*>> guards;  // by reduceId: the guarded accesses it owns
};

// Row-major offset of access `a` at the current point, or -1 when an index falls outside.
int64_t accessOffset(const Value& a, const RefTensor& t, const std::vector<int64_t>& vals) {
  int64_t off = 0;
  for (size_t d = 0; d < a.indices.size(); ++d) {
    int64_t i = evalIndex(a.indices[d], vals);
    if (i < 0 || i >= t.shape[d]) return -1;
    off = off * t.shape[d] + i;
  }
  return off;
}

double eval(const Value& v, Eval& e);

double evalReduce(const Value& v, Eval& e) {
  const std::vector<const Value*>& guards = e.guards[v.reduceId];
  double acc = reductionIdentity(v.reduceKind);
  for (int var : v.reduceVars) e.vals[var] = 0;
  // One term per point of the reduction variables' box, the last variable fastest.
  for (;;) {
    bool skip = false;
    for (const Value* g : guards) {
      if (accessOffset(*g, e.tensors[g->tensor], e.vals) < 0) {
        skip = true;
        break;
      }
    }
    if (!skip) acc = reductionCombine(v.reduceKind, acc, eval(v.args[0], e));
    int k = static_cast<int>(v.reduceVars.size()) - 1;
    for (; k >= 0; --k) {
      int var = v.reduceVars[k];
      if (++e.vals[var] < e.comp.vars[var].extent) break;
      e.vals[var] = 0;
    }
    if (k < 0) break;
  }
  return acc;
}

double evalCall(const Value& v, Eval& e) {
  if (v.builtin == Builtin::Select)  // only the chosen branch: the other need not be meaningful
    return eval(v.args[0], e) != 0 ? eval(v.args[1], e) : eval(v.args[2], e);
  double a = eval(v.args[0], e);
  return applyBuiltin(v.builtin, a, v.args.size() > 1 ? eval(v.args[1], e) : 0);
}

double evalBinary(const Value& v, Eval& e) {
  double a = eval(v.args[0], e);
  double b = eval(v.args[1], e);
  switch (v.binaryOp) {
    case BinaryOp::Add: return a + b;
    case BinaryOp::Sub: return a - b;
    case BinaryOp::Mul: return a * b;
    case BinaryOp::Div: return a / b;
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::And: return a != 0 && b != 0;
    case BinaryOp::Or: return a != 0 || b != 0;
    case BinaryOp::Mod: break;  // sema rejects % in values
  }
  throw std::logic_error("reference: '%' in a value expression");
}

double eval(const Value& v, Eval& e) {
  switch (v.kind) {
    case ValueKind::Const: return v.constant;
    case ValueKind::IndexValue:
      return static_cast<double>(v.indices.empty() ? e.vals[v.var] : evalIndex(v.indices[0], e.vals));
    case ValueKind::Access: {
      const RefTensor& t = e.tensors[v.tensor];
      int64_t off = accessOffset(v, t, e.vals);
      // A guarded access is checked by its reduction before the body runs, so this is a bug.
      if (off < 0) throw std::logic_error("reference: access out of bounds (missing guard)");
      return t.data[off];
    }
    case ValueKind::Unary: {
      double a = eval(v.args[0], e);
      return v.unaryOp == UnaryOp::Neg ? -a : (a == 0 ? 1.0 : 0.0);
    }
    case ValueKind::Binary: return evalBinary(v, e);
    case ValueKind::Call: return evalCall(v, e);
    case ValueKind::Reduce: return evalReduce(v, e);
  }
  return 0;
}

// Checks the invariants eval relies on and records, per Reduce, the guarded accesses it owns:
// those in its body but not inside a nested Reduce. `ready` marks tensors already evaluated.
void prepare(const Value& v, int enclosingReduce, Eval& e, const std::vector<bool>& ready) {
  if (v.kind == ValueKind::Access) {
    if (v.tensor < 0 || static_cast<size_t>(v.tensor) >= ready.size() || !ready[v.tensor])
      throw std::logic_error("reference: access to a tensor not yet computed");
    if (v.indices.size() != e.tensors[v.tensor].shape.size())
      throw std::logic_error("reference: access rank differs from its tensor's");
    if (v.check == AccessCheck::Guarded) {
      if (enclosingReduce < 0 || v.ownerReduce != enclosingReduce)
        throw std::logic_error("reference: guarded access outside its owning reduction");
      e.guards[enclosingReduce].push_back(&v);
    }
  }
  if (v.kind == ValueKind::Reduce) {
    if (v.reduceId < 0 || v.args.size() != 1) throw std::logic_error("reference: malformed reduction");
    if (static_cast<size_t>(v.reduceId) >= e.guards.size()) e.guards.resize(v.reduceId + 1);
    for (int var : v.reduceVars)
      if (e.comp.vars[var].extent <= 0) throw std::logic_error("reference: empty reduction range");
    enclosingReduce = v.reduceId;
  }
  for (const Value& a : v.args) prepare(a, enclosingReduce, e, ready);
}

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void evaluateComputation(const Computation& comp, std::vector<RefTensor>& tensors, const std::vector<bool>& ready) {
  Eval e{comp, tensors, std::vector<int64_t>(comp.vars.size(), 0), {}};
  if (comp.numReduces > 0) e.guards.resize(comp.numReduces);
  prepare(comp.body, -1, e, ready);

  RefTensor& out = tensors[comp.tensor];
  if (static_cast<size_t>(comp.numLhsVars) != out.shape.size())
    throw std::logic_error("reference: left-hand side rank differs from the tensor's");
  for (int d = 0; d < comp.numLhsVars; ++d)
    if (comp.vars[d].extent != out.shape[d]) throw std::logic_error("reference: left-hand extent differs from the tensor's");

  // Row-major over the left-hand variables, so the output offset just counts up.
  for (size_t off = 0; off < out.data.size(); ++off) {
    out.data[off] = eval(comp.body, e);
    for (int d = comp.numLhsVars - 1; d >= 0; --d) {
      if (++e.vals[d] < comp.vars[d].extent) break;
      e.vals[d] = 0;
    }
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
