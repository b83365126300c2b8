#include "frontend/Program.h"

#include <algorithm>
#include <array>

namespace texc {

namespace {

void collectIndexVars(const IndexExpr& e, std::vector<int>& out) {
  if (e.kind == IndexExpr::Kind::Var) out.push_back(e.var);
  for (const IndexExpr& o : e.ops) collectIndexVars(o, out);
}

void collectFreeVars(const Value& v, std::vector<int>& out) {
  if (v.kind == ValueKind::IndexValue && v.indices.empty()) out.push_back(v.var);
  for (const IndexExpr& ix : v.indices) collectIndexVars(ix, out);
  if (v.kind != ValueKind::Reduce) {
    for (const Value& a : v.args) collectFreeVars(a, out);
    return;
  }
  std::vector<int> inner;
  for (const Value& a : v.args) collectFreeVars(a, inner);
  for (int x : inner)
    if (std::find(v.reduceVars.begin(), v.reduceVars.end(), x) == v.reduceVars.end()) out.push_back(x);
}

}  // namespace

std::vector<int> freeVars(const Value& v) {
  std::vector<int> out;
  collectFreeVars(v, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int Program::findTensor(std::string_view name) const {
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace texc

namespace texc {

namespace {

int64_t saturate(__int128 v) {
  if (v > INT64_MAX) return INT64_MAX;
  if (v < INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// Collects the affine part of `e` (coefficient per variable, constant) scaled by `c`; floor
// division and modulo are kept whole as atoms. Not affineForm (IndexAlgebra.h): that merges
// equal atoms (x / 2 - x / 2 cancels, a narrower range) and stops at int64, where this range is
// exact in __int128 and saturates only at the end.
void linearize(const IndexExpr& e, __int128 c, std::vector<__int128>& coeff, std::vector<std::pair<const IndexExpr*, __int128>>& atoms,
               __int128& c0) {
  switch (e.kind) {
    case IndexExpr::Kind::Const: c0 += c * e.constant; return;
    case IndexExpr::Kind::Var: coeff[e.var] += c; return;
    case IndexExpr::Kind::Add:
      linearize(e.ops[0], c, coeff, atoms, c0);
      linearize(e.ops[1], c, coeff, atoms, c0);
      return;
    case IndexExpr::Kind::Sub:
      linearize(e.ops[0], c, coeff, atoms, c0);
      linearize(e.ops[1], -c, coeff, atoms, c0);
      return;
    case IndexExpr::Kind::Mul: linearize(e.ops[0], c * e.constant, coeff, atoms, c0); return;
    case IndexExpr::Kind::FloorDiv:
    case IndexExpr::Kind::Mod: atoms.push_back({&e, c}); return;
  }
}

}  // namespace

Interval rangeOfIndex(const IndexExpr& e, const std::vector<IndexVar>& vars) {
  std::vector<__int128> coeff(vars.size(), 0);
  std::vector<std::pair<const IndexExpr*, __int128>> atoms;
  __int128 c0 = 0;
  linearize(e, 1, coeff, atoms, c0);
  __int128 lo = c0, hi = c0;
  auto add = [&](__int128 c, __int128 a, __int128 b) {
    __int128 x = c * a, y = c * b;
    lo += std::min(x, y);
    hi += std::max(x, y);
  };
  for (size_t v = 0; v < vars.size(); ++v)
    if (coeff[v] != 0) add(coeff[v], 0, vars[v].extent - 1);
  for (auto& [atom, c] : atoms) {
    Interval in = rangeOfIndex(atom->ops[0], vars);
    int64_t k = atom->constant;
    if (atom->kind == IndexExpr::Kind::FloorDiv) add(c, floorDiv(in.lo, k), floorDiv(in.hi, k));
    else if (floorDiv(in.lo, k) == floorDiv(in.hi, k)) add(c, floorMod(in.lo, k), floorMod(in.hi, k));
    else add(c, 0, k - 1);
  }
  return {saturate(lo), saturate(hi)};
}

}  // namespace texc
