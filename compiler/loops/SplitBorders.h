// Border splitting: a loop whose body guards its terms with padding conditions runs them only on
// its border iterations.
//
//   for x < 56                                 for x < 1            (the guard, as before)
//     for s < 3                                for x.in < 54        (x = x.in + 1: no guard)
//       if 0 <= x + s - 1 < 56                   for s < 3
//         acc += I[.., x + s - 1] * ...    ->      acc += I[.., (x.in + 1) + s - 1] * ...
//                                              for x.hi < 1         (x = x.hi + 55: the guard)
//
// A condition `0 <= index < extent` whose index is a * x + rest, rest affine in the variables of
// loops inside the loop over x (each ranging over [0, its extent)), holds for every value of
// rest when x is in an interval [lo, hi] that interval arithmetic gives. The loop over x becomes three: below
// lo and above hi the body is unchanged; in between, every condition proved there is dropped,
// and a guard left without conditions is replaced by its body. Nested loops split in turn (the
// rows of an image, then its columns in each of the three row loops), down to the first
// accumulator: the loops of a reduction are not split. Loops are not split when
// they are parallel (the runtime shares them out), when no condition depends on them, or when
// the interior is empty; nor are tiled nests (they keep padding in their packs).
#pragma once

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// Splits the loops of every kernel of `p` as above. Returns how many loops were split.
int splitBorders(LoopProgram& p);

}  // namespace texc::loops
