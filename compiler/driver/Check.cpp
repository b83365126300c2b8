// texc check: parse and analyse; diagnostics only.
#include "compiler/driver/Commands.h"

#include <fmt/format.h>

#include <stdexcept>

#include "compiler/target/CpuTarget.h"

namespace texc {

CompileRequest ProgramOptions::request(Stage until) const {
  CompileRequest r;
  r.path = file;
  r.sourceText = sourceText;
  r.defines = defines;
  r.options = pipeline;
  if (fuse == "none") r.options.fuse = FuseMode::None;
  else if (fuse == "elementwise") r.options.fuse = FuseMode::Elementwise;
  else r.options.fuse = FuseMode::All;
  r.options.math = parseMathMode(math).value_or(MathMode::Precise);
  r.options.planMemory = !noPlan;
  r.options.tile = !noTile;
  r.options.disabledPasses.insert(disablePasses.begin(), disablePasses.end());
  if (!schedulePath.empty()) {
    std::unique_ptr<SourceFile> f = readSourceFile(schedulePath);
    if (std::string err = loops::parseScheduleText(f->text(), r.options.schedule); !err.empty())
      throw CommandError{kExitUsage, fmt::format("schedule file '{}': {}", schedulePath, err)};
    r.options.schedulePath = schedulePath;
  }
  if (!conv.empty()) {
    loops::ConvMode mode;
    if (!loops::parseConvMode(conv, mode))
      throw CommandError{kExitUsage, fmt::format("--conv {}: expected implicit, im2col or direct", conv)};
    r.options.schedule.conv = mode;  // over a schedule file's conv line
  }
  // An unknown --cpu is a usage error before anything is read (cpuTarget resolves it once).
  try {
    (void)cpuTarget(pipeline.cpu);
  } catch (const std::invalid_argument& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  r.instrumentation = instrumentation;
  r.instrumentation.printAfter.insert(printAfter.begin(), printAfter.end());
  r.instrumentation.printBefore.insert(printBefore.begin(), printBefore.end());
  r.timePasses = timePasses;
  r.until = until;
  return r;
}

void requireHostRuns(const std::string& cpu) {
  const CpuTarget& target = cpuTarget(cpu);
  std::vector<std::string> missing = missingHostFeatures(target);
  if (missing.empty()) return;
  std::string list;
  for (const std::string& f : missing) list += (list.empty() ? "" : ", ") + f;
  throw CommandError{kExitUsage,
                     fmt::format("--cpu {}: this host ({}) lacks {} of its features: {}; code for it can be emitted "
                                 "(texc compile --emit llvm|asm|obj|loops) but not run here",
                                 target.name, cpuTarget("host").name, missing.size(), list)};
}

int commandCheck(const ProgramOptions& o) {
  std::unique_ptr<Compilation> c = compileProgram(o.request(Stage::Sema));
  return c->ok ? kExitOk : kExitProgramError;
}

}  // namespace texc
