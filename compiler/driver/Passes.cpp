// texc passes: the pipeline in order, one line per pass.
#include <fmt/format.h>

#include <iostream>

#include "compiler/driver/Commands.h"
#include "compiler/passes/Pipeline.h"

namespace texc {

int commandPasses() {
  int i = 0;
  for (const PassInfo* p : buildPipeline(Stage::LLVM)) std::cout << fmt::format("{:2}. {:<16} {}\n", ++i, p->name, p->summary);
  return kExitOk;
}

}  // namespace texc
