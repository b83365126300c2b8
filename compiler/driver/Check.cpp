// texc check: parse and analyse; diagnostics only.
#include "compiler/driver/Commands.h"
#include "compiler/driver/Frontend.h"

namespace texc {

int commandCheck(const CommonOptions& o) {
  FrontendResult r = runFrontend(o.file, parseDefines(o.defines));
  return r.diags->hasErrors() ? kExitProgramError : kExitOk;
}

}  // namespace texc
