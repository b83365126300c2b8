// fuse-into-tiles: a kernel that reads a tiled contraction's result runs inside the contraction's
// nest, one block at a time, while the block is still in cache.
//
// The fuse pass cannot do this on the graph: a reduction (a max pool) that reads a contraction's
// result reads neighbouring elements, so fusing it there would recompute the contraction for
// every window. After tiling, though, the contraction's nest produces its result in blocks (the
// implicit GEMM's pixel blocks of whole image rows), and a pool whose windows lie inside one
// block can run right after the block is finished:
//
//   for yx_c < 28 parallel                  kernel k0_sb_pool
//     for n < 1
//       for crs_c < 3 { pack ...; tiles ... sb[n, k, yx / 56, yx % 56] = ... }
//       for k < 64                          <- the pool kernel's nest, its y loop bound to yx_c
//         for x < 28 vector
//           pool[n, k, yx_c, x] = max(dy < 2, dx < 2: sb[n, k, 2 * yx_c + dy, 2 * x + dx])
//
// The pool then reads the block from L1/L2 instead of the whole intermediate from L3 or memory,
// and one kernel call less runs.
//
// When: kernel P holds tile statements and stores only to a temporary T; the next kernel C is a
// perfect nest that stores only its own output and is the only other kernel that touches T. P's
// outer loops (the single loop at its top, and each one whose body is exactly one loop, down to
// the first k-block loop or tile loop) are the blocks; each of them with more than one
// iteration is bound to one of C's loops whose extent is a multiple of it (C's v = q * u + v')
// and which every store of C names (blocks on different threads then store different elements).
// The binding is proved by enumeration: every element of T that C's iterations for a block read
// must be written by that block and by no other (so the block's values are final, and a thread
// that runs the block never waits on another). The first binding that passes is used; when none
// does, or when the intermediate has more than 4 M elements (the proof's walk is bounded), the
// kernels stay apart.
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

struct TileFusion {
  std::string producer;  // the tiled kernel's result (T)
  std::string consumer;  // the fused kernel's result
  std::string binding;   // "pool.y = sb.yx_c" ...
};

// Fuses every such pair of kernels; returns what it fused.
std::vector<TileFusion> fuseIntoTiles(LoopProgram& p);

}  // namespace texc::loops
