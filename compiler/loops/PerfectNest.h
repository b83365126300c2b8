// Perfect loop nests: a loop whose body is exactly one loop, and so on down.
#pragma once

#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// The perfect nest starting at `s`: s itself (when it is a Loop), then the loop that is the only
// statement of its body, and so on, outermost first; empty when `s` is not a loop. At most
// `maxDepth` loops (0: no limit).
std::vector<Loop*> perfectNest(Stmt& s, size_t maxDepth = 0);
std::vector<const Loop*> perfectNest(const Stmt& s, size_t maxDepth = 0);

// The body of the innermost loop of a perfect nest (the nest must not be empty).
inline Block& innermostBody(const std::vector<Loop*>& nest) { return nest.back()->body; }
inline const Block& innermostBody(const std::vector<const Loop*>& nest) { return nest.back()->body; }

}  // namespace texc::loops
