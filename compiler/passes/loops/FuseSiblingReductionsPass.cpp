// fuse-sibling-reductions: independent reduction loops over the same range, next to each other,
// become one loop (loops/FuseSiblingReductions.h). CPU target only.
#include "compiler/loops/FuseSiblingReductions.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runFuseSiblingReductions(CompileState& s) { return loops::fuseSiblingReductions(*s.loops) > 0; }

}  // namespace texc
