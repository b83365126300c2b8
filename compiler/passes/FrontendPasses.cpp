// The front end as the first two passes, so --print-after=parse,sema and --time-passes cover it.
#include "compiler/passes/Pass.h"
#include "frontend/Parser.h"

namespace texc {

bool runParse(CompileState& s) {
  s.module = parse(*s.file, *s.diags);
  return true;
}

bool runSema(CompileState& s) {
  s.graph = analyze(s.module, *s.diags, s.overrides);
  s.analysed = s.graph;
  return true;
}

}  // namespace texc
