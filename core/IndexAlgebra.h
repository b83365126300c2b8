// Index expressions as algebra: structural equality and the affine form. The one implementation
// the front end, the graph passes, the loop passes and the backends share (docs/ir.md).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "core/IndexExpr.h"

namespace texc {

// Variables of the left side read as other variables of the right side: a's variable v stands
// for b's variable renaming.at(v); variables not in the map stand for themselves.
using VarRenaming = std::map<int, int>;

// Whether `a` and `b` are the same expression, node by node (source ranges not compared).
bool equal(const IndexExpr& a, const IndexExpr& b, const VarRenaming& renaming = {});
bool equal(const std::vector<IndexExpr>& a, const std::vector<IndexExpr>& b, const VarRenaming& renaming = {});

// One term of an affine form: coeff * (variable `var`, or, when var < 0, the floor division or
// modulo `atom` points into, which does not reduce further).
struct AffineTerm {
  int var = -1;
  const IndexExpr* atom = nullptr;
  int64_t coeff = 0;
};

// An index expression as sum(terms) + constant. Like terms are merged (variables by id, atoms
// by equal()), and no term has coefficient 0; terms keep the order of first appearance.
struct AffineForm {
  std::vector<AffineTerm> terms;
  int64_t constant = 0;
  bool overflow = false;  // some coefficient or the constant does not fit in int64

  // The coefficient of variable `var` outside atoms (0 when absent).
  int64_t coeffOf(int var) const;
  // Whether every term is a variable (no floor division or modulo is left).
  bool isAffine() const;
  // Whether `var` appears inside an atom.
  bool varInAtom(int var) const;
};

// The affine form of `e`. It always exists: what is not affine becomes an atom.
AffineForm affineForm(const IndexExpr& e);

// The affine form of `e` after rewriting, in place, every pair of terms that floor division
// makes exactly one simpler term (for every integer x and a, b > 0):
//   a c (x / a) + c (x % a)           ->  c x
//   a c ((x / a) % b) + c (x % a)     ->  c (x % (a b))
// so that an offset such as W[k, crs / 9, (crs / 3) % 3, crs % 3] over [K, C, 3, 3] becomes
// 576 k + crs. Each rewrite adds the merged term and subtracts the pair, so the terms keep the
// order of first appearance; the form's atoms point into `e`.
AffineForm mergedAffineForm(IndexExpr& e);

// Whether `e` reads variable `var`.
bool usesVar(const IndexExpr& e, int var);

}  // namespace texc
