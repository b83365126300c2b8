// splitmix64: a small generator whose stream is the same on every platform. It defines the
// values of `texc run --random SEED` (docs/cli.md), and tests use it for reproducible inputs and
// random programs.
#pragma once

#include <cstdint>

namespace texc {

struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // [0, 1), 53 random bits.
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // [-1, 1), 53 random bits: the --random stream.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0; }
};

}  // namespace texc
