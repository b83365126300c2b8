// Structural equality of the loop IR, the one rule every pass uses (docs/ir.md, "Equality").
//
// Two nodes are equal when they have the same kind and the same fields that kind uses. Number
// constants are equal when their bits are: a NaN equals a NaN with the same bits, and 0 and -0
// differ. That is the rule under which replacing one expression by an equal one never changes a
// result. Source ranges are not compared.
#pragma once

#include "compiler/loops/LoopIR.h"
#include "core/IndexAlgebra.h"

namespace texc::loops {

// Index expressions, and the renaming map: core/IndexAlgebra.h (the same rule, one layer down).
using texc::equal;
using texc::VarRenaming;

bool equal(const Expr& a, const Expr& b, const VarRenaming& renaming = {});
bool equal(const Stmt& a, const Stmt& b, const VarRenaming& renaming = {});
bool equal(const Block& a, const Block& b, const VarRenaming& renaming = {});

}  // namespace texc::loops
