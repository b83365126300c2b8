// LowerToLoops: analysed Program -> loop IR, one kernel per computation.
//
// Each computation becomes a loop nest over its left-hand variables (outermost parallel,
// innermost marked for vectorization) storing its body; each reduction becomes an accumulator,
// a loop nest over its variables, and, where the bounds analysis could not prove an access in
// bounds, a Guard that skips the term. Needs: a Program from semantic analysis.
#pragma once

#include "compiler/loops/LoopIR.h"
#include "frontend/Program.h"

namespace texc::loops {

LoopProgram lowerToLoops(const Program& program);

}  // namespace texc::loops
