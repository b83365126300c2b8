// Wall-clock timing for benchmarks and `texc compare`.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <vector>

namespace texc {

// A stopwatch on the monotonic clock (immune to wall-clock adjustments), running from
// construction or the last reset().
class Stopwatch {
 public:
  using Clock = std::chrono::steady_clock;

  Stopwatch() : start_(Clock::now()) {}
  void reset() { start_ = Clock::now(); }
  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double milliseconds() const { return seconds() * 1e3; }

 private:
  Clock::time_point start_;
};

// The median (mean of the two middle values for an even count); NaN for no samples. Timings use
// the median because a single preempted run would skew a mean.
inline double median(std::vector<double> samples) {
  if (samples.empty()) return std::nan("");
  size_t mid = samples.size() / 2;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid),
                   samples.end());
  double upper = samples[mid];
  if (samples.size() % 2 == 1) return upper;
  double lower =
      *std::max_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(mid));
  return lower + (upper - lower) / 2;
}

}  // namespace texc
