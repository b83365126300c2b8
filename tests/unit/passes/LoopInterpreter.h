// A float64 interpreter of the loop IR, for tests: runs the kernels of a LoopProgram statement by
// statement, the way the backends are meant to, so that lower-to-loops can be checked against
// the reference interpreter of the graph it lowered. Values are doubles whatever the dtypes
// (like the reference: no storage rounding); max/min/relu behave as in the reference.
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"
#include "compiler/loops/MemoryPlan.h"

namespace texc::passtest {

// Runs `p` with `buffers` (one per p.buffers entry, row-major, inputs filled; the others are
// resized and written). Returns an empty string, or what went wrong (a load or store outside
// its buffer, an accumulator read before it was set).
std::string interpretLoops(const loops::LoopProgram& p, std::vector<std::vector<double>>& buffers);

// The same, with the temps `plan` places living in one arena, as the runtime binds them: an
// element of dtype size S occupies the S byte slots from offset + index * S, a store writes its
// value into all of them, and a load whose slots disagree (part of the element was overwritten
// by another temp sharing those bytes) fails. Planned temps are not copied to `buffers`.
std::string interpretLoops(const loops::LoopProgram& p, std::vector<std::vector<double>>& buffers, const loops::MemoryPlan& plan);

}  // namespace texc::passtest
