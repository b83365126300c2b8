// Substitution of loop variables, over every field that holds an index expression or a value
// (Walk.h's forEachIndexOf), Tile and Pack bases included.
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Replaces every use of variable `var` in `ix` by `by`.
void substitute(IndexExpr& ix, int var, const IndexExpr& by);

// Replaces every use of `var` in `e`: in load indices, and as a value (a bare VarValue becomes
// the value of the index expression `by`, Expr::index[0]).
void substitute(Expr& e, int var, const IndexExpr& by);

// Replaces every free use of `var` under `block`: statements that bind `var` again (a loop over
// it, a tile or pack whose row, column or k variable it is) keep their own, but their bases are
// still rewritten, since those are evaluated outside the binding.
void substitute(Block& block, int var, const IndexExpr& by);
void substitute(Stmt& s, int var, const IndexExpr& by);

// Whether `e` uses `var` (in an index, or as a value).
bool usesVar(const Expr& e, int var);

// Whether some statement under `block` uses `var` freely (as substitute would rewrite it).
bool usesVar(const Block& block, int var);

// Renames accumulator `from` to `to` in `e` (its AccReads).
void renameAcc(Expr& e, int from, int to);

// c * v + u as an index expression (a bare v when c == 1 and u == 0).
IndexExpr affineIndex(int64_t c, int v, int64_t u);

}  // namespace texc::loops
