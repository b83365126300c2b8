// texc passes: the pipeline in order, one line per pass.
#include <fmt/format.h>

#include <iostream>

#include "compiler/driver/Commands.h"
#include "compiler/passes/Pipeline.h"
#include "compiler/target/CpuTarget.h"

namespace texc {

int commandPasses(const std::string& cpu) {
  const CpuTarget* target = nullptr;
  try {
    target = &cpuTarget(cpu);
  } catch (const std::invalid_argument& e) {
    throw CommandError{kExitUsage, e.what()};
  }
  // The CPU first, as a comment line: the tile and LLVM passes generate code for it.
  std::cout << "# cpu " << target->describe() << "\n";
  int i = 0;
  for (const PassInfo* p : buildPipeline(Stage::LLVM)) std::cout << fmt::format("{:2}. {:<16} {}\n", ++i, p->name, p->summary);
  return kExitOk;
}

}  // namespace texc
