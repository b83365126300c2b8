#include "compiler/loops/SplitBorders.h"

#include "compiler/loops/transforms/LoopTransforms.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"

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
std::optional<Affine> coefficientAndRange(const IndexExpr& ix, int v, const std::vector<int64_t>& extents) {
  const AffineForm form = affineForm(ix);
  if (form.overflow) return std::nullopt;
  Affine out{form.coeffOf(v), form.constant, form.constant};
  for (const AffineTerm& t : form.terms) {
    int64_t lo = 0, hi = 0;  // the range of what t.coeff multiplies
    if (!t.atom) {
      if (t.var == v) continue;
      if (t.var < 0 || t.var >= static_cast<int>(extents.size()) || extents[t.var] <= 0) return std::nullopt;
      hi = extents[t.var] - 1;
    } else {
      // Only of what does not depend on v: floor division by d > 0 is monotone, a remainder
      // lies in [0, d).
      std::optional<Affine> operand = coefficientAndRange(t.atom->ops[0], v, extents);
      const int64_t d = t.atom->constant;
      if (!operand || operand->coef != 0 || d <= 0) return std::nullopt;
      if (t.atom->kind == IndexExpr::Kind::Mod) {
        hi = d - 1;
      } else {
        lo = floorDiv(operand->lo, d);
        hi = floorDiv(operand->hi, d);
      }
    }
    out.lo += std::min(lo * t.coeff, hi * t.coeff);
    out.hi += std::max(lo * t.coeff, hi * t.coeff);
  }
  return out;
}

int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

// The values of v for which `c` holds whatever the other variables are: [lo, hi], empty when
// lo > hi; nothing when c does not depend on v or cannot be analysed.
std::optional<std::pair<int64_t, int64_t>> provedRange(const GuardCond& c, int v, const std::vector<int64_t>& extents) {
  std::optional<Affine> a = coefficientAndRange(c.index, v, extents);
  if (!a || a->coef == 0) return std::nullopt;
  // 0 <= coef * v + rest and coef * v + rest <= extent - 1 for every rest in [lo, hi].
  if (a->coef > 0) return std::pair{ceilDiv(-a->lo, a->coef), floorDiv(c.extent - 1 - a->hi, a->coef)};
  const int64_t b = -a->coef;
  return std::pair{ceilDiv(a->hi - (c.extent - 1), b), floorDiv(a->lo, b)};
}

// Drops the conditions that hold for every v in [lo, hi]; a guard left with none is replaced
// by its body.
void dropProved(Block& body, int v, int64_t lo, int64_t hi, const std::vector<int64_t>& extents) {
  rewrite(body, [&](Stmt& s) -> std::optional<Block> {
    Guard* g = s.getIf<Guard>();
    if (!g) return std::nullopt;
    std::erase_if(g->conds, [&](const GuardCond& c) {
      std::optional<std::pair<int64_t, int64_t>> r = provedRange(c, v, extents);
      return r && r->first <= lo && hi <= r->second;
    });
    if (!g->conds.empty()) return std::nullopt;
    return std::move(g->body);
  });
}

struct Splitter {
  Kernel& kernel;
  int splits = 0;

  explicit Splitter(Kernel& k) : kernel(k) {}

  // The extent of every loop in `body` (the largest, where a variable is bound twice).
  static void recordExtents(const Block& body, std::vector<int64_t>& out) {
    forEachStmt(body, [&](const Stmt& s) {
      if (auto* l = s.getIf<Loop>()) out[l->var] = std::max(out[l->var], l->extent);
    });
  }

  // The three loops that replace `loop`, or nothing when it stays as it is.
  Block split(const Loop& loop) {
    if (loop.parallel) return {};
    std::vector<const GuardCond*> conds;
    forEachStmt(loop.body, [&](const Stmt& s) {
      if (auto* g = s.getIf<Guard>())
        for (const GuardCond& c : g->conds) conds.push_back(&c);
    });
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
    Block parts;
    const std::string name = kernel.varNames[loop.var];  // a copy: addVar grows varNames
    auto part = [&](int var, int64_t extent) {
      Loop l = loop;
      l.var = var;
      l.extent = extent;
      return l;
    };
    if (lo > 0) parts.push_back(part(loop.var, lo));
    Loop interior = part(loop.var, hi - lo + 1);
    dropProved(interior.body, loop.var, lo, hi, inner);
    if (lo > 0) {
      interior.var = nest::addVar(kernel, name + ".in");
      substitute(interior.body, loop.var, affineIndex(1, interior.var, lo));
    }
    parts.push_back(std::move(interior));
    if (hi < loop.extent - 1) {
      Loop upper = part(nest::addVar(kernel, name + ".hi"), loop.extent - 1 - hi);
      substitute(upper.body, loop.var, affineIndex(1, upper.var, hi + 1));
      parts.push_back(std::move(upper));
    }
    ++splits;
    return parts;
  }

  // Splits the loops of `body` that lie outside every reduction: the loops of a reduction
  // (after its accumulator's init) are short (a 3x3 window), and splitting them would copy the
  // term for every combination of borders. Top-down, so that each of a loop's parts splits its
  // inner loops on its own (with variables of its own).
  void run(Block& body) {
    for (const Stmt& s : body)
      if (s.is<AccInit>()) return;
    Block out;
    for (Stmt& s : body) {
      if (auto* l = s.getIf<Loop>()) {
        Block parts = split(*l);
        if (!parts.empty()) {
          for (Stmt& p : parts) {
            run(p.as<Loop>().body);
            out.push_back(std::move(p));
          }
          continue;
        }
      }
      if (Block* nested = nestedBlock(s)) run(*nested);
      out.push_back(std::move(s));
    }
    body = std::move(out);
  }
};

}  // namespace

int splitBorders(LoopProgram& p) {
  int n = 0;
  for (Kernel& k : p.kernels) {
    if (anyStmt(k.body, [](const Stmt& s) { return s.is<Pack>() || s.is<Tile>(); }))
      continue;  // tiled: its padding is in the packs
    Splitter s(k);
    s.run(k.body);
    n += s.splits;
  }
  return n;
}

}  // namespace texc::loops
