#include "compiler/loops/SplitBorders.h"

#include "compiler/loops/transforms/LoopTransforms.h"

#include <algorithm>
#include <optional>

namespace texc::loops {

namespace {

// index = coef * v + rest, with rest somewhere in [lo, hi].
struct Affine {
  int64_t coef = 0;
  int64_t lo = 0, hi = 0;
};

// `ix` as an affine function of variable `v`, the other variables ranging over [0, extent);
// nothing when v appears other than linearly, or a variable's range is unknown (extent 0).
std::optional<Affine> affine(const IndexExpr& ix, int v, const std::vector<int64_t>& extents) {
  switch (ix.kind) {
    case IndexExpr::Kind::Const: return Affine{0, ix.constant, ix.constant};
    case IndexExpr::Kind::Var:
      if (ix.var == v) return Affine{1, 0, 0};
      if (ix.var < 0 || ix.var >= static_cast<int>(extents.size()) || extents[ix.var] <= 0) return std::nullopt;
      return Affine{0, 0, extents[ix.var] - 1};
    case IndexExpr::Kind::Add:
    case IndexExpr::Kind::Sub: {
      std::optional<Affine> a = affine(ix.ops[0], v, extents), b = affine(ix.ops[1], v, extents);
      if (!a || !b) return std::nullopt;
      if (ix.kind == IndexExpr::Kind::Add) return Affine{a->coef + b->coef, a->lo + b->lo, a->hi + b->hi};
      return Affine{a->coef - b->coef, a->lo - b->hi, a->hi - b->lo};
    }
    case IndexExpr::Kind::Mul: {
      std::optional<Affine> a = affine(ix.ops[0], v, extents);
      if (!a) return std::nullopt;
      const int64_t c = ix.constant;
      return Affine{a->coef * c, std::min(a->lo * c, a->hi * c), std::max(a->lo * c, a->hi * c)};
    }
    case IndexExpr::Kind::FloorDiv:
    case IndexExpr::Kind::Mod: {
      // Only of what does not depend on v: floor division by d > 0 is monotone, a remainder
      // lies in [0, d).
      std::optional<Affine> a = affine(ix.ops[0], v, extents);
      if (!a || a->coef != 0 || ix.constant <= 0) return std::nullopt;
      if (ix.kind == IndexExpr::Kind::Mod) return Affine{0, 0, ix.constant - 1};
      return Affine{0, floorDiv(a->lo, ix.constant), floorDiv(a->hi, ix.constant)};
    }
  }
  return std::nullopt;
}

int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

// The values of v for which `c` holds whatever the other variables are: [lo, hi], empty when
// lo > hi; nothing when c does not depend on v or cannot be analysed.
std::optional<std::pair<int64_t, int64_t>> provedRange(const GuardCond& c, int v, const std::vector<int64_t>& extents) {
  std::optional<Affine> a = affine(c.index, v, extents);
  if (!a || a->coef == 0) return std::nullopt;
  // 0 <= coef * v + rest and coef * v + rest <= extent - 1 for every rest in [lo, hi].
  if (a->coef > 0) return std::pair{ceilDiv(-a->lo, a->coef), floorDiv(c.extent - 1 - a->hi, a->coef)};
  const int64_t b = -a->coef;
  return std::pair{ceilDiv(a->hi - (c.extent - 1), b), floorDiv(a->lo, b)};
}

void collectConds(const std::vector<Stmt>& body, std::vector<const GuardCond*>& out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Guard)
      for (const GuardCond& c : s.conds) out.push_back(&c);
    collectConds(s.body, out);
  }
}

// Drops the conditions that hold for every v in [lo, hi]; a guard left with none is replaced
// by its body.
void dropProved(std::vector<Stmt>& body, int v, int64_t lo, int64_t hi, const std::vector<int64_t>& extents) {
  std::vector<Stmt> out;
  for (Stmt& s : body) {
    dropProved(s.body, v, lo, hi, extents);
    if (s.kind == StmtKind::Guard) {
      std::erase_if(s.conds, [&](const GuardCond& c) {
        std::optional<std::pair<int64_t, int64_t>> r = provedRange(c, v, extents);
        return r && r->first <= lo && hi <= r->second;
      });
      if (s.conds.empty()) {
        for (Stmt& inner : s.body) out.push_back(std::move(inner));
        continue;
      }
    }
    out.push_back(std::move(s));
  }
  body = std::move(out);
}

struct Splitter {
  Kernel& kernel;
  int splits = 0;

  explicit Splitter(Kernel& k) : kernel(k) {}

  // The extent of every loop in `body` (the largest, where a variable is bound twice).
  static void recordExtents(const std::vector<Stmt>& body, std::vector<int64_t>& out) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Loop) out[s.var] = std::max(out[s.var], s.extent);
      recordExtents(s.body, out);
    }
  }

  // The three loops that replace `loop`, or nothing when it stays as it is.
  std::vector<Stmt> split(const Stmt& loop) {
    if (loop.parallel) return {};
    std::vector<const GuardCond*> conds;
    collectConds(loop.body, conds);
    // Only conditions on the loop's own variable and those of loops inside it count: one that
    // also reads an outer variable (the tail guard 4 * j.o + j.i < 10 of a split, seen from
    // j.i) has a border that moves with it, and its worst case would leave a thin interior.
    std::vector<int64_t> inner(kernel.varNames.size(), 0);
    recordExtents(loop.body, inner);
    int64_t lo = 0, hi = loop.extent - 1;
    bool any = false;
    for (const GuardCond* c : conds) {
      std::optional<std::pair<int64_t, int64_t>> r = provedRange(*c, loop.var, inner);
      if (!r || r->first > r->second) continue;
      lo = std::max(lo, r->first);
      hi = std::min(hi, r->second);
      any = true;
    }
    if (!any || lo > hi) return {};
    std::vector<Stmt> parts;
    const std::string name = kernel.varNames[loop.var];  // a copy: addVar grows varNames
    auto part = [&](int var, int64_t extent) {
      Stmt l = loop;
      l.var = var;
      l.extent = extent;
      return l;
    };
    if (lo > 0) parts.push_back(part(loop.var, lo));
    Stmt interior = part(loop.var, hi - lo + 1);
    dropProved(interior.body, loop.var, lo, hi, inner);
    if (lo > 0) {
      interior.var = nest::addVar(kernel, name + ".in");
      nest::substitute(interior.body, loop.var, nest::affine(1, interior.var, lo));
    }
    parts.push_back(std::move(interior));
    if (hi < loop.extent - 1) {
      Stmt upper = part(nest::addVar(kernel, name + ".hi"), loop.extent - 1 - hi);
      nest::substitute(upper.body, loop.var, nest::affine(1, upper.var, hi + 1));
      parts.push_back(std::move(upper));
    }
    ++splits;
    return parts;
  }

  // Splits the loops of `body` that lie outside every reduction: the loops of a reduction
  // (after its accumulator's init) are short (a 3x3 window), and splitting them would copy the
  // term for every combination of borders.
  void run(std::vector<Stmt>& body) {
    for (const Stmt& s : body)
      if (s.kind == StmtKind::AccInit) return;
    std::vector<Stmt> out;
    for (Stmt& s : body) {
      if (s.kind == StmtKind::Loop) {
        std::vector<Stmt> parts = split(s);
        if (!parts.empty()) {
          for (Stmt& p : parts) {
            run(p.body);
            out.push_back(std::move(p));
          }
          continue;
        }
      }
      run(s.body);
      out.push_back(std::move(s));
    }
    body = std::move(out);
  }
};

}  // namespace

int splitBorders(LoopProgram& p) {
  int n = 0;
  for (Kernel& k : p.kernels) {
    if (!nest::checkTransformable(k).empty()) continue;  // tiled: its padding is in the packs
    Splitter s(k);
    s.run(k.body);
    n += s.splits;
  }
  return n;
}

}  // namespace texc::loops
