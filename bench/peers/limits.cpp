// limits.cpp — what this machine can reach, measured the way the workloads are timed.
//   copy   b[i] = a[i]                 bytes counted: one read + one write per element
//   add3   d[i] = a[i] + b[i] + c[i]   bytes counted: three reads + one write
//   copy_nt, add3_nt   the same with streaming (non-temporal) stores, which skip the read of
//          each destination line that an ordinary store costs: the bandwidth limit is the
//          better of the two (the driver takes it), as texc streams large outputs
//   fma    many independent vector FMA chains in registers (AVX2, and AVX-512 when compiled
//          for a CPU that has it)
//   amx    AMX tdpbf16ps on tiles in registers (4 accumulator tiles, 16x16x32 multiply-adds
//          each), when compiled for a CPU that has AMX-BF16 and Linux grants the tile state
// Each figure is measured REPEAT times after a warm-up (the FMA peak 5 x REPEAT times, in short
// bursts; the second thread is kept alive across them), on 1 and on 2 threads; the driver takes the best as the limit, and the spread
// (max-min)/median tells whether the machine was quiet.
#include "common.h"

#include <immintrin.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

using namespace bench;

namespace {

struct Stat {
  double median, min, max;
};

Stat measure(int repeat, const std::function<double()>& once) {
  once();
  std::vector<double> v;
  for (int r = 0; r < repeat; ++r) v.push_back(once());
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return {med, v.front(), v.back()};
}

double seconds(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Independent chains: enough to cover FMA latency x FMA ports (4 x 2 on Zen 3, 4 x 2 on
// Skylake-X), with room to spare.
constexpr int kChains = 12;

#ifdef __AVX512F__
double fmaLoop512(long iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, a);
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
#endif

double fmaLoop256(long iters) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, a);
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

#ifdef __AMX_BF16__
// Linux grants the AMX tile data state on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
bool amxGranted() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }

// Tiles 0-3 accumulate (16 rows x 16 f32), 4-5 are A (16 rows x 32 bf16), 6-7 B (16 pair rows x
// 16 columns): 4 independent tdpbf16ps per iteration, no loads. Each thread configures its own
// tiles.
double amxLoop(long iters) {
  struct alignas(64) Config {
    uint8_t palette = 1, startRow = 0, reserved[14] = {};
    uint16_t colBytes[16] = {};
    uint8_t rows[16] = {};
  } config;
  for (int t = 0; t < 8; ++t) {
    config.colBytes[t] = 64;
    config.rows[t] = 16;
  }
  alignas(64) static uint16_t ones[16 * 32];
  for (uint16_t& v : ones) v = 0x3f80;  // bf16 1.0
  alignas(64) float out[16 * 16];
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ones, 64);
  _tile_loadd(5, ones, 64);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  for (long it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, 64);
  _tile_release();
  return out[0];
}
#endif

volatile double gSink;
volatile double gPartnerSink;

// The second thread of the 2-thread FMA peak. It is started once and stays alive across the
// bursts, so that no thread creation (tens of microseconds, a tenth of a burst) falls inside the
// timed region. It spins between bursts: a sleeping thread would add its wake-up latency instead.
class BurstPartner {
 public:
  explicit BurstPartner(std::function<void()> work) : work_(std::move(work)), thread_([this] { loop(); }) {}
  ~BurstPartner() {
    stop_.store(true);
    go_.fetch_add(1, std::memory_order_release);
    thread_.join();
  }
  // Starts one burst on the partner; wait() returns when it has finished.
  void start() { go_.fetch_add(1, std::memory_order_release); }
  void wait() {
    unsigned long want = go_.load(std::memory_order_relaxed);
    while (done_.load(std::memory_order_acquire) != want) _mm_pause();
  }

 private:
  void loop() {
    unsigned long seen = 0;
    for (;;) {
      unsigned long g;
      while ((g = go_.load(std::memory_order_acquire)) == seen) _mm_pause();
      seen = g;
      if (stop_.load()) return;
      work_();
      done_.store(g, std::memory_order_release);
    }
  }
  std::function<void()> work_;
  std::atomic<unsigned long> go_{0}, done_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;  // last: it starts once the counters exist
};

// The FMA peak on `threads` (1 or 2) threads: `repeat` short bursts of `burst` on each.
Stat fmaPeak(int threads, int repeat, const std::function<double()>& burst, double flopsPerBurst) {
  if (threads == 1) {
    return measure(repeat, [&] { return flopsPerBurst / seconds([&] { gSink = burst(); }) / 1e9; });
  }
  BurstPartner partner([&] { gPartnerSink = burst(); });
  return measure(repeat, [&] {
    double s = seconds([&] {
      partner.start();
      gSink = burst();
      partner.wait();
    });
    return 2 * flopsPerBurst / s / 1e9;
  });
}

// d[i] = f(i) over [lo, hi): `f8(i)` gives d[i .. i+7] as one vector, streamed where d + i is
// 32-byte aligned; `f(i)` one element at the ends. A fence makes the stores visible before the
// clock stops.
template <class F, class F8>
void streamed(float* d, long lo, long hi, F f, F8 f8) {
  long i = lo;
  for (; i < hi && (reinterpret_cast<uintptr_t>(d + i) % 32) != 0; ++i) d[i] = f(i);
  for (; i + 8 <= hi; i += 8) _mm256_stream_ps(d + i, f8(i));
  for (; i < hi; ++i) d[i] = f(i);
  _mm_sfence();
}

void printStat(const char* name, int threads, const char* unit, Stat s, bool last) {
  std::printf("  {\"figure\": \"%s\", \"threads\": %d, \"unit\": \"%s\", \"median\": %.3f, \"min\": %.3f, \"max\": %.3f}%s\n", name,
              threads, unit, s.median, s.min, s.max, last ? "" : ",");
}

}  // namespace

int main(int argc, char** argv) {
  long n = argc > 1 ? std::atol(argv[1]) : (1L << 25);
  int repeat = argc > 2 ? std::atoi(argv[2]) : 7;
  Buffer a(n), b(n), c(n), d(n);
  for (long i = 0; i < n; ++i) a.p[i] = b.p[i] = c.p[i] = 1.0f + (i & 7);

  std::printf("[\n");
  for (int threads : {1, 2}) {
    Stat copy = measure(repeat, [&] {
      double s = seconds([&] {
        parallelFor(threads, n, [&](long lo, long hi) {
          float* __restrict dst = d.p;
          const float* __restrict src = a.p;
          for (long i = lo; i < hi; ++i) dst[i] = src[i];
        });
      });
      return 2.0 * n * sizeof(float) / s / 1e9;
    });
    Stat add3 = measure(repeat, [&] {
      double s = seconds([&] {
        parallelFor(threads, n, [&](long lo, long hi) {
          float* __restrict dst = d.p;
          const float *__restrict x = a.p, *__restrict y = b.p, *__restrict z = c.p;
          for (long i = lo; i < hi; ++i) dst[i] = x[i] + y[i] + z[i];
        });
      });
      return 4.0 * n * sizeof(float) / s / 1e9;
    });
    Stat copyNt = measure(repeat, [&] {
      double s = seconds([&] {
        parallelFor(threads, n, [&](long lo, long hi) {
          const float* __restrict src = a.p;
          streamed(d.p, lo, hi, [&](long i) { return src[i]; }, [&](long i) { return _mm256_loadu_ps(src + i); });
        });
      });
      return 2.0 * n * sizeof(float) / s / 1e9;
    });
    Stat add3Nt = measure(repeat, [&] {
      double s = seconds([&] {
        parallelFor(threads, n, [&](long lo, long hi) {
          const float *__restrict x = a.p, *__restrict y = b.p, *__restrict z = c.p;
          streamed(
              d.p, lo, hi, [&](long i) { return x[i] + y[i] + z[i]; },
              [&](long i) { return _mm256_add_ps(_mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)), _mm256_loadu_ps(z + i)); });
        });
      });
      return 4.0 * n * sizeof(float) / s / 1e9;
    });
    // FMA: many short bursts (about 0.5 ms each at peak), best one counts: on a shared machine
    // a long burst is preempted, and the peak is what the core does when it runs.
    const long iters = 200000;
    Stat fma256 = fmaPeak(threads, repeat * 5, [&] { return fmaLoop256(iters); }, 2.0 * 8 * kChains * iters);
    printStat("copy", threads, "GB/s", copy, false);
    printStat("add3", threads, "GB/s", add3, false);
    printStat("copy_nt", threads, "GB/s", copyNt, false);
    printStat("add3_nt", threads, "GB/s", add3Nt, false);
#ifdef __AVX512F__
    Stat fma512 = fmaPeak(threads, repeat * 5, [&] { return fmaLoop512(iters); }, 2.0 * 16 * kChains * iters);
    printStat("fma_avx2", threads, "GFLOP/s", fma256, false);
#ifdef __AMX_BF16__
    if (amxGranted()) {
      const long tileIters = 20000;  // 80000 tdpbf16ps: about 0.4 ms at one per 16 cycles
      Stat amx = fmaPeak(threads, repeat * 5, [&] { return amxLoop(tileIters); }, 2.0 * 16 * 16 * 32 * 4 * tileIters);
      printStat("amx_bf16", threads, "GFLOP/s", amx, false);
    }
#endif
    printStat("fma_avx512", threads, "GFLOP/s", fma512, threads == 2);
#else
    printStat("fma_avx2", threads, "GFLOP/s", fma256, threads == 2);
#endif
  }
  std::printf("]\n");
  return 0;
}
