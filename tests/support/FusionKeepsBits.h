// Which programs fusion must not change by a single bit: the rule shared by the e2e suite's test
// of its f16/bf16 programs and the differential tester's comparison of fused and unfused runs.
#pragma once

#include "frontend/Program.h"

namespace texc::testsupport {

// `p` holds f16 or bf16 tensors, whose fused producers are rounded where the unfused program
// stores them (spec section 3, docs/architecture.md); no sum or product, whose terms may be added
// up in another order in another kernel (spec 5.5; vector accumulators differ between a
// reduction's own kernel and its reader's); and no f64 tensor: an f32 producer fused into an f64
// kernel is computed in f64 and not rounded to f32 where the unfused program stores it (random
// program seed 81471: sqrt(0.5) as an f32 tensor read by an f64 output), which the reference's
// bound allows but which is not the same bits. Elementwise code, max and min are then exact.
inline bool fusionKeepsBits(const Program& p) {
  bool low = false, reordered = false;
  for (const TensorInfo& t : p.tensors) {
    if (t.dtype == DType::F64) return false;
    low = low || t.dtype == DType::F16 || t.dtype == DType::BF16;
  }
  for (const Computation& c : p.computations)
    forEachValue(c.body, [&](const Value& v) {
      reordered = reordered || (v.kind == ValueKind::Reduce && (v.reduceKind == ReduceKind::Sum || v.reduceKind == ReduceKind::Prod));
    });
  return low && !reordered;
}

}  // namespace texc::testsupport
