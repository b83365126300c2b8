// Fusion must not change a program by a single bit: the differential tester compares every
// program's fused runs with its unfused ones (tests/random/DiffTest.cpp), and the e2e suite its
// f16/bf16 programs (tests/unit/e2e/E2ETests.cpp). Everything gives the unfused program's bits:
// elementwise code is the same operations in the same type; a sum or product is added up in an
// order texc fixes, the same in every kernel that computes it (docs/architecture.md, "Numerics";
// before, LLVM chose it per kernel: random program 170191); max and min are exact in any order;
// a fused f16/bf16 producer is rounded where the unfused program stores it (spec section 3,
// docs/architecture.md); an f32 producer read by an f64 node stays a kernel (random program seed
// 81471: computed in f64 when fused); a division by a sum is a multiplication by its reciprocal
// in both (reciprocal-of-sums), and by a max or min an exact division (seed 135065).
#pragma once

#include "frontend/Program.h"

namespace texc::testsupport {

// Whether `p` holds f16 or bf16 tensors, whose fused producers carry the rounding nodes.
inline bool holdsLowPrecision(const Program& p) {
  for (const TensorInfo& t : p.tensors)
    if (t.dtype == DType::F16 || t.dtype == DType::BF16) return true;
  return false;
}

}  // namespace texc::testsupport
