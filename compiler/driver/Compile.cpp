// texc compile: run the pipeline up to the requested form and emit it.
#include <fmt/format.h>

#include "compiler/driver/Commands.h"
#include "compiler/driver/Frontend.h"
#include "compiler/driver/OutputFile.h"
#include "compiler/loops/LowerToLoops.h"

namespace texc {

int commandCompile(const CompileOptions& o) {
  if (o.target != "cpu")
    throw CommandError{kExitUsage, fmt::format("--target {}: only the cpu target is available in this build", o.target)};
  bool analyse = o.emit != "ast";
  FrontendResult r = runFrontend(o.common.file, parseDefines(o.common.defines), analyse);
  if (r.diags->hasErrors()) return kExitProgramError;
  if (o.emit == "ast") {
    emitOutput(o.output, printModule(r.module));
    return kExitOk;
  }
  if (o.emit == "sema") {
    emitOutput(o.output, printProgram(*r.program));
    return kExitOk;
  }
  loops::LoopProgram lp = loops::lowerToLoops(*r.program);
  if (o.emit == "loops") {
    emitOutput(o.output, printLoopProgram(lp));
    return kExitOk;
  }
  throw CommandError{kExitUsage, fmt::format("--emit {} is not available in this build", o.emit)};
}

}  // namespace texc
