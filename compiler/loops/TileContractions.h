// The tile transformation: every contraction nest
//
//   for i            for j            acc = 0; for k: acc += A[.., i, k] * B[.., k, j]; C[.., i, j] = f(acc)
//
// becomes a cache-blocked, register-blocked nest (the schedule from Schedule.h):
//
//   for ic < ceil(M/mc)                  rows of A in blocks of mc (parallel if i was)
//     for jt < ceil(N/nr)                columns in panels of nr
//       pack s0 = B[k, nr*jt + 0..nr-1]  (when pack is on; zero past N)
//       for it < mc/mr
//         tile mr x nr at (mc*ic + mr*it, nr*jt): acc = sum(k) A * B;  then C[i, j] = f(acc)
//
// Tails need no separate loops: a tile reaching past M or N computes only what is inside (the
// code generator clamps row reads and masks or zero-pads column reads).
//
// A reduction over several variables, or one whose terms are guarded (convolution with padding),
// becomes an implicit GEMM: the reduction variables are flattened into one, an image's rows and
// columns into one pixel variable, and the guard moves into the packing of the input, which
// writes zeros where it fails (docs/scheduling.md, "Convolution: implicit GEMM").
#pragma once

#include <string>
#include <vector>

#include "compiler/loops/LoopIR.h"
#include "compiler/loops/Schedule.h"

namespace texc::loops {

// Tiles every contraction of `p` in place. Returns how many were tiled. Each tiled kernel's
// `schedule` note says which tile sizes were chosen and why.
int tileContractions(LoopProgram& p, const MachineInfo& machine, const ScheduleOverrides& overrides);

}  // namespace texc::loops
