// Running a compiled program from the driver: tensors for every buffer, reproducible random
// inputs, and reading results back as doubles for comparisons.
#pragma once

#include <cstdint>
#include <vector>

#include "frontend/Program.h"
#include "runtime/Buffer.h"

namespace texc {

ElemType elemTypeOf(DType t);

// Element i of `t` as a double (f16/bf16 converted exactly).
double loadElement(const Tensor& t, int64_t i);
std::vector<double> toDoubles(const Tensor& t);

// Fills `t` with values in [-1, 1) from splitmix64 seeded by `seed` and the input's position
// `inputIndex`, so --random SEED gives the same inputs on every machine.
void fillRandom(Tensor& t, uint64_t seed, size_t inputIndex);

// Allocates a zeroed tensor for every computed tensor of `p` (inputs already set in `tensors`)
// and returns the pointer table the kernels take. Throws std::bad_alloc.
std::vector<void*> bindTensors(const Program& p, std::vector<Tensor>& tensors);

}  // namespace texc
