#include "runtime/Sampler.h"

#include <signal.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace texc {

namespace {

// The signal handler's view of the running sampler: plain atomics, async-signal-safe.
std::atomic<uintptr_t*> gSamples{nullptr};
std::atomic<size_t> gCapacity{0};
std::atomic<size_t> gNext{0};
std::atomic<bool> gActive{false};
struct sigaction gPrevious;

void onProfileSignal(int, siginfo_t*, void* context) {
#if defined(__linux__) && defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto pc = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  const size_t at = gNext.fetch_add(1, std::memory_order_relaxed);
  uintptr_t* samples = gSamples.load(std::memory_order_relaxed);
  if (samples && at < gCapacity.load(std::memory_order_relaxed)) samples[at] = pc;
#else
  (void)context;
#endif
}

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void setTimer(int periodMicros) {
  itimerval timer{};
  timer.it_interval.tv_sec = periodMicros / 1000000;
  timer.it_interval.tv_usec = periodMicros % 1000000;
  timer.it_value = timer.it_interval;
  if (setitimer(ITIMER_PROF, &timer, nullptr) != 0) throw std::runtime_error(std::string("texc: profile: setitimer: ") + std::strerror(errno));
}

}  // namespace

Sampler::Sampler(size_t capacity) : buffer_(capacity) {}

Sampler::~Sampler() {
  if (running_) stop();
}

void Sampler::start(int periodMicros) {
#if !(defined(__linux__) && defined(__x86_64__))
  (void)periodMicros;
  throw std::runtime_error("texc: profile: sampling is implemented for Linux on x86-64 only");
#else
  if (periodMicros <= 0) throw std::invalid_argument("texc: profile: the sampling period must be positive");
  bool idle = false;
  if (!gActive.compare_exchange_strong(idle, true)) throw std::runtime_error("texc: profile: another sampler is running");
  gSamples.store(buffer_.data());
  gCapacity.store(buffer_.size());
  gNext.store(0);
  struct sigaction action {};
  action.sa_sigaction = onProfileSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGPROF, &action, &gPrevious) != 0) {
    gActive.store(false);
    throw std::runtime_error(std::string("texc: profile: sigaction: ") + std::strerror(errno));
  }
  running_ = true;
  cpuSeconds_ = -processCpuSeconds();
  setTimer(periodMicros);
#endif
}

void Sampler::stop() {
  if (!running_) return;
  itimerval off{};
  setitimer(ITIMER_PROF, &off, nullptr);
  cpuSeconds_ += processCpuSeconds();
  // A signal already pending runs the handler after this; it finds no buffer to write into.
  gSamples.store(nullptr);
  sigaction(SIGPROF, &gPrevious, nullptr);
  running_ = false;
  gActive.store(false);
}

std::vector<uintptr_t> Sampler::addresses() const {
  const size_t n = std::min(gNext.load(), buffer_.size());
  return std::vector<uintptr_t>(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(n));
}

uint64_t Sampler::dropped() const {
  const size_t n = gNext.load();
  return n > buffer_.size() ? n - buffer_.size() : 0;
}

}  // namespace texc
