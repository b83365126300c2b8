#include "compiler/reference/Tolerance.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace texc {

std::string formatIndex(int64_t flat, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  std::string s = "[";
  for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
  return s + "]";
}

std::string fmtDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

Tolerance toleranceFor(DType outputDtype) {
  switch (outputDtype) {
    // The overflow thresholds are halfway between the largest finite value and the next power of
    // two: a tie rounds to the even neighbour, which is the infinity (the largest value's last
    // mantissa bit is 1).
    case DType::F64: return {0x1p-52, 1e-300, 3};
    case DType::F32: return {0x1p-23, 1e-30, 3, 0x1.ffffffp127};
    case DType::F16: return {0x1p-10, 0x1p-24, 3, 65520.0};
    case DType::BF16: return {0x1p-7, 1e-30, 3, 0x1.ffp127};
  }
  return {};
}

Comparison compareValues(const std::vector<double>& ref, const std::vector<double>& bounds,
                         const std::vector<double>& got, const std::vector<int64_t>& shape, const Tolerance& tol) {
  constexpr int kMaxDetails = 8;
  Comparison c;
  c.elements = static_cast<int64_t>(ref.size());
  double worstKey = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double r = ref[i], g = got[i], b = bounds[i];
    bool bad = false;
    double allowed = 0;
    double ratio = 0;  // how far beyond (> 1) or within (<= 1) its tolerance this element is
    if (std::isnan(r)) {
      bad = !std::isnan(g);
    } else if (std::isinf(r)) {
      bad = g != r;
    } else if (std::isinf(b)) {
      ++c.uncertain;
      continue;
    } else {
      allowed = tol.atol + tol.rtol * std::fabs(r) + tol.boundFactor * b;
      // A value the output's dtype cannot hold is stored as the infinity of its sign (exp(100)
      // in f32): right when the reference is within its tolerance of that overflow.
      if (std::isinf(g) && std::signbit(g) == std::signbit(r) && std::fabs(r) + allowed >= tol.overflow) continue;
      double diff = std::fabs(g - r);
      bad = !std::isfinite(g) || diff > allowed;
      if (std::isfinite(g)) {
        ratio = diff / allowed;
        c.worstRatio = std::max(c.worstRatio, ratio);
      }
    }
    if (bad && !(ratio > 1)) ratio = std::numeric_limits<double>::infinity();
    if ((bad || std::isfinite(r)) && (c.worstIndex < 0 || ratio > worstKey)) {
      worstKey = ratio;
      c.worstIndex = static_cast<int64_t>(i);
      c.worstGot = g;
      c.worstRef = r;
      c.worstAllowed = allowed;
    }
    if (!bad) continue;
    if (c.mismatches++ < kMaxDetails) {
      c.details += "  " + formatIndex(static_cast<int64_t>(i), shape) + ": reference " + fmtDouble(r) + ", got " +
                   fmtDouble(g);
      if (std::isfinite(r)) c.details += ", |diff| " + fmtDouble(std::fabs(g - r)) + " > tolerance " + fmtDouble(allowed);
      else c.details += " (non-finite values must match exactly)";
      c.details += "\n";
    }
  }
  if (c.mismatches > kMaxDetails) c.details += "  ... and " + std::to_string(c.mismatches - kMaxDetails) + " more\n";
  return c;
}

}  // namespace texc
