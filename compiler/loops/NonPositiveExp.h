// NonPositiveExp: exp calls whose argument cannot be positive, softmax's exp(x - max(x)).
//
// exp's general f32 form guards against overflow (a clamp at 89) and applies 2^n in two products
// so that both ends of its range, +inf and the subnormals, come out right. Where the argument is
// at most 0, nothing overflows and 2^n fits one exact product followed by one rounding scale
// (backend/llvm/VectorMath.h, emitExpNonPositive): the same bits, four vector operations fewer
// in a loop of about two dozen, which is what a softmax row pass spends most of its time on.
//
// An exp is marked when its argument is `A - acc` and:
//   * acc was last set, in the same block of statements, by a loop whose body is only
//     `acc = max(acc, T)`, so acc >= T for every iteration of that loop (NaN aside, which
//     propagates through exp either way);
//   * the exp sits directly in the body of a later loop of that block, over the same extent, and
//     A is T with the max loop's variable renamed to this loop's: A is one of the values acc is
//     the maximum of, and A - acc <= 0 after rounding too;
//   * nothing between them, or in the exp's loop, sets acc again.
// Printed `exp[<=0](...)` (--emit loops); the verifier checks the rule again.
#pragma once

#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// The exp calls of `p` that satisfy the rule above, marked or not.
std::vector<const Expr*> nonPositiveExps(const LoopProgram& p);

// Marks every exp call of `p` that satisfies the rule above. Returns the number marked.
int markNonPositiveExps(LoopProgram& p);

}  // namespace texc::loops
