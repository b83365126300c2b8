// A sampling profiler for `texc run --profile`: the process's CPU time, interrupted every
// `periodMicros` of it (setitimer's ITIMER_PROF, which counts the time of all its threads; Linux
// rounds the period up to its clock tick, 4 ms at 250 Hz), and the interrupted instruction's
// address kept. Linux on x86-64; elsewhere start() says it cannot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace texc {

class Sampler {
 public:
  // At most `capacity` samples are kept (later ones are counted as dropped). One sampler runs at
  // a time: start() throws std::runtime_error if another is running or the system refuses.
  explicit Sampler(size_t capacity = 1 << 20);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  void start(int periodMicros);
  void stop();

  // The addresses sampled between start() and stop(), in order.
  std::vector<uintptr_t> addresses() const;
  uint64_t dropped() const;
  // The process's CPU time between start() and stop(), all threads.
  double cpuSeconds() const { return cpuSeconds_; }

 private:
  std::vector<uintptr_t> buffer_;
  bool running_ = false;
  double cpuSeconds_ = 0;
};

}  // namespace texc
