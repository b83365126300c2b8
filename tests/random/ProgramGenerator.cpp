#include "tests/random/ProgramGenerator.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/SplitMix64.h"

namespace texc::random {
namespace {

// splitmix64 (the same sequence everywhere), with the choices the generator makes.
struct Rng : SplitMix64 {
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  bool chance(double p) { return unit() < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(below(static_cast<int>(v.size())))];
  }
};

// A size: its value and how the program spells it (a `let` name, a literal or an INTEXPR).
struct Size {
  int64_t value;
  std::string text;
};

struct TensorDesc {
  std::string name;
  std::vector<Size> shape;
  bool input;
  double mag;  // a bound on |element|
};

struct IndexVar {
  std::string name;
  Size extent;
  bool bounded;    // written `v < EXTENT`; otherwise inferred from a bare access of that extent
  bool seenBare = false;
};

// A generated expression: text, a bound on |value|, and whether the value is exact (an input,
// an index variable, a dyadic literal: what comparisons and floor/ceil may look at).
struct Value {
  std::string text;
  double mag;
  bool exact;
  bool finite = true;
  std::vector<Size> shape;  // whole-tensor form: the broadcast shape
};

Value scalar(std::string text, double mag, bool exact) { return {std::move(text), mag, exact, true, {}}; }

// Literals with their value; `exact` when the value is a dyadic rational (no rounding).
struct Literal {
  const char* text;
  double value;
  bool exact;
};
const std::vector<Literal> kLiterals = {
    {"0.5", 0.5, true}, {"2", 2, true},   {"1.5", 1.5, true}, {".25", 0.25, true}, {"1e-3", 1e-3, false},
    {"3", 3, true},     {"0.1", 0.1, false}, {"0.125", 0.125, true}, {"2.5E+0", 2.5, true}, {"7", 7, true},
    {"0", 0, true},     {"1", 1, true},   {"0.7978845608", 0.7978845608, false}};

constexpr double kMaxMag = 1e3;        // values are kept below this (far from f16's 65504)
constexpr int64_t kMaxElements = 1536;  // per tensor
constexpr int64_t kMaxWork = 40000;     // per statement: elements times reduction terms

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

class Generator {
 public:
  Generator(uint64_t seed, const GeneratorOptions& o) : rng_{seed * 0x2545F4914F6CDD1Dull + 0x1234567ull}, opt_(o) {
    out_ = "# random program, seed " + std::to_string(seed) + "\n";
  }

  std::string run() {
    makeLets();
    makeInputs();
    int statements = 1 + rng_.below(opt_.maxStatements);
    for (int s = 0; s < statements; ++s) makeStatement(s == statements - 1);
    return out_;
  }

 private:
  Rng rng_;
  GeneratorOptions opt_;
  std::string out_;
  std::vector<Size> sizes_;  // lets and literal sizes to draw extents from
  std::vector<TensorDesc> tensors_;
  int counter_ = 0;
  int64_t work_ = 0;  // reduction terms per element of the statement being generated
  bool maySkip_ = false;  // the reduction being generated has an access that may fall outside

  std::string fresh(const char* prefix) { return prefix + std::to_string(counter_++); }

  void makeLets() {
    const std::vector<int64_t> values = {1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17};
    int lets = 1 + rng_.below(4);
    std::vector<Size> declared;
    for (int l = 0; l < lets; ++l) {
      std::string name = "N" + std::to_string(l);
      int64_t v = 0;
      std::string expr;
      if (!declared.empty() && rng_.chance(0.35)) {
        // A derived size: floor division and modulo as in spec section 3.
        const Size& a = rng_.pick(declared);
        switch (rng_.below(4)) {
          case 0: v = a.value + 2; expr = a.text + " + 2"; break;
          case 1: v = (a.value + 1) / 2; expr = "(" + a.text + " + 1) / 2"; break;
          case 2: v = a.value % 3 + 1; expr = a.text + " % 3 + 1"; break;
          default: v = a.value * 2 - 1; expr = a.text + " * 2 - 1"; break;
        }
      } else {
        v = rng_.pick(values);
        expr = std::to_string(v);
      }
      if (v <= 0 || v > 40) continue;
      out_ += "let " + name + " = " + expr + (rng_.chance(0.3) ? "; " : "\n");
      declared.push_back({v, name});
    }
    if (!out_.empty() && out_.back() != '\n') out_ += "\n";
    sizes_ = declared;
    for (int64_t lit : {1, 1, 2, 3, 5, 6, 11}) sizes_.push_back({lit, std::to_string(lit)});
  }

  std::vector<Size> randomShape(int rank) {
    for (int attempt = 0;; ++attempt) {
      std::vector<Size> shape;
      int64_t n = 1;
      for (int d = 0; d < rank; ++d) {
        shape.push_back(rng_.pick(sizes_));
        n *= shape.back().value;
      }
      if (n <= kMaxElements || attempt > 20) {
        if (n > kMaxElements) for (Size& s : shape) s = {1, "1"};
        return shape;
      }
    }
  }

  static std::string dimsText(const std::vector<Size>& shape) {
    std::string s;
    for (size_t d = 0; d < shape.size(); ++d) s += (d ? ", " : "") + shape[d].text;
    return s;
  }

  void makeInputs() {
    int inputs = 1 + rng_.below(3);
    for (int k = 0; k < inputs; ++k) {
      TensorDesc t{fresh("x"), randomShape(rng_.below(4)), true, 1.0};
      int r = rng_.below(20);
      const char* dtype = r < 13 ? "f32" : r < 18 ? "f64" : (opt_.lowPrecision ? (r == 18 ? "f16" : "bf16") : "f32");
      out_ += "input " + t.name + " : " + dtype;
      if (!t.shape.empty()) out_ += "[" + dimsText(t.shape) + "]";
      out_ += "\n";
      tensors_.push_back(t);
    }
  }

  // ---- values shared by both forms -------------------------------------------------------

  Value literal() {
    const Literal& l = rng_.pick(kLiterals);
    return scalar(l.text, std::fabs(l.value), l.exact);
  }

  // `v` squashed into [-lim, lim] when it may be larger (or infinite).
  Value clampTo(Value v, double lim) {
    if (v.finite && v.mag <= lim) return v;
    v.text = num(lim) + " * tanh(" + v.text + ")";
    v.text = "(" + v.text + ")";
    v.mag = lim;
    v.exact = false;
    v.finite = true;
    return v;
  }

  static std::vector<Size> broadcast(const std::vector<Size>& a, const std::vector<Size>& b) {
    const std::vector<Size>& big = a.size() >= b.size() ? a : b;
    const std::vector<Size>& small = a.size() >= b.size() ? b : a;
    std::vector<Size> out = big;
    size_t off = big.size() - small.size();
    for (size_t d = 0; d < small.size(); ++d)
      if (out[off + d].value == 1) out[off + d] = small[d];
    return out;
  }

  static bool compatible(const std::vector<Size>& a, const std::vector<Size>& b) {
    size_t n = std::min(a.size(), b.size());
    for (size_t d = 1; d <= n; ++d) {
      int64_t x = a[a.size() - d].value, y = b[b.size() - d].value;
      if (x != y && x != 1 && y != 1) return false;
    }
    return true;
  }

  Value unaryBuiltin(Value a, const std::function<Value()>& exactLeaf) {
    Value r;
    r.shape = a.shape;
    r.exact = false;
    switch (rng_.below(14)) {
      case 0: a = clampTo(a, 6); r.text = "exp(" + a.text + ")"; r.mag = std::exp(a.mag); break;
      case 1:
        a = clampTo(a, kMaxMag);
        r.text = "log(abs(" + a.text + ") + 0.5)";
        r.mag = std::max(0.7, std::log(a.mag + 0.5));
        break;
      case 2: a = clampTo(a, kMaxMag); r.text = "sqrt(abs(" + a.text + ") + .25)"; r.mag = std::sqrt(a.mag + 0.25); break;
      case 3: a = clampTo(a, kMaxMag); r.text = "rsqrt(abs(" + a.text + ") + 0.5)"; r.mag = 1.5; break;
      case 4: a = clampTo(a, kMaxMag); r.text = "tanh(" + a.text + ")"; r.mag = 1; break;
      case 5: a = clampTo(a, kMaxMag); r.text = "sigmoid(" + a.text + ")"; r.mag = 1; break;
      case 6: a = clampTo(a, kMaxMag); r.text = "erf(" + a.text + ")"; r.mag = 1; break;
      case 7: a = clampTo(a, 50); r.text = "sin(" + a.text + ")"; r.mag = 1; break;
      case 8: a = clampTo(a, 50); r.text = "cos(" + a.text + ")"; r.mag = 1; break;
      case 9: a = clampTo(a, kMaxMag); r.text = "relu(" + a.text + ")"; r.mag = a.mag; break;
      case 10: a = clampTo(a, kMaxMag); r.text = "abs(" + a.text + ")"; r.mag = a.mag; r.exact = a.exact; break;
      case 11:
      case 12: {
        // floor/ceil of an inexact value near an integer is a discrete decision the reference and
        // compiled code may take differently: only exact values (times 4, still exact).
        // An inexact operand is kept beside it (dropping it could drop the only bare access that
        // infers an index variable's range).
        const char* fn = rng_.chance(0.5) ? "floor" : "ceil";
        if (a.exact) {
          a = clampTo(a, kMaxMag);
          r.text = std::string(fn) + "(4 * " + a.text + ")";
          r.mag = 4 * a.mag + 1;
          r.exact = true;
        } else {
          Value e = clampTo(exactLeaf(), kMaxMag);
          a = clampTo(a, kMaxMag);
          r.text = std::string(fn) + "(4 * " + e.text + ") + " + a.text;
          r.shape = broadcast(e.shape, a.shape);
          r.mag = 4 * e.mag + 1 + a.mag;
        }
        break;
      }
      default: a = clampTo(a, kMaxMag); r.text = "-" + a.text; r.mag = a.mag; r.exact = a.exact; break;
    }
    r.text = "(" + r.text + ")";
    return r;
  }

  Value binary(Value a, Value b) {
    Value r;
    r.shape = broadcast(a.shape, b.shape);
    r.exact = false;
    a = clampTo(a, kMaxMag);
    b = clampTo(b, kMaxMag);
    switch (rng_.below(9)) {
      case 0:
      case 1: r.text = a.text + " + " + b.text; r.mag = a.mag + b.mag; break;
      case 2: r.text = a.text + " - " + b.text; r.mag = a.mag + b.mag; break;
      case 3:
      case 4:
        a = clampTo(a, 30);
        b = clampTo(b, 30);
        r.text = a.text + " * " + b.text;
        r.mag = a.mag * b.mag;
        break;
      case 5: r.text = a.text + " / (abs(" + b.text + ") + 0.5)"; r.mag = 2 * a.mag; break;
      case 6:
        a = clampTo(a, 4);
        b = clampTo(b, 3);
        r.text = "pow(abs(" + a.text + ") + 0.5, " + b.text + ")";
        r.mag = std::max(std::pow(4.5, 3.0), std::pow(2.0, 3.0));
        break;
      case 7: r.text = "max(" + a.text + ", " + b.text + ")"; r.mag = std::max(a.mag, b.mag); r.exact = a.exact && b.exact; break;
      default: r.text = "min(" + a.text + ", " + b.text + ")"; r.mag = std::max(a.mag, b.mag); r.exact = a.exact && b.exact; break;
    }
    r.text = "(" + r.text + ")";
    return r;
  }

  std::string comparison(const Value& a, const Value& b) {
    static const std::vector<std::string> ops = {"<", "<=", ">", ">=", "==", "!="};
    return "(" + a.text + " " + rng_.pick(ops) + " " + b.text + ")";
  }

  // ---- whole-tensor form ------------------------------------------------------------------

  // Tensors whose shape broadcasts to `target` (every dimension equal or 1, aligned right).
  std::vector<const TensorDesc*> broadcastable(const std::vector<Size>& target, bool inputsOnly) {
    std::vector<const TensorDesc*> out;
    for (const TensorDesc& t : tensors_) {
      if (inputsOnly && !t.input) continue;
      if (t.shape.size() > target.size()) continue;
      bool ok = true;
      size_t off = target.size() - t.shape.size();
      for (size_t d = 0; d < t.shape.size(); ++d)
        ok = ok && (t.shape[d].value == 1 || t.shape[d].value == target[off + d].value);
      if (ok) out.push_back(&t);
    }
    return out;
  }

  Value tensorValue(const TensorDesc& t) {
    return {t.name, t.mag, t.input, true, t.shape};
  }

  Value wholeLeaf(const std::vector<Size>& target, bool exactOnly) {
    std::vector<const TensorDesc*> cands = broadcastable(target, exactOnly);
    int r = rng_.below(10);
    if (!cands.empty() && r < 7) return tensorValue(*rng_.pick(cands));
    if (r == 7 && !exactOnly) return fullReduction();
    Value l = literal();
    return l;
  }

  // A rank-0 reduction over every dimension of a tensor: `sum(a, b: x[a, b])`.
  Value fullReduction() {
    std::vector<const TensorDesc*> cands;
    for (const TensorDesc& t : tensors_)
      if (!t.shape.empty()) cands.push_back(&t);
    if (cands.empty()) return literal();
    const TensorDesc& t = *rng_.pick(cands);
    std::vector<IndexVar> scope;
    for (const Size& s : t.shape) scope.push_back({fresh("r"), s, false, false});
    int64_t terms = 1;
    for (const Size& s : t.shape) terms *= s.value;
    int64_t savedWork = work_;
    bool savedSkip = maySkip_;
    work_ = terms;
    maySkip_ = false;
    Value body = indexExpr(scope, 1, true, &t);
    bool skippable = maySkip_;
    work_ = savedWork;
    maySkip_ = savedSkip;
    return reductionOver(scope, body, terms, skippable);
  }

  Value wholeExpr(const std::vector<Size>& target, int depth) {
    if (depth <= 0 || rng_.chance(0.25)) return wholeLeaf(target, false);
    int r = rng_.below(10);
    auto exactLeaf = [&] { return wholeLeaf(target, true); };
    if (r < 4) {
      // Sometimes the same operand twice: common subexpressions for cse and fusion to meet.
      Value a = wholeExpr(target, depth - 1);
      return binary(a, rng_.chance(0.08) ? a : wholeExpr(target, depth - 1));
    }
    if (r < 8) return unaryBuiltin(wholeExpr(target, depth - 1), exactLeaf);
    // select on a comparison of exact operands (inputs and literals broadcast).
    Value c1 = exactLeaf(), c2 = exactLeaf();
    Value a = wholeExpr(target, depth - 1), b = wholeExpr(target, depth - 1);
    Value r2;
    r2.shape = broadcast(broadcast(c1.shape, c2.shape), broadcast(a.shape, b.shape));
    a = clampTo(a, kMaxMag);
    b = clampTo(b, kMaxMag);
    r2.text = "select(" + comparison(c1, c2) + ", " + a.text + ", " + b.text + ")";
    r2.mag = std::max(a.mag, b.mag);
    r2.exact = a.exact && b.exact;
    return r2;
  }

  // ---- index form -------------------------------------------------------------------------

  // The interval of an index expression over the variables' ranges, as spec 5.4 computes it.
  struct IndexExpr {
    std::string text;
    int64_t lo, hi;
  };

  static int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

  IndexExpr indexOf(IndexVar& v) { return {v.name, 0, v.extent.value - 1}; }

  // One index of a dimension of extent `dim`; `inReduction` allows ones that may fall outside.
  IndexExpr dimIndex(std::vector<IndexVar>& scope, const Size& dim, bool inReduction) {
    for (int attempt = 0; attempt < 8; ++attempt) {
      IndexExpr e{"0", 0, 0};
      int r = rng_.below(12);
      // Most often a bare variable of the dimension's extent: the accesses of real programs
      // (matmul, convolutions) and what makes inferred ranges and reductions over dimensions.
      std::vector<IndexVar*> same;
      for (IndexVar& v : scope)
        if (v.extent.value == dim.value) same.push_back(&v);
      if (!same.empty() && rng_.chance(0.55)) {
        IndexVar& v = *same[static_cast<size_t>(rng_.below(static_cast<int>(same.size())))];
        if (!v.bounded) v.seenBare = true;
        return indexOf(v);
      }
      if (scope.empty() || r >= 10) {
        int64_t c = rng_.below(static_cast<int>(dim.value));
        e = {std::to_string(c), c, c};
        if (rng_.chance(0.2) && dim.value > 1) e = {dim.text + " - 1", dim.value - 1, dim.value - 1};
      } else {
        IndexVar& v = scope[static_cast<size_t>(rng_.below(static_cast<int>(scope.size())))];
        IndexExpr b = indexOf(v);
        if (r < 5) {
          // A bare variable: inferred variables only where the extents agree (spec 5.2).
          if (!v.bounded && v.extent.value != dim.value) continue;
          e = b;
          if (!v.bounded) v.seenBare = true;
        } else if (r < 7) {
          int64_t c = 1 + rng_.below(3);
          IndexVar& w = scope[static_cast<size_t>(rng_.below(static_cast<int>(scope.size())))];
          if (&w != &v && rng_.chance(0.4)) {
            IndexExpr wb = indexOf(w);
            e = {b.text + " + " + wb.text + " - " + std::to_string(c), b.lo + wb.lo - c, b.hi + wb.hi - c};
          } else if (rng_.chance(0.5)) {
            e = {b.text + " + " + std::to_string(c), b.lo + c, b.hi + c};
          } else {
            e = {b.text + " - " + std::to_string(c), b.lo - c, b.hi - c};
          }
        } else if (r < 8) {
          // Reversed: N - 1 - v.
          int64_t top = dim.value - 1;
          e = {dim.text + " - 1 - " + b.text, top - b.hi, top - b.lo};
        } else if (r < 9) {
          int64_t c = 2 + rng_.below(3);
          int64_t off = rng_.below(3) - 1;
          std::string inner = b.text + (off > 0 ? " + 1" : off < 0 ? " - 1" : "");
          e = {"(" + inner + ") / " + std::to_string(c), floorDiv(b.lo + off, c), floorDiv(b.hi + off, c)};
        } else {
          int64_t c = 2 + rng_.below(4);
          int64_t off = rng_.below(5) - 2;
          std::string inner = b.text + (off >= 0 ? " + " : " - ") + std::to_string(std::abs(off));
          int64_t lo = b.lo + off, hi = b.hi + off;
          // Within one period the modulo is exact; otherwise anywhere in [0, c - 1].
          if (floorDiv(lo, c) == floorDiv(hi, c)) e = {"(" + inner + ") % " + std::to_string(c), lo - floorDiv(lo, c) * c, hi - floorDiv(lo, c) * c};
          else e = {"(" + inner + ") % " + std::to_string(c), 0, c - 1};
        }
      }
      bool inBounds = e.lo >= 0 && e.hi < dim.value;
      if (inBounds) return e;
      if (inReduction && rng_.chance(0.7)) {
        maySkip_ = true;
        return e;
      }
    }
    return {"0", 0, 0};
  }

  Value access(std::vector<IndexVar>& scope, const TensorDesc& t, bool inReduction) {
    Value v = tensorValue(t);
    v.shape.clear();
    if (t.shape.empty()) return v;
    std::string s = t.name + "[";
    for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? ", " : "") + dimIndex(scope, t.shape[d], inReduction).text;
    v.text = s + "]";
    return v;
  }

  Value indexLeaf(std::vector<IndexVar>& scope, bool inReduction, bool exactOnly, const TensorDesc* prefer) {
    int r = rng_.below(12);
    if (prefer && r < 6) return access(scope, *prefer, inReduction);
    if (r < 8) {
      std::vector<const TensorDesc*> cands;
      for (const TensorDesc& t : tensors_)
        if (!exactOnly || t.input) cands.push_back(&t);
      if (!cands.empty()) return access(scope, *rng_.pick(cands), inReduction);
    }
    if (r < 10 && !scope.empty()) {
      const IndexVar& v = scope[static_cast<size_t>(rng_.below(static_cast<int>(scope.size())))];
      return scalar(v.name, static_cast<double>(v.extent.value), true);
    }
    if (r < 11) {
      // A size used as a value (converted to the float dtype).
      const Size& s = rng_.pick(sizes_);
      if (!std::isdigit(static_cast<unsigned char>(s.text[0]))) return scalar(s.text, static_cast<double>(s.value), true);
    }
    return literal();
  }

  // `KIND(vars: body)`, with body terms kept small enough for the kind.
  Value reductionOver(std::vector<IndexVar>& vars, Value body, int64_t terms, bool skippable) {
    int k = rng_.below(4);
    std::string binders;
    for (size_t i = 0; i < vars.size(); ++i) {
      IndexVar& v = vars[i];
      binders += (i ? ", " : "") + v.name;
      if (v.bounded || !v.seenBare) binders += " < " + v.extent.text;
    }
    Value r;
    r.exact = false;
    body = clampTo(body, kMaxMag);
    switch (k) {
      case 0: r.text = "sum(" + binders + ": " + body.text + ")"; r.mag = body.mag * static_cast<double>(terms); break;
      case 1:
      case 2: {
        const char* kind = k == 1 ? "max" : "min";
        // A masked term (spec's causal-mask idiom); the first term always survives the mask, so
        // the result stays finite unless every term is skipped.
        if (rng_.chance(0.2) && !vars.empty()) {
          const IndexVar& v = vars[0];
          body.text = "select(" + v.name + " <= " + std::to_string(rng_.below(3)) + ", " + body.text + ", " +
                      (k == 1 ? "-inf" : "inf") + ")";
        }
        r.text = std::string(kind) + "(" + binders + ": " + body.text + ")";
        r.mag = body.mag;
        // Every term may be skipped (padding): the identity is infinite.
        r.finite = !skippable;
        break;
      }
      default: {
        if (body.mag * static_cast<double>(terms) > 8) {
          double c = std::max(1e-3, 0.5 / (body.mag * static_cast<double>(terms)));
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.3g", c);
          body.text = "(1 + " + std::string(buf) + " * " + body.text + ")";
          body.mag = 1 + c * body.mag;
        }
        r.text = "prod(" + binders + ": " + body.text + ")";
        r.mag = std::pow(std::max(body.mag, 1.0), static_cast<double>(terms));
        break;
      }
    }
    r.mag = std::min(r.mag, 1e300);
    return r;
  }

  Value nestedReduction(std::vector<IndexVar>& scope, int depth) {
    int nvars = 1 + (rng_.chance(0.3) ? 1 : 0);
    std::vector<IndexVar> vars;
    int64_t terms = 1;
    for (int i = 0; i < nvars; ++i) {
      // Usually the extent of some tensor's dimension, so the body can index it bare.
      Size e = rng_.pick(sizes_);
      const TensorDesc& t = rng_.pick(tensors_);
      if (!t.shape.empty() && rng_.chance(0.7)) e = rng_.pick(t.shape);
      if (work_ * terms * e.value > kMaxWork) break;
      vars.push_back({fresh("k"), e, rng_.chance(0.4), false});
      terms *= e.value;
    }
    if (vars.empty()) return indexLeaf(scope, true, false, nullptr);
    std::vector<IndexVar> inner = scope;
    inner.insert(inner.end(), vars.begin(), vars.end());
    int64_t savedWork = work_;
    bool savedSkip = maySkip_;
    work_ *= terms;
    maySkip_ = false;
    Value body = indexExpr(inner, depth - 1, true, nullptr);
    bool skippable = maySkip_;
    work_ = savedWork;
    maySkip_ = savedSkip;
    // Outer variables seen bare in the body count for their own inference.
    for (size_t i = 0; i < scope.size(); ++i) scope[i].seenBare = scope[i].seenBare || inner[i].seenBare;
    for (size_t i = 0; i < vars.size(); ++i) vars[i] = inner[scope.size() + i];
    return reductionOver(vars, body, terms, skippable);
  }

  Value indexExpr(std::vector<IndexVar>& scope, int depth, bool inReduction, const TensorDesc* prefer) {
    if (depth <= 0 || rng_.chance(0.2)) return indexLeaf(scope, inReduction, false, prefer);
    int r = rng_.below(12);
    auto exactLeaf = [&] { return indexLeaf(scope, inReduction, true, nullptr); };
    if (r < 4) {
      Value a = indexExpr(scope, depth - 1, inReduction, prefer);
      return binary(a, rng_.chance(0.08) ? a : indexExpr(scope, depth - 1, inReduction, nullptr));
    }
    if (r < 7) return unaryBuiltin(indexExpr(scope, depth - 1, inReduction, prefer), exactLeaf);
    if (r < 10) return nestedReduction(scope, depth);
    Value c1 = exactLeaf(), c2 = exactLeaf();
    std::string cond = comparison(c1, c2);
    if (rng_.chance(0.3)) cond = "(" + cond + (rng_.chance(0.5) ? " && " : " || ") + comparison(exactLeaf(), exactLeaf()) + ")";
    if (rng_.chance(0.15)) cond = "!" + cond;
    Value a = clampTo(indexExpr(scope, depth - 1, inReduction, prefer), kMaxMag);
    Value b = clampTo(indexExpr(scope, depth - 1, inReduction, nullptr), kMaxMag);
    return scalar("select(" + cond + ", " + a.text + ", " + b.text + ")", std::max(a.mag, b.mag), a.exact && b.exact);
  }

  // ---- statements -------------------------------------------------------------------------

  // A softmax-weighted sum over the last axis j of an existing tensor x (the pattern of
  // attention and of docs/online-softmax.md): the row max as a statement of its own, then
  //   y[r.., c] = sum(j: exp(x[r.., j] - m[r..]) * w) / sum(j: exp(x[r.., j] - m[r..]))
  // with w a tensor whose first extent is J (read at [j] or [j, c]) or, without one, index values.
  // A weighted average of w: |y| <= |w|, and the denominator is at least 1 (the max's own term).
  bool makeSoftmaxWeighted(bool last) {
    std::vector<const TensorDesc*> rows;
    for (const TensorDesc& t : tensors_)
      if (!t.shape.empty() && t.shape.back().value > 1) rows.push_back(&t);
    if (rows.empty()) return false;
    const TensorDesc x = *rng_.pick(rows);  // copies: tensors_ grows below
    // Half the time the scores are a dot product of x's rows with the rows of a matrix z
    // (attention's Q K^T, which the CPU's tile-online-softmax blocks), sometimes causally masked.
    std::vector<const TensorDesc*> keys;
    for (const TensorDesc& t : tensors_)
      if (t.shape.size() == 2 && t.shape[1].value == x.shape.back().value) keys.push_back(&t);
    std::optional<TensorDesc> z;
    if (!keys.empty() && rng_.chance(0.5)) z = *rng_.pick(keys);
    const Size J = z ? z->shape[0] : x.shape.back();
    std::vector<const TensorDesc*> weights;
    for (const TensorDesc& t : tensors_)
      if (!t.shape.empty() && t.shape.size() <= 2 && t.shape[0].value == J.value) weights.push_back(&t);
    std::optional<TensorDesc> w;
    if (!weights.empty() && rng_.chance(0.7)) w = *rng_.pick(weights);
    const Size C = w ? (w->shape.size() == 2 ? w->shape[1] : Size{1, "1"}) : rng_.pick(sizes_);
    int64_t rowCount = 1;
    for (size_t d = 0; d + 1 < x.shape.size(); ++d) rowCount *= x.shape[d].value;
    if (rowCount * C.value > kMaxElements / 2 || rowCount * C.value * J.value * 2 > kMaxWork) return false;
    if (z && rowCount * J.value * x.shape.back().value * 3 > kMaxWork) return false;

    std::string binders, rowIndex, lastRowVar;
    std::vector<Size> rowShape;
    for (size_t d = 0; d + 1 < x.shape.size(); ++d) {
      std::string v = fresh("i");
      binders += (d ? ", " : "") + v + " < " + x.shape[d].text;
      rowIndex += v + ", ";
      rowShape.push_back(x.shape[d]);
      lastRowVar = v;
    }
    const std::string j = fresh("j"), c = fresh("c");
    const std::string m = fresh("t");
    std::string xRow = x.name + "[" + rowIndex + j + "]";
    double scoreMag = x.mag;
    if (z) {
      const std::string d = fresh("d");
      const Size D = x.shape.back();
      xRow = "sum(" + d + " < " + D.text + ": " + x.name + "[" + rowIndex + d + "] * " + z->name + "[" + j + ", " + d + "]) * 0.125";
      scoreMag = x.mag * z->mag * 0.125 * static_cast<double>(D.value);
      if (!rowShape.empty() && rng_.chance(0.5)) {
        // j <= the last row index: row r sees keys 0..r (every row at least key 0).
        xRow = "select(" + j + " <= " + lastRowVar + ", " + xRow + ", -inf)";
      }
    }
    const std::string mRow = rowShape.empty() ? m : m + "[" + rowIndex.substr(0, rowIndex.size() - 2) + "]";
    out_ += m + (rowShape.empty() ? "" : "[" + binders + "]") + " = max(" + j + " < " + J.text + ": " + xRow + ")\n";
    tensors_.push_back({m, rowShape, false, scoreMag});

    std::string weight = "(" + j + " - 2 * " + c + ") * 0.125";
    double wmag = 0.125 * static_cast<double>(J.value + 2 * C.value);
    if (w) {
      weight = w->name + "[" + j + (w->shape.size() == 2 ? ", " + c : "") + "]";
      wmag = w->mag;
    }
    const std::string e = "exp(" + xRow + " - " + mRow + ")";
    bool output = last || rng_.chance(0.5);
    std::string y = fresh(output ? "y" : "t");
    std::vector<Size> shape = rowShape;
    shape.push_back(C);
    out_ += std::string(output ? "output " : "") + y + "[" + binders + (binders.empty() ? "" : ", ") + c + " < " + C.text +
            "] = sum(" + j + " < " + J.text + ": " + e + " * " + weight + ") / sum(" + j + " < " + J.text + ": " + e + ")\n";
    tensors_.push_back({y, shape, false, std::max(wmag, 1.0)});
    return true;
  }

  void makeStatement(bool last) {
    if (rng_.chance(0.1) && makeSoftmaxWeighted(last)) return;
    bool output = last || rng_.chance(0.35);
    std::string name = fresh(output ? "y" : "t");
    TensorDesc t{name, {}, false, kMaxMag};
    std::string text;
    work_ = 1;
    if (rng_.chance(0.4)) {
      // Whole-tensor form over the shape of an existing tensor (or a broadcast of two).
      std::vector<Size> target = rng_.pick(tensors_).shape;
      if (rng_.chance(0.3)) {
        const std::vector<Size>& other = rng_.pick(tensors_).shape;
        if (compatible(target, other)) target = broadcast(target, other);
      }
      int64_t n = 1;
      for (const Size& s : target) n *= s.value;
      if (n > kMaxElements) target.clear();
      Value v = clampTo(wholeExpr(target, 1 + rng_.below(opt_.maxDepth)), kMaxMag);
      t.shape = v.shape;
      t.mag = v.mag;
      text = name + " = " + v.text;
    } else {
      const TensorDesc& like = rng_.pick(tensors_);
      int rank = (!like.shape.empty() && rng_.chance(0.6)) ? static_cast<int>(like.shape.size()) : 1 + rng_.below(3);
      std::vector<IndexVar> lhs;
      int64_t n = 1;
      for (int d = 0; d < rank; ++d) {
        // Extents of an existing tensor make bare accesses (inferred ranges) likely.
        Size e = (d < static_cast<int>(like.shape.size()) && rng_.chance(0.7)) ? like.shape[static_cast<size_t>(d)] : rng_.pick(sizes_);
        if (n * e.value > kMaxElements / 2) e = {1, "1"};
        n *= e.value;
        lhs.push_back({fresh("i"), e, rng_.chance(0.3), false});
      }
      work_ = n;
      Value v = clampTo(indexExpr(lhs, 1 + rng_.below(opt_.maxDepth), false, &like), kMaxMag);
      t.mag = v.mag;
      std::string binders;
      for (size_t d = 0; d < lhs.size(); ++d) {
        binders += (d ? ", " : "") + lhs[d].name;
        if (lhs[d].bounded || !lhs[d].seenBare) binders += " < " + lhs[d].extent.text;
        t.shape.push_back(lhs[d].extent);
      }
      text = name + (lhs.empty() ? "" : "[" + binders + "]") + " = " + v.text;
    }
    out_ += (output ? "output " : "") + text + "\n";
    tensors_.push_back(t);
  }
};

}  // namespace

std::string generateProgram(uint64_t seed, const GeneratorOptions& options) { return Generator(seed, options).run(); }

}  // namespace texc::random
