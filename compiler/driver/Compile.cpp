// texc compile: run the pipeline up to the requested form and emit it.
#include <fmt/format.h>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/OutputFile.h"

namespace texc {

namespace {

Stage stageFor(const std::string& emit) {
  if (emit == "ast") return Stage::Ast;
  if (emit == "sema") return Stage::Sema;
  if (emit == "ir" || emit == "dot") return Stage::Graph;
  if (emit == "loops") return Stage::Loops;
  if (emit == "plan") return Stage::Plan;
  return Stage::LLVM;
}

}  // namespace

int commandCompile(const CompileOptions& o) {
  if (o.target != "cpu")
    throw CommandError{kExitUsage, fmt::format("--target {}: only the cpu target is available in this build", o.target)};
  Stage until = stageFor(o.emit);
  std::unique_ptr<Compilation> c = compileProgram(o.program.request(until));
  if (!c->ok) return kExitProgramError;
  std::string bytes;
  if (o.emit == "asm" || o.emit == "obj") {
    auto tm = createHostTargetMachine(o.program.pipeline.optLevel);
    bytes = o.emit == "asm" ? emitAssembly(*c->state.llvmModule, *tm) : emitObject(*c->state.llvmModule, *tm);
  } else if (o.emit == "dot") {
    bytes = printGraphDot(*c->state.graph);
  } else {
    bytes = printStage(c->state, until);
  }
  emitOutput(o.output, bytes);
  return kExitOk;
}

}  // namespace texc
