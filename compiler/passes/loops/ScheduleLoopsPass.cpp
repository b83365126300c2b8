// schedule-loops: applies the `loops BUFFER: ...` lines of the user's schedule file to the kernel
// that writes BUFFER, step by step (compiler/loops/transforms/LoopTransforms.h). A step that
// cannot be applied (unknown kernel or loop, an illegal reorder) stops the pipeline with a usage
// error naming the schedule line.
#include <fmt/format.h>

#include "compiler/loops/transforms/LoopTransforms.h"
#include "compiler/passes/Pass.h"

namespace texc {

namespace {

std::string applyStep(const loops::LoopProgram& p, loops::Kernel& k, const loops::LoopStep& step) {
  using loops::LoopStepKind;
  switch (step.kind) {
    case LoopStepKind::Split: return loops::splitLoop(k, step.vars[0], step.factor);
    case LoopStepKind::Reorder: return loops::reorderLoops(k, step.vars);
    case LoopStepKind::Unroll: return loops::unrollLoop(k, step.vars[0], step.factor);
    case LoopStepKind::Parallel: return loops::parallelizeLoop(k, step.vars.empty() ? "" : step.vars[0]);
    case LoopStepKind::Vectorize: return loops::vectorizeLoop(k, step.vars[0], step.on);
    case LoopStepKind::RegisterBlock: return loops::registerBlock(p, k, step.vars[0], step.vars[1], step.rows, step.factor);
    case LoopStepKind::Pack:
      return loops::packOperand(k, step.operand == 'A' ? loops::PackedOperand::A : loops::PackedOperand::B,
                                step.vars.empty() ? "" : step.vars[0]);
  }
  return "unknown step";
}

std::string writers(const loops::LoopProgram& p) {
  std::string out;
  for (const loops::Kernel& k : p.kernels)
    if (k.outputBuffer >= 0) out += (out.empty() ? "" : ", ") + p.buffers[k.outputBuffer].name;
  return out.empty() ? "none" : out;
}

}  // namespace

bool runScheduleLoops(CompileState& s) {
  // The pipeline runs it when the schedule file has `loops` lines (Pipeline.cpp), on either target:
  // the CUDA backend maps the lowered nests to its grid by their shape; it is not taught to
  // read transformed ones.
  const std::vector<loops::LoopScheduleLine>& lines = s.options.schedule.loops;
  if (lines.empty()) return false;  // nothing to apply: changed nothing
  if (s.options.target == Target::Cuda) {
    s.usageError = fmt::format("line {}: loop transformations apply to the cpu target only", lines.front().line);
    return false;
  }
  loops::LoopProgram& p = *s.loops;
  for (const loops::LoopScheduleLine& line : lines) {
    loops::Kernel* kernel = nullptr;
    for (loops::Kernel& k : p.kernels)
      if (k.outputBuffer >= 0 && p.buffers[k.outputBuffer].name == line.buffer) kernel = &k;
    if (!kernel) {
      s.usageError = fmt::format("line {}: loops {}: no kernel writes '{}' (kernels write: {})", line.line, line.buffer,
                                 line.buffer, writers(p));
      return false;
    }
    for (const loops::LoopStep& step : line.steps) {
      if (std::string err = applyStep(p, *kernel, step); !err.empty()) {
        s.usageError = fmt::format("line {}: loops {}: {}: {}", line.line, line.buffer, step.text, err);
        return false;
      }
    }
  }
  return true;
}

}  // namespace texc
