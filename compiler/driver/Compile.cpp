// texc compile: run the pipeline up to the requested form and emit it.
#include <fmt/format.h>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <iostream>

#include "compiler/backend/cuda/CodeGenCUDA.h"
#include "compiler/backend/cuda/CudaDriver.h"
#include "compiler/backend/cuda/Nvrtc.h"
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

// PTX for `arch`, or for the GPU's architecture, or sm_90 when there is no GPU.
std::string emitPtx(const std::string& source, std::string arch, bool timePasses) {
  if (arch.empty()) {
    try {
      arch = CudaDevice::open()->arch();
    } catch (const CudaUnavailable&) {
      arch = "sm_90";
    }
  }
  PtxOptions opts;
  opts.arch = arch;
  try {
    PtxResult r = compileToPtx(source, "texc_program.cu", opts);
    if (timePasses)
      std::cerr << fmt::format("  {:<18} {:9.3f} ms  (NVRTC {}, {}{})\n", "nvrtc", r.compileMs, r.nvrtcVersion, arch,
                               r.fromCache ? ", from the PTX cache" : "");
    return r.ptx;
  } catch (const NvrtcUnavailable& e) {
    throw CommandError{kExitRuntime, e.what()};
  } catch (const CudaCompileError& e) {
    // The generated source is texc's: a compile error is an internal error, with its lines shown.
    throw CommandError{kExitRuntime, std::string("internal error: ") + e.what()};
  }
}

}  // namespace

int commandCompile(const CompileOptions& options) {
  CompileOptions o = options;
  // --emit cuda|ptx select the CUDA target; the LLVM forms exist only for the CPU.
  if (o.emit == "cuda" || o.emit == "ptx") o.target = "cuda";
  if (o.target != "cpu" && o.target != "cuda") throw CommandError{kExitUsage, fmt::format("--target {}: expected cpu or cuda", o.target)};
  if (o.emit.empty()) o.emit = o.target == "cuda" ? "cuda" : "llvm";
  bool cuda = o.target == "cuda";
  if (cuda && (o.emit == "llvm" || o.emit == "asm" || o.emit == "obj"))
    throw CommandError{kExitUsage, fmt::format("--emit {} is a CPU form; with --target cuda use --emit cuda or ptx", o.emit)};
  if (!o.arch.empty() && o.emit != "ptx") throw CommandError{kExitUsage, "--arch applies to --emit ptx only"};
  if (!o.arch.empty() && parseArch(o.arch) < 0)
    throw CommandError{kExitUsage, fmt::format("--arch '{}': expected sm_XX with XX >= 50, e.g. sm_90", o.arch)};
  Stage until = cuda && (o.emit == "cuda" || o.emit == "ptx") ? Stage::CUDA : stageFor(o.emit);
  CompileRequest request = o.program.request(until);
  if (cuda) request.options.target = Target::Cuda;
  std::unique_ptr<Compilation> c = compileProgram(request);
  if (!c->ok) return kExitProgramError;
  std::string bytes;
  if (o.emit == "ptx") {
    bytes = emitPtx(c->state.cuda->source, o.arch, o.program.timePasses);
  } else if (o.emit == "asm" || o.emit == "obj") {
    auto tm = createTargetMachine(cpuTarget(o.program.pipeline.cpu), o.program.pipeline.optLevel);
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
