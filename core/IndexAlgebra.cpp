#include "core/IndexAlgebra.h"

#include <cstddef>
#include <limits>
#include <utility>

namespace texc {

namespace {

int renamed(int v, const VarRenaming& r) {
  auto it = r.find(v);
  return it == r.end() ? v : it->second;
}

struct Builder {
  struct Term {
    int var;
    const IndexExpr* atom;
    __int128 coeff;
  };
  std::vector<Term> terms;
  __int128 constant = 0;
  bool overflow = false;

  static bool fits(__int128 v) {
    return v >= std::numeric_limits<int64_t>::min() && v <= std::numeric_limits<int64_t>::max();
  }
  void add(int var, const IndexExpr* atom, __int128 c) {
    for (Term& t : terms)
      if ((atom == nullptr && t.atom == nullptr && t.var == var) || (atom && t.atom && equal(*atom, *t.atom))) {
        t.coeff += c;
        overflow = overflow || !fits(t.coeff);
        return;
      }
    terms.push_back({var, atom, c});
  }
  void walk(const IndexExpr& e, __int128 c) {
    // Coefficients stay far inside __int128 as long as each step fits int64 (checked below).
    if (!fits(c)) overflow = true;
    switch (e.kind) {
      case IndexExpr::Kind::Const:
        constant += c * e.constant;
        overflow = overflow || !fits(constant);
        return;
      case IndexExpr::Kind::Var: add(e.var, nullptr, c); return;
      case IndexExpr::Kind::Add:
        for (const IndexExpr& o : e.ops) walk(o, c);
        return;
      case IndexExpr::Kind::Sub:
        walk(e.ops[0], c);
        for (size_t i = 1; i < e.ops.size(); ++i) walk(e.ops[i], -c);
        return;
      case IndexExpr::Kind::Mul: walk(e.ops[0], c * e.constant); return;
      case IndexExpr::Kind::FloorDiv:
      case IndexExpr::Kind::Mod: add(-1, &e, c); return;
    }
  }
};

}  // namespace

bool equal(const IndexExpr& a, const IndexExpr& b, const VarRenaming& r) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case IndexExpr::Kind::Const: return a.constant == b.constant;
    case IndexExpr::Kind::Var: return renamed(a.var, r) == b.var;
    default: break;
  }
  if (a.constant != b.constant || a.ops.size() != b.ops.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i)
    if (!equal(a.ops[i], b.ops[i], r)) return false;
  return true;
}

bool equal(const std::vector<IndexExpr>& a, const std::vector<IndexExpr>& b, const VarRenaming& r) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!equal(a[i], b[i], r)) return false;
  return true;
}

int64_t AffineForm::coeffOf(int var) const {
  for (const AffineTerm& t : terms)
    if (!t.atom && t.var == var) return t.coeff;
  return 0;
}

bool AffineForm::isAffine() const {
  for (const AffineTerm& t : terms)
    if (t.atom) return false;
  return true;
}

bool AffineForm::varInAtom(int var) const {
  for (const AffineTerm& t : terms)
    if (t.atom && usesVar(*t.atom, var)) return true;
  return false;
}

AffineForm affineForm(const IndexExpr& e) {
  Builder b;
  b.walk(e, 1);
  AffineForm out;
  out.overflow = b.overflow;
  out.constant = static_cast<int64_t>(b.constant);
  for (const Builder::Term& t : b.terms) {
    if (t.coeff == 0) continue;
    out.overflow = out.overflow || !Builder::fits(t.coeff);
    out.terms.push_back({t.var, t.atom, static_cast<int64_t>(t.coeff)});
  }
  return out;
}

namespace {

IndexExpr node(IndexExpr::Kind kind, int64_t constant, std::vector<IndexExpr> ops) {
  return IndexExpr::makeNode(kind, constant, std::move(ops));
}

bool isAtom(const AffineTerm& t, IndexExpr::Kind kind) { return t.atom && t.atom->kind == kind && t.atom->constant > 0; }

// A pair of terms `first` and `second` that mergedAffineForm rewrites as `merged` (one of
// its two rules), if there is one.
struct MergeablePair {
  const AffineTerm* first = nullptr;
  const AffineTerm* second = nullptr;
  IndexExpr merged;
};

MergeablePair findMergeablePair(const AffineForm& form) {
  for (const AffineTerm& rem : form.terms) {  // c (x % a)
    if (!isAtom(rem, IndexExpr::Kind::Mod)) continue;
    const IndexExpr& x = rem.atom->ops[0];
    const int64_t a = rem.atom->constant;
    if (rem.coeff > std::numeric_limits<int64_t>::max() / a || rem.coeff < std::numeric_limits<int64_t>::min() / a) continue;
    for (const AffineTerm& t : form.terms) {
      if (&t == &rem || t.coeff != rem.coeff * a) continue;
      if (isAtom(t, IndexExpr::Kind::FloorDiv) && t.atom->constant == a && equal(t.atom->ops[0], x))  // a c (x / a)
        return {&t, &rem, node(IndexExpr::Kind::Mul, rem.coeff, {x})};
      if (isAtom(t, IndexExpr::Kind::Mod)) {  // a c ((x / a) % b)
        const IndexExpr& q = t.atom->ops[0];
        const int64_t b = t.atom->constant;
        if (q.kind == IndexExpr::Kind::FloorDiv && q.constant == a && equal(q.ops[0], x) && b <= std::numeric_limits<int64_t>::max() / a)
          return {&t, &rem, node(IndexExpr::Kind::Mul, rem.coeff, {node(IndexExpr::Kind::Mod, a * b, {x})})};
      }
    }
  }
  return {};
}

}  // namespace

AffineForm mergedAffineForm(IndexExpr& e) {
  for (;;) {
    AffineForm form = affineForm(e);
    MergeablePair pair = findMergeablePair(form);
    if (!pair.first) return form;
    IndexExpr lost = node(IndexExpr::Kind::Add, 0,
                          {node(IndexExpr::Kind::Mul, pair.first->coeff, {*pair.first->atom}),
                           node(IndexExpr::Kind::Mul, pair.second->coeff, {*pair.second->atom})});
    e = node(IndexExpr::Kind::Sub, 0, {node(IndexExpr::Kind::Add, 0, {std::move(e), std::move(pair.merged)}), std::move(lost)});
  }
}

bool usesVar(const IndexExpr& e, int var) {
  if (e.kind == IndexExpr::Kind::Var) return e.var == var;
  for (const IndexExpr& o : e.ops)
    if (usesVar(o, var)) return true;
  return false;
}

}  // namespace texc
