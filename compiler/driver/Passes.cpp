// texc passes: the pipeline that the target and the switches choose, in order, one line per pass
// with what it does and the condition under which it is in the pipeline; then, as comments, the
// passes this pipeline leaves out and why.
#include <fmt/format.h>

#include <iostream>

#include "compiler/driver/Commands.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/target/CpuTarget.h"

namespace texc {

int commandPasses(const ProgramOptions& o, const std::string& target) {
  // The switches as `run` and `compile` read them (a schedule file is parsed, --cpu resolved:
  // their errors are usage errors here too); no program is read.
  CompileRequest request = o.request(Stage::LLVM);
  if (std::string err = checkDisabledPasses(request.options.disabledPasses); !err.empty()) throw CommandError{kExitUsage, err};
  const bool cuda = target == "cuda";
  if (cuda) request.options.target = Target::Cuda;
  const CpuTarget& machine = cpuTarget(request.options.cpu);
  // The target first, as a comment line: for the CPU, the one the tile and LLVM passes generate
  // code for; the CUDA pipeline ends in codegen-cuda instead of the two LLVM passes.
  if (cuda) std::cout << "# target cuda: CUDA C through NVRTC (docs/cuda.md)\n";
  else std::cout << "# cpu " << machine.describe() << "\n";
  int i = 0;
  std::vector<PipelineEntry> table = pipelineTable(request.options);
  for (const PipelineEntry& e : table)
    std::cout << fmt::format("{:2}. {:<16} {}  [runs: {}]\n", ++i, e.pass->name, e.pass->summary, e.condition);
  // Then every pass this pipeline leaves out, with the switch that does and why.
  for (const PassInfo& p : allPasses())
    if (std::string why = whyNotInPipeline(p.name, request.options); !why.empty())
      std::cout << fmt::format("# not in this pipeline: {} ({})\n", p.name, why);
  return kExitOk;
}

}  // namespace texc
