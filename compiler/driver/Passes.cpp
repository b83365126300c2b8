// texc passes: the pipeline of a target in order, one line per pass.
#include <fmt/format.h>

#include <iostream>

#include "compiler/driver/Commands.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/target/CpuTarget.h"

namespace texc {

int commandPasses(const std::string& cpu, const std::string& target) {
  const CpuTarget* machine = nullptr;
  try {
    machine = &cpuTarget(cpu);
  } catch (const std::invalid_argument& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  // The target first, as a comment line: for the CPU, the one the tile and LLVM passes generate
  // code for; the CUDA pipeline ends in codegen-cuda instead of the two LLVM passes.
  const bool cuda = target == "cuda";
  if (cuda) std::cout << "# target cuda: CUDA C through NVRTC (docs/cuda.md)\n";
  else std::cout << "# cpu " << machine->describe() << "\n";
  int i = 0;
  for (const PassInfo* p : buildPipeline(Stage::LLVM, cuda ? Target::Cuda : Target::Cpu))
    std::cout << fmt::format("{:2}. {:<16} {}\n", ++i, p->name, p->summary);
  return kExitOk;
}

}  // namespace texc
