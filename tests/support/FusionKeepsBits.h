// Which programs fusion must not change by a single bit, for the differential tester's comparison
// of fused and unfused runs; and which hold f16/bf16 tensors, the programs the e2e suite compares
// (all of them, sums included: its sums agree, tests/unit/e2e/E2ETests.cpp).
#pragma once

#include "frontend/Program.h"

namespace texc::testsupport {

// `p` holds no sum or product, whose terms may be added up in another order in another kernel
// (spec 5.5; vector accumulators differ between a reduction's own kernel and its reader's).
// Everything else gives the unfused program's bits: elementwise code is the same operations in
// the same type; max and min are exact in any order; a fused f16/bf16 producer is rounded where
// the unfused program stores it (spec section 3, docs/architecture.md); an f32 producer read by
// an f64 node stays a kernel (random program seed 81471: computed in f64 when fused); and a
// division by a max or min computed once per row stays a division (seed 135065: the reciprocal
// is for sums alone).
inline bool fusionKeepsBits(const Program& p) {
  bool reordered = false;
  for (const Computation& c : p.computations)
    forEachValue(c.body, [&](const Value& v) {
      reordered = reordered || (v.kind == ValueKind::Reduce && (v.reduceKind == ReduceKind::Sum || v.reduceKind == ReduceKind::Prod));
    });
  return !reordered;
}

// Whether `p` holds f16 or bf16 tensors, whose fused producers carry the rounding nodes.
inline bool holdsLowPrecision(const Program& p) {
  for (const TensorInfo& t : p.tensors)
    if (t.dtype == DType::F16 || t.dtype == DType::BF16) return true;
  return false;
}

}  // namespace texc::testsupport
