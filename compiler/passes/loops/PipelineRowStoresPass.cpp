// pipeline-row-stores: a row kernel's streamed stores of row i run inside row i + 1's last pass
// (loops/PipelineRowStores.h). CPU target only.
#include "compiler/loops/PipelineRowStores.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runPipelineRowStores(CompileState& s) { return loops::pipelineRowStores(*s.loops) > 0; }

}  // namespace texc
