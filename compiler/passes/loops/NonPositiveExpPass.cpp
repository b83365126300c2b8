// nonpositive-exp: exp calls whose argument cannot be positive (softmax's x - max(x)) are marked
// (loops/NonPositiveExp.h), so that the CPU code generator emits exp's cheaper form for that
// range. CPU target only.
#include "compiler/loops/NonPositiveExp.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runNonPositiveExp(CompileState& s) { return loops::markNonPositiveExps(*s.loops) > 0; }

}  // namespace texc
