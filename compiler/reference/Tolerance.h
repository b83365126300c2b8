// The tolerance rule (docs/testing.md, "The tolerance rule"): how one output is compared with the
// float64 reference and its per-element error bounds (ErrorBound.h). Shared by `texc run --check`,
// `compare` and `tune`, the e2e suite and the random differential tester, so all judge alike.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "frontend/Program.h"

namespace texc {

// The comparison of one output with the reference (docs/testing.md, "The tolerance rule").
struct Tolerance {
  double rtol = 0;
  double atol = 0;
  double boundFactor = 3;
  // The magnitude from which a value rounds to infinity in the output's dtype (round to nearest
  // even): an infinite element is right where the reference is within its tolerance of it.
  double overflow = std::numeric_limits<double>::infinity();
};
Tolerance toleranceFor(DType outputDtype);

struct Comparison {
  int64_t elements = 0;
  int64_t mismatches = 0;
  int64_t uncertain = 0;  // finite reference, infinite bound: not compared
  double worstRatio = 0;  // max |got - ref| / tol over the compared elements
  std::string details;    // the first mismatches, one per line
  // The worst element: the mismatch furthest beyond its tolerance (a non-finite mismatch counts as
  // infinitely far; the first one wins), or without mismatches the compared element closest to
  // its tolerance. -1 when no element was compared or mismatched.
  int64_t worstIndex = -1;
  double worstGot = 0, worstRef = 0;
  double worstAllowed = 0;  // its tolerance: atol + rtol*|ref| + 3*bound (0 for a non-finite reference)
};

// Compares `got` with `ref` under `tol` and the per-element `bounds` (same length). `shape` is
// used to print multi-dimensional indices.
Comparison compareValues(const std::vector<double>& ref, const std::vector<double>& bounds,
                         const std::vector<double>& got, const std::vector<int64_t>& shape, const Tolerance& tol);

// "[1, 0, 2]" for element `flat` of a row-major tensor of `shape`.
std::string formatIndex(int64_t flat, const std::vector<int64_t>& shape);
// `v` with 9 significant digits.
std::string fmtDouble(double v);

}  // namespace texc
