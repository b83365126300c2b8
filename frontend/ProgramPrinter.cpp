// printProgram: the analysed program in a stable text form (`texc compile --emit sema`).
//
//   let N = 64                         (literal; -D N overrides it)
//   input x : f32[64, 128]
//   output y : f32[64]  = y[i] = sum(j: x[i, j]) / 128
//     index i < 64     inferred from dimension 0 of 'x' (f32[64, 128])  @3:22
//     index j < 128    reduction #0 sum, inferred from dimension 1 of 'x' (f32[64, 128])  @3:25
//     access x[i, j]   in bounds: [0, 63] < 64, [0, 127] < 128
//     access I[...]    guarded (skips a term of #0 sum): [-1, 56] vs 56, ...
#include <fmt/format.h>

#include <cmath>

#include "frontend/Sema.h"

namespace texc {

namespace {

// Precedence levels for printing with the fewest parentheses.
enum Prec { kOr = 1, kAnd, kCmp, kAdd, kMul, kUnary, kAtom };

std::string numberText(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

struct Printer {
  const Program& p;
  const Computation& c;
  bool markComputed = false;  // the dataflow printer writes computed values as %name

  std::string index(const IndexExpr& ix, int& prec) const {
    switch (ix.kind) {
      case IndexExpr::Kind::Const:
        prec = ix.constant < 0 ? kUnary : kAtom;
        return std::to_string(ix.constant);
      case IndexExpr::Kind::Var: prec = kAtom; return c.vars[ix.var].name;
      case IndexExpr::Kind::Add:
      case IndexExpr::Kind::Sub: {
        prec = kAdd;
        bool sub = ix.kind == IndexExpr::Kind::Sub;
        return sub_(ix.ops[0], kAdd, false) + (sub ? " - " : " + ") + sub_(ix.ops[1], kAdd, sub);
      }
      case IndexExpr::Kind::Mul: prec = kMul; return fmt::format("{} * {}", ix.constant, sub_(ix.ops[0], kMul, true));
      case IndexExpr::Kind::FloorDiv: prec = kMul; return fmt::format("{} / {}", sub_(ix.ops[0], kMul, false), ix.constant);
      case IndexExpr::Kind::Mod: prec = kMul; return fmt::format("{} % {}", sub_(ix.ops[0], kMul, false), ix.constant);
    }
    return "?";
  }
  std::string sub_(const IndexExpr& ix, int parent, bool right) const {
    int prec;
    std::string s = index(ix, prec);
    return prec < parent || (right && prec == parent) ? "(" + s + ")" : s;
  }
  std::string index(const IndexExpr& ix) const {
    int prec;
    return index(ix, prec);
  }

  std::string access(const Value& v) const {
    std::string s = (markComputed && !p.tensors[v.tensor].isInput ? "%" : "") + p.tensors[v.tensor].name;
    if (v.indices.empty()) return s;
    s += "[";
    for (size_t i = 0; i < v.indices.size(); ++i) s += (i ? ", " : "") + index(v.indices[i]);
    return s + "]";
  }

  static int binaryPrec(BinaryOp op) {
    if (op == BinaryOp::Or) return kOr;
    if (op == BinaryOp::And) return kAnd;
    if (isComparison(op)) return kCmp;
    if (op == BinaryOp::Add || op == BinaryOp::Sub) return kAdd;
    return kMul;
  }

  std::string value(const Value& v, int& prec) const {
    prec = kAtom;
    switch (v.kind) {
      case ValueKind::Const:
        if (v.constant < 0) prec = kUnary;
        return numberText(v.constant);
      case ValueKind::IndexValue:
        if (v.indices.empty()) return c.vars[v.var].name;
        prec = kAtom;
        return "(" + index(v.indices[0]) + ")";
      case ValueKind::Access: return access(v);
      case ValueKind::Unary: prec = kUnary; return spelling(v.unaryOp) + sub(v.args[0], kUnary, true);
      case ValueKind::Binary: {
        prec = binaryPrec(v.binaryOp);
        return sub(v.args[0], prec, false) + " " + spelling(v.binaryOp) + " " + sub(v.args[1], prec, true);
      }
      case ValueKind::Call: {
        std::string s = std::string(builtinName(v.builtin)) + "(";
        for (size_t i = 0; i < v.args.size(); ++i) s += (i ? ", " : "") + value(v.args[i]);
        return s + ")";
      }
      case ValueKind::Reduce: {
        std::string s = std::string(spelling(v.reduceKind)) + "(";
        for (size_t i = 0; i < v.reduceVars.size(); ++i) s += (i ? ", " : "") + c.vars[v.reduceVars[i]].name;
        return s + ": " + value(v.args[0]) + ")";
      }
    }
    return "?";
  }
  std::string sub(const Value& v, int parent, bool right) const {
    int prec;
    std::string s = value(v, prec);
    return prec < parent || (right && prec == parent) ? "(" + s + ")" : s;
  }
  std::string value(const Value& v) const {
    int prec;
    return value(v, prec);
  }
};

std::string loc(SourceRange r) { return r.valid() ? fmt::format("@{}:{}", r.begin.line, r.begin.column) : ""; }

std::string shapeText(const TensorInfo& t) {
  std::string s = dtypeName(t.dtype);
  if (t.shape.empty()) return s;
  s += "[";
  for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

void printComputation(std::string& out, const Program& p, const Computation& c) {
  Printer pr{p, c};
  const TensorInfo& t = p.tensors[c.tensor];
  std::string lhs = t.name;
  if (c.numLhsVars > 0) {
    lhs += "[";
    for (int i = 0; i < c.numLhsVars; ++i) lhs += (i ? ", " : "") + c.vars[i].name;
    lhs += "]";
  }
  out += fmt::format("{}{} : {}{}\n", t.isOutput ? "output " : "", t.name, shapeText(t),
                     c.wholeTensorForm ? "  (whole-tensor form, desugared)" : "");
  out += fmt::format("  {} = {}\n", lhs, pr.value(c.body));
  // Reductions by id, for naming the owner of reduction variables and guards.
  std::vector<std::string> reduces(c.numReduces);
  forEachValue(c.body, [&](const Value& v) {
    if (v.kind == ValueKind::Reduce) reduces[v.reduceId] = fmt::format("#{} {}", v.reduceId, spelling(v.reduceKind));
  });
  for (const IndexVar& v : c.vars) {
    std::string role = v.isReduction ? fmt::format("reduction {}, ", reduces[v.reduction]) : "";
    out += fmt::format("  index {} < {}: {}{} {}\n", v.name, v.extent, role, v.sourceText, loc(v.sourceRange));
  }
  forEachValue(c.body, [&](const Value& v) {
    if (v.kind != ValueKind::Access || v.indices.empty()) return;
    const TensorInfo& at = p.tensors[v.tensor];
    std::string ranges;
    for (size_t d = 0; d < v.indices.size(); ++d) {
      const Interval& r = v.indexRanges[d];
      bool ok = r.lo >= 0 && r.hi < at.shape[d];
      ranges += fmt::format("{}[{}, {}] {} {}", d ? ", " : "", r.lo, r.hi, ok ? "<" : "vs", at.shape[d]);
    }
    std::string status = v.check == AccessCheck::InBounds
                             ? "in bounds"
                             : fmt::format("guarded, skips a term of {}", reduces[v.ownerReduce]);
    out += fmt::format("  access {} {}: {}: {}\n", pr.access(v), loc(v.range), status, ranges);
  });
}

}  // namespace

std::string printValue(const Program& p, const Computation& c, const Value& v, bool markComputed) {
  return Printer{p, c, markComputed}.value(v);
}
std::string printIndex(const Program& p, const Computation& c, const IndexExpr& ix) { return Printer{p, c}.index(ix); }

std::string printProgram(const Program& p) {
  std::string out;
  for (const LetInfo& l : p.lets)
    out += fmt::format("let {} = {}{}\n", l.name, l.value, l.overridden ? "  (set by -D)" : l.isLiteral ? "" : "  (computed)");
  for (int id : p.inputs) out += fmt::format("input {} : {}\n", p.tensors[id].name, shapeText(p.tensors[id]));
  for (const Computation& c : p.computations) {
    out += "\n";
    printComputation(out, p, c);
  }
  return out;
}

}  // namespace texc
