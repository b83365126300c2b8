// The pass pipeline, in order (Pipeline.cpp says why each pass sits where it does).
#pragma once

#include <vector>

#include "compiler/passes/Pass.h"

namespace texc {

// How far to run: the pipeline stops after the last pass of this stage.
std::vector<const PassInfo*> buildPipeline(Stage until);

}  // namespace texc
