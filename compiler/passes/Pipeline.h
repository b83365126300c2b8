// The pass pipeline, in order (Pipeline.cpp says why each pass sits where it does).
#pragma once

#include <vector>

#include "compiler/passes/Pass.h"

namespace texc {

// How far to run: the pipeline stops after the last pass of this stage. The CPU target ends in
// the LLVM passes, the CUDA target in codegen-cuda (Stage::LLVM or later runs it).
std::vector<const PassInfo*> buildPipeline(Stage until, Target target = Target::Cpu);

}  // namespace texc
