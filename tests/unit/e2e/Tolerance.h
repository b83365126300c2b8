// The tolerance rule of the end-to-end tests (docs/testing.md, "The tolerance rule"): how one
// output is compared with the float64 reference and its per-element error bounds. Shared by the
// e2e suite and the random differential tester (tests/random/), so both judge results alike.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/Program.h"

namespace texc::e2e {

// The comparison of one output with the reference (docs/testing.md, "The tolerance rule").
struct Tolerance {
  double rtol = 0;
  double atol = 0;
  double boundFactor = 3;
};
Tolerance toleranceFor(DType outputDtype);

struct Comparison {
  int64_t elements = 0;
  int64_t mismatches = 0;
  int64_t uncertain = 0;  // finite reference, infinite bound: not compared
  double worstRatio = 0;  // max |got - ref| / tol over the compared elements
  std::string details;    // the first mismatches, one per line
};

// Compares `got` with `ref` under `tol` and the per-element `bounds` (same length). `shape` is
// used to print multi-dimensional indices.
Comparison compareValues(const std::vector<double>& ref, const std::vector<double>& bounds,
                         const std::vector<double>& got, const std::vector<int64_t>& shape, const Tolerance& tol);

// "[1, 0, 2]" for element `flat` of a row-major tensor of `shape`.
std::string formatIndex(int64_t flat, const std::vector<int64_t>& shape);
// `v` with 9 significant digits.
std::string fmtDouble(double v);

}  // namespace texc::e2e
