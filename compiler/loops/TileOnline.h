// The tiled online-softmax kernel (docs/online-softmax.md, "The tiled CPU kernel"). Lowering
// gives an online-softmax node one pass over the keys per query row (LowerToLoops.cpp,
// runOnline): a dot product, two scalar exponentials and a rescale of the output row per key.
// Where the scores are one dot product (attention's Q K^T, scaled, biased, masked), this rewrite
// blocks the rows and the keys so that both contractions run on the register-blocked
// micro-kernel and the softmax update runs as vector loops:
//
//   for qb (blocks of mq query rows; parallel)
//     M[r] = -inf, L[r] = 0, O[i, :] = 0 for the block's rows
//     pack s0 = Q[i, d] for the block's rows, d-major in panels of nr (once per block)
//     for kt (tiles of nc keys)  [if some (i, j) of the block and tile can pass the mask]
//       tile mr x nr: S[j, i] = score(sum(d) K[j, d] * Q[i, d])   (S^T: keys down, queries across)
//       MN = max(M, max over the tile's keys of S)                  (vector over the rows)
//       A = exp(M - MN); L = L * A; M = MN; S = exp(S - M); L += sum of S over the keys
//       tile mr x nr: O[i, c] = O[i, c] * A[i] + sum(j in the tile) S[j, i] * V[j, c]
//     O[i, :] /= L  (the weighted average)
//
// S, M, MN, L and A are local buffers (LoopIR.h): nc x mq and mq floats per call, in L1/L2.
// Nothing of N_q x N_k elements is stored. Key tiles that no (i, j) of the block can pass the
// mask (affine comparisons, LowerToLoops' maskConditions) are skipped by a guard whose bounds
// come from the comparisons' coefficients over the block (interval analysis); tiles that some
// pass keep the mask on each score.
#pragma once

#include "compiler/loops/LoopIR.h"
#include "compiler/loops/Schedule.h"

namespace texc::loops {

// Rewrites every one-pass online-softmax kernel of `p` whose scores are one dot product into the
// tiled form above; returns how many. Each such kernel's `schedule` note says what was chosen, or
// why it keeps the one pass.
int tileOnlineSoftmax(LoopProgram& p, const MachineInfo& machine, const ScheduleOverrides& overrides);

}  // namespace texc::loops
