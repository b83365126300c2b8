// fuse-into-tiles: a kernel that reads only what one block of a tiled contraction wrote runs
// inside that block (FuseIntoTiles.h). The graph's fusion decision for the pair is updated to
// say so, for `texc explain`. The pipeline runs it on the cpu target with --fuse=all (Pipeline.cpp).
#include <fmt/format.h>

#include "compiler/loops/FuseIntoTiles.h"
#include "compiler/passes/Pass.h"

namespace texc {

bool runFuseIntoTiles(CompileState& s) {
  std::vector<loops::TileFusion> fused = loops::fuseIntoTiles(*s.loops);
  for (const loops::TileFusion& f : fused) {
    std::string reason = fmt::format("fused after tiling (fuse-into-tiles): {} runs inside the tiled nest of {}, one block at a time ({}); one loop kernel, where the tables above count two",
                                     f.consumer, f.producer, f.binding);
    s.recordLoopFusion(f.producer, f.consumer, reason);
  }
  return !fused.empty();
}

}  // namespace texc
