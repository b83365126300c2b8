// texc-vecmath-errors: the error, in ulp, of texc's inline elementary functions
// (compiler/backend/llvm/VectorMath.h) as the JIT-compiled, vectorised loops compute them.
//
//   texc-vecmath-errors [--fn exp,log,...] [--mode precise|fast|both] [--stride S] [--threads T]
//                       [--f64-samples N] [--seed K] [--markdown] [--max-ulp-precise X]
//
// Functions: exp, log, tanh, sigmoid, erf, sin, cos (the unary ones; all by default), each in the
// chosen --math modes. Each is compiled into `out[i] = fn(in[i])` at O3 for the host
// (tests/tools/MathJit.h) and run on:
//
// * f32: every S-th of the 2^32 float bit patterns (S = 1, the default: all of them, i.e. every
//   float including subnormals, infinities and NaNs), plus, when S > 1, a few special values.
//   Reference: glibc's double function (sigmoid(x) = 1/(1+e^-x) for x >= 0, e^x/(1+e^x) below),
//   accurate far beyond a float's ulp.
// * f64: N inputs (default 2^24): half uniformly random bit patterns, half dense linear and
//   logarithmic sweeps of the function's interesting ranges, plus the special values. Reference:
//   glibc's long double function.
//
// Error in ulp = |got - ref| / ulp(ref), where ulp(v) is the spacing of the type at |v| rounded to
// the type: 2^(e-23) (f32) or 2^(e-52) (f64) for |v| in [2^e, 2^(e+1)), and 2^-149 or 2^-1074 for
// subnormal and zero magnitudes. Special values must match exactly: NaN against non-NaN, infinity
// against finite (a result that overflows may come out as the largest finite number when that is
// within one ulp of the reference) and the sign of a zero result each count as a mismatch. sin and
// cos are measured on their documented domain, |x| <= 2^19 (f32) or 2^47 (f64); outside it (and
// for infinite x) the emitters return NaN by design, and any other result is a mismatch.
//
// Per function, mode and type it prints the largest error and the input where it occurs (the
// first such input in sweep order), how many inputs exceed 1 and 2 ulp, the special-value
// mismatches, the points tested and the seconds the sweep took (the modes share one sweep: the
// reference is computed once per input). --markdown adds a table of the maxima.
//
// Exit status: 0; 1 when any special value mismatched, or when --max-ulp-precise X is given and a
// precise-mode f32 error exceeds X ulp (the precise mode's guarantee), or --max-ulp-precise-f64 Y
// and a precise-mode f64 error exceeds Y ulp; 2 on bad usage.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <type_traits>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/VectorMath.h"
#include "tests/tools/MathJit.h"

namespace {

using texc::MathFn;
using texc::MathMode;
using texc::tools::MathLoop;

constexpr MathFn kFunctions[] = {MathFn::Exp, MathFn::Log, MathFn::Tanh, MathFn::Sigmoid,
                                 MathFn::Erf, MathFn::Sin, MathFn::Cos};

// Inputs per work item: each thread takes the next chunk, fills it, runs every mode's loop on it,
// computes the reference once and compares.
constexpr uint64_t kChunk = uint64_t(1) << 16;

// What a type is measured against, and its ulp.
template <class T>
struct Type;

template <>
struct Type<float> {
  using Bits = uint32_t;
  using Ref = double;
  static constexpr const char* name = "f32";
  static constexpr float trigLimit = 0x1p19f;
  static constexpr int hexDigits = 8;
  static constexpr int digits = 9;
  // 2^(e-150) for the biased exponent e of |v| rounded to float, clamped to [1, 254]: 2^-149 for
  // zero and subnormals, 2^104 (the spacing below FLT_MAX) when |v| rounds to infinity.
  static uint64_t exponent(double v) {
    return std::clamp<uint32_t>(std::bit_cast<uint32_t>(std::fabs(static_cast<float>(v))) >> 23, 1, 254);
  }
  static double ulp(double v) { return std::bit_cast<double>((exponent(v) + 1023 - 150) << 52); }
  static double inverseUlp(double v) { return std::bit_cast<double>((1023 + 150 - exponent(v)) << 52); }
};

template <>
struct Type<double> {
  using Bits = uint64_t;
  using Ref = long double;
  static constexpr const char* name = "f64";
  static constexpr double trigLimit = 0x1p47;
  static constexpr int hexDigits = 16;
  static constexpr int digits = 17;
  // 2^(e-1075) for the biased exponent e of |v| rounded to double, clamped to [1, 2046].
  static int exponent(long double v) {
    return static_cast<int>(
        std::clamp<uint64_t>(std::bit_cast<uint64_t>(std::fabs(static_cast<double>(v))) >> 52, 1, 2046));
  }
  static long double ulp(long double v) { return std::ldexp(1.0L, exponent(v) - 1075); }
  static long double inverseUlp(long double v) { return std::ldexp(1.0L, 1075 - exponent(v)); }
};

template <class R>
using RefFn = R (*)(R);

// The reference in R (double for f32, long double for f64).
template <class R>
RefFn<R> reference(MathFn fn) {
  switch (fn) {
    case MathFn::Exp: return [](R x) { return std::exp(x); };
    case MathFn::Log: return [](R x) { return std::log(x); };
    case MathFn::Tanh: return [](R x) { return std::tanh(x); };
    case MathFn::Sigmoid:
      return [](R x) {
        if (x >= 0) return 1 / (1 + std::exp(-x));
        const R e = std::exp(x);
        return e / (1 + e);
      };
    case MathFn::Erf: return [](R x) { return std::erf(x); };
    case MathFn::Sin: return [](R x) { return std::sin(x); };
    case MathFn::Cos: return [](R x) { return std::cos(x); };
    case MathFn::Pow: break;
  }
  throw std::invalid_argument(std::string("no unary reference for ") + texc::mathName(fn));
}

bool isTrig(MathFn fn) { return fn == MathFn::Sin || fn == MathFn::Cos; }

enum Mismatch { kNaN, kInfinity, kZeroSign, kDomain, kMismatchKinds };
constexpr const char* kMismatchNames[kMismatchKinds] = {"NaN vs non-NaN", "infinity vs finite", "sign of zero",
                                                        "not NaN outside the domain"};

// The figures of one function, mode and type. Inputs are numbered in sweep order; ties (the
// largest error, the first mismatch) go to the lowest number, so results do not depend on how the
// chunks were spread over the threads.
struct Stats {
  uint64_t points = 0, over1 = 0, over2 = 0;
  double maxUlp = -1;  // -1: no input had a finite result to measure
  uint64_t worstIndex = std::numeric_limits<uint64_t>::max(), worstBits = 0;
  long double worstX = 0, worstGot = 0, worstRef = 0;
  uint64_t mismatches[kMismatchKinds] = {};
  uint64_t mismatchIndex = std::numeric_limits<uint64_t>::max(), mismatchBits = 0;
  Mismatch mismatchKind = kNaN;
  long double mismatchX = 0, mismatchGot = 0, mismatchRef = 0;

  uint64_t specialMismatches() const {
    uint64_t n = 0;
    for (uint64_t m : mismatches) n += m;
    return n;
  }

  void merge(const Stats& o) {
    points += o.points;
    over1 += o.over1;
    over2 += o.over2;
    if (o.maxUlp > maxUlp || (o.maxUlp == maxUlp && o.worstIndex < worstIndex)) {
      maxUlp = o.maxUlp;
      worstIndex = o.worstIndex;
      worstBits = o.worstBits;
      worstX = o.worstX;
      worstGot = o.worstGot;
      worstRef = o.worstRef;
    }
    for (int k = 0; k < kMismatchKinds; ++k) mismatches[k] += o.mismatches[k];
    if (o.mismatchIndex < mismatchIndex) {
      mismatchIndex = o.mismatchIndex;
      mismatchBits = o.mismatchBits;
      mismatchKind = o.mismatchKind;
      mismatchX = o.mismatchX;
      mismatchGot = o.mismatchGot;
      mismatchRef = o.mismatchRef;
    }
  }
};

template <class T>
[[gnu::noinline]] void recordMismatch(Stats& s, uint64_t index, T x, T got, long double ref, Mismatch kind) {
  ++s.mismatches[kind];
  if (index < s.mismatchIndex) {
    s.mismatchIndex = index;
    s.mismatchBits = std::bit_cast<typename Type<T>::Bits>(x);
    s.mismatchKind = kind;
    s.mismatchX = x;
    s.mismatchGot = got;
    s.mismatchRef = ref;
  }
}

// An input that is not the common case of compareChunk: records a special-value mismatch if it is
// one, and returns the error to measure, or -1 for none.
template <class T>
[[gnu::noinline]] typename Type<T>::Ref special(Stats& s, uint64_t index, T x, T got, typename Type<T>::Ref ref,
                                                bool outsideDomain) {
  using R = typename Type<T>::Ref;
  using Limits = std::numeric_limits<T>;
  if (outsideDomain) {
    if (!std::isnan(got)) recordMismatch<T>(s, index, x, got, Limits::quiet_NaN(), kDomain);
    return -1;
  }
  if (std::isnan(ref) || std::isnan(got)) {
    if (std::isnan(ref) != std::isnan(got)) recordMismatch<T>(s, index, x, got, ref, kNaN);
    return -1;
  }
  const R err = std::fabs(static_cast<R>(got) - ref) * Type<T>::inverseUlp(ref);
  const T rounded = static_cast<T>(ref);
  if (std::isinf(got) || std::isinf(rounded)) {
    if (got == rounded) return -1;
    // Overflow: the largest finite number instead of infinity is measured like any result when the
    // reference is less than one ulp above it; every other finite-for-infinite result is wrong.
    const bool nearMax = std::isinf(rounded) && std::fabs(got) == Limits::max() &&
                         std::signbit(got) == std::signbit(rounded) &&
                         std::fabs(ref) - static_cast<R>(Limits::max()) < Type<T>::ulp(ref);
    if (nearMax) return err;
    recordMismatch<T>(s, index, x, got, ref, kInfinity);
    return -1;
  }
  if (got == 0 && rounded == 0 && std::signbit(got) != std::signbit(ref))
    recordMismatch<T>(s, index, x, got, ref, kZeroSign);
  return err;
}

// Inputs begin .. begin+n-1 of a sweep: x, the loop's results and the references (unused outside
// sin's and cos's domain).
template <class T>
void compareChunk(Stats& s, uint64_t begin, const T* x, const T* got, const typename Type<T>::Ref* ref, size_t n,
                  bool trig) {
  using R = typename Type<T>::Ref;
  uint64_t over1 = 0, over2 = 0;
  double maxUlp = s.maxUlp;
  size_t worst = n;
  for (size_t k = 0; k < n; ++k) {
    const bool outside = trig && !(std::fabs(x[k]) <= Type<T>::trigLimit);
    const T rounded = static_cast<T>(ref[k]);
    R err;
    // Most inputs: finite results on both sides, and no zero of the wrong sign.
    if (!outside && std::isfinite(got[k]) && std::isfinite(rounded) &&
        !(got[k] == 0 && std::signbit(got[k]) != std::signbit(ref[k]))) [[likely]]
      err = std::fabs(static_cast<R>(got[k]) - ref[k]) * Type<T>::inverseUlp(ref[k]);
    else if (!outside && std::isinf(got[k]) && got[k] == rounded)  // the same infinity
      err = -1;
    else
      err = special<T>(s, begin + k, x[k], got[k], ref[k], outside);
    over1 += err > 1;
    over2 += err > 2;
    // Strictly greater: the chunks of a thread come in order, so a tie keeps the first input.
    if (static_cast<double>(err) > maxUlp) {
      maxUlp = static_cast<double>(err);
      worst = k;
    }
  }
  s.points += n;
  s.over1 += over1;
  s.over2 += over2;
  if (worst < n) {
    s.maxUlp = maxUlp;
    s.worstIndex = begin + worst;
    s.worstBits = std::bit_cast<typename Type<T>::Bits>(x[worst]);
    s.worstX = x[worst];
    s.worstGot = got[worst];
    s.worstRef = ref[worst];
  }
}

// The inputs numbered [begin, end), written to x.
template <class T>
using InputFn = std::function<void(uint64_t begin, uint64_t end, T* x)>;

// Runs each loop (one per mode, all of fn) on inputs 0 .. count-1 on `threads` threads; one Stats
// per loop.
template <class T>
std::vector<Stats> sweep(MathFn fn, const std::vector<const MathLoop*>& loops, const std::vector<MathMode>& modeOf,
                         uint64_t count, const InputFn<T>& inputs, unsigned threads) {
  using R = typename Type<T>::Ref;
  const RefFn<R> ref = reference<R>(fn);
  const bool trig = isTrig(fn);  // copied into the lambda below: no reloads after each call of ref
  const size_t modes = loops.size();
  const uint64_t chunks = (count + kChunk - 1) / kChunk;
  std::atomic<uint64_t> nextChunk{0};
  std::vector<std::vector<Stats>> perThread(threads, std::vector<Stats>(modes));
  auto work = [&, ref, trig](unsigned t) {
    std::vector<T> x(kChunk);
    std::vector<std::vector<T>> out(modes, std::vector<T>(kChunk));
    std::vector<R> r(kChunk), flushed(kChunk);
    std::vector<Stats>& stats = perThread[t];
    for (uint64_t c = nextChunk++; c < chunks; c = nextChunk++) {
      const uint64_t begin = c * kChunk;
      const size_t n = static_cast<size_t>(std::min(kChunk, count - begin));
      inputs(begin, begin + n, x.data());
      for (size_t m = 0; m < modes; ++m) loops[m]->apply(x.data(), out[m].data(), n);
      if (trig) {
        for (size_t k = 0; k < n; ++k)
          r[k] = std::fabs(x[k]) <= Type<T>::trigLimit ? ref(static_cast<R>(x[k])) : R(0);
      } else {
        for (size_t k = 0; k < n; ++k) r[k] = ref(static_cast<R>(x[k]));
      }
      for (size_t m = 0; m < modes; ++m) {
        // The fast float log counts subnormal inputs as zero (-inf), as documented: that is the
        // result to expect there, not a special-value mismatch.
        const R* expected = r.data();
        if (fn == MathFn::Log && modeOf[m] == MathMode::Fast && std::is_same_v<T, float>) {
          for (size_t k = 0; k < n; ++k)
            flushed[k] = x[k] > 0 && x[k] < std::numeric_limits<T>::min() ? -std::numeric_limits<R>::infinity() : r[k];
          expected = flushed.data();
        }
        compareChunk<T>(stats[m], begin, x.data(), out[m].data(), expected, n, trig);
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& th : pool) th.join();
  std::vector<Stats> total(modes);
  for (const std::vector<Stats>& stats : perThread)
    for (size_t m = 0; m < modes; ++m) total[m].merge(stats[m]);
  return total;
}

// Values every sampled sweep includes: zeros, subnormals, the normal range's ends, infinities, NaN.
template <class T>
std::vector<T> specialValues(MathFn fn) {
  using L = std::numeric_limits<T>;
  std::vector<T> v;
  for (T a : {T(0), L::denorm_min(), L::min(), T(1e-30), T(1e-8), T(0.5), T(1), T(2), L::max(), L::infinity()}) {
    v.push_back(a);
    v.push_back(-a);
  }
  v.push_back(L::quiet_NaN());
  if (isTrig(fn)) {
    // The domain's end and the next number beyond it.
    const T limit = Type<T>::trigLimit;
    for (T a : {limit, std::nextafter(limit, L::infinity())}) {
      v.push_back(a);
      v.push_back(-a);
    }
  }
  if (fn == MathFn::Exp || fn == MathFn::Sigmoid) {
    // Around overflow, the start of the subnormal results and underflow to zero (for sigmoid the
    // negated magnitudes: its small results are those of exp).
    const bool f64 = sizeof(T) == 8;
    for (double a : f64 ? std::vector<double>{709.78, 709.79, -708.39, -708.40, -745.13, -745.14}
                        : std::vector<double>{88.72, 88.73, -87.33, -87.34, -103.97, -103.98})
      v.push_back(static_cast<T>(fn == MathFn::Sigmoid ? -std::fabs(a) : a));
  }
  return v;
}

// f32 input i < count is the bit pattern i * stride; after those come the special values.
InputFn<float> f32Inputs(uint64_t stride, uint64_t count, std::vector<float> specials) {
  return [stride, count, specials = std::move(specials)](uint64_t begin, uint64_t end, float* x) {
    for (uint64_t i = begin; i < end; ++i)
      x[i - begin] = i < count ? std::bit_cast<float>(static_cast<uint32_t>(i * stride)) : specials[i - count];
  };
}

uint64_t splitmix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A dense sweep of [lo, hi] (0 < lo for logarithmic ones): evenly spaced in x, or in log x for
// `logarithmic`, where `bothSigns` negates every other point.
struct Range {
  double lo, hi;
  bool logarithmic = false;
  bool bothSigns = false;
};

std::vector<Range> f64Ranges(MathFn fn) {
  switch (fn) {
    case MathFn::Exp:
      return {{-746, 710}, {-1, 1}, {1e-300, 1, true, true}, {709.7, 709.8}, {-708.5, -708.3}, {-745.2, -745.1}};
    case MathFn::Log: return {{0.5, 2}, {1 - 1e-3, 1 + 1e-3}, {0x1p-1074, 0x1p1023, true}, {0x1p-1074, 0x1p-1022}};
    case MathFn::Tanh: return {{-22, 22}, {-1, 1}, {1e-300, 1, true, true}};
    case MathFn::Sigmoid: return {{-760, 760}, {-40, 40}, {-1, 1}};
    case MathFn::Erf: return {{-7, 7}, {-1.5, 1.5}, {1e-300, 1, true, true}};
    case MathFn::Sin:
    case MathFn::Cos: return {{-1e4, 1e4}, {-7, 7}, {1e-300, 0x1p47, true, true}, {0x1p47 - 1e3, 0x1p47}};
    case MathFn::Pow: break;
  }
  return {};
}

// f64 inputs: the special values, then half of the rest uniformly random bit patterns (of `seed`),
// then the rest spread evenly over the function's ranges.
InputFn<double> f64Inputs(MathFn fn, uint64_t count, uint64_t seed) {
  std::vector<double> specials = specialValues<double>(fn);
  if (specials.size() > count) specials.resize(count);
  const uint64_t rest = count - specials.size();
  const uint64_t random = rest / 2;
  const std::vector<Range> ranges = f64Ranges(fn);
  const uint64_t perRange = (rest - random) / ranges.size();
  const uint64_t key = splitmix64(seed * 0x100 + static_cast<uint64_t>(fn));
  return [=](uint64_t begin, uint64_t end, double* x) {
    for (uint64_t i = begin; i < end; ++i) {
      double& v = x[i - begin];
      if (i < specials.size()) {
        v = specials[i];
        continue;
      }
      uint64_t j = i - specials.size();
      if (j < random) {
        v = std::bit_cast<double>(splitmix64(key + j));
        continue;
      }
      j -= random;
      // The last range takes the remainder.
      const uint64_t r = perRange ? std::min<uint64_t>(j / perRange, ranges.size() - 1) : ranges.size() - 1;
      const uint64_t p = j - r * perRange;
      const uint64_t n = r + 1 == ranges.size() ? rest - random - r * perRange : perRange;
      const Range& range = ranges[r];
      const double t = n > 1 ? static_cast<double>(p) / static_cast<double>(n - 1) : 0.0;
      if (range.logarithmic) {
        v = std::exp(std::log(range.lo) + (std::log(range.hi) - std::log(range.lo)) * t);
        if (range.bothSigns && p % 2) v = -v;
      } else {
        v = range.lo + (range.hi - range.lo) * t;
      }
    }
  };
}

std::string num(long double v, int digits) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*Lg", digits, v);
  return text;
}

template <class T>
std::string inputText(const Stats& s) {
  char text[128];
  std::snprintf(text, sizeof text, "%s (0x%0*llx)", num(s.worstX, Type<T>::digits).c_str(), Type<T>::hexDigits,
                static_cast<unsigned long long>(s.worstBits));
  return text;
}

struct Result {
  MathFn fn;
  MathMode mode;
  std::optional<Stats> f32, f64;
};

template <class T>
void printStats(MathFn fn, MathMode mode, const Stats& s, double seconds) {
  std::printf("%-7s %-7s %s: ", texc::mathName(fn), texc::mathModeName(mode), Type<T>::name);
  if (s.maxUlp < 0)
    std::printf("no finite result measured");
  else
    std::printf("max %.4f ulp at x = %s (got %s, ref %s)", s.maxUlp, inputText<T>(s).c_str(),
                num(s.worstGot, Type<T>::digits).c_str(), num(s.worstRef, Type<T>::digits + 3).c_str());
  std::printf(", >1 ulp %llu, >2 ulp %llu, special mismatches %llu, %llu points, %.1f s\n",
              static_cast<unsigned long long>(s.over1), static_cast<unsigned long long>(s.over2),
              static_cast<unsigned long long>(s.specialMismatches()), static_cast<unsigned long long>(s.points),
              seconds);
  if (s.specialMismatches()) {
    std::printf("        special mismatches:");
    for (int k = 0; k < kMismatchKinds; ++k)
      if (s.mismatches[k])
        std::printf(" %s %llu;", kMismatchNames[k], static_cast<unsigned long long>(s.mismatches[k]));
    std::printf(" first: %s at x = %s (0x%0*llx), got %s, ref %s\n", kMismatchNames[s.mismatchKind],
                num(s.mismatchX, Type<T>::digits).c_str(), Type<T>::hexDigits,
                static_cast<unsigned long long>(s.mismatchBits), num(s.mismatchGot, Type<T>::digits).c_str(),
                num(s.mismatchRef, Type<T>::digits + 3).c_str());
  }
  std::fflush(stdout);
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Options {
  std::vector<std::string> functions;
  std::string mode = "both";
  uint64_t stride = 1;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  uint64_t f64Samples = uint64_t(1) << 24;
  uint64_t seed = 1;
  bool markdown = false;
  double maxUlpPrecise = 0;     // f32, checked when given
  double maxUlpPreciseF64 = 0;  // f64, checked when given
  bool checkF64 = false;
};

// Measures every function in every mode, prints the figures and returns the exit status.
int measureAll(const Options& o, const std::vector<MathFn>& functions, const std::vector<MathMode>& modes,
               bool checkMaxUlp) {
  const uint64_t f32Count = ((uint64_t(1) << 32) + o.stride - 1) / o.stride;
  std::printf("texc-vecmath-errors: f32 stride %llu (%llu bit patterns%s), f64 %llu inputs, %u thread(s), "
              "host CPU %s\n",
              static_cast<unsigned long long>(o.stride), static_cast<unsigned long long>(f32Count),
              o.stride == 1 ? ": all of them" : " plus special values",
              static_cast<unsigned long long>(o.f64Samples), o.threads, texc::hostCPUName().c_str());
  std::printf("ulp: |got - ref| / spacing of the type at |ref|; ref: glibc in double (f32), long double (f64)\n");
  std::fflush(stdout);

  std::vector<Result> results;
  for (MathFn fn : functions) {
    std::vector<MathLoop> loops32, loops64;
    for (MathMode mode : modes) {
      loops32.push_back(MathLoop::compile(fn, false, {.mode = mode}));
      if (o.f64Samples) loops64.push_back(MathLoop::compile(fn, true, {.mode = mode}));
    }
    std::vector<const MathLoop*> p32, p64;
    for (const MathLoop& l : loops32) p32.push_back(&l);
    for (const MathLoop& l : loops64) p64.push_back(&l);

    std::vector<float> specials32;
    if (o.stride > 1) specials32 = specialValues<float>(fn);
    auto start = std::chrono::steady_clock::now();
    const std::vector<Stats> s32 =
        sweep<float>(fn, p32, modes, f32Count + specials32.size(), f32Inputs(o.stride, f32Count, specials32), o.threads);
    const double seconds32 = secondsSince(start);
    for (size_t m = 0; m < modes.size(); ++m) printStats<float>(fn, modes[m], s32[m], seconds32);

    std::vector<Stats> s64;
    if (o.f64Samples) {
      start = std::chrono::steady_clock::now();
      s64 = sweep<double>(fn, p64, modes, o.f64Samples, f64Inputs(fn, o.f64Samples, o.seed), o.threads);
      const double seconds64 = secondsSince(start);
      for (size_t m = 0; m < modes.size(); ++m) printStats<double>(fn, modes[m], s64[m], seconds64);
    }
    for (size_t m = 0; m < modes.size(); ++m)
      results.push_back({fn, modes[m], s32[m], o.f64Samples ? std::optional<Stats>(s64[m]) : std::nullopt});
  }

  if (o.markdown) {
    std::printf("\n| function | mode | f32 max ulp | at x | f32 points | f64 max ulp | f64 points |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    auto ulp = [](const std::optional<Stats>& s) {
      char text[32];
      if (!s || s->maxUlp < 0) return std::string("–");
      std::snprintf(text, sizeof text, "%.3f", s->maxUlp);
      return std::string(text);
    };
    auto points = [](const std::optional<Stats>& s) { return s ? std::to_string(s->points) : std::string("–"); };
    for (const Result& r : results)
      std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", texc::mathName(r.fn), texc::mathModeName(r.mode),
                  ulp(r.f32).c_str(), r.f32->maxUlp < 0 ? "–" : inputText<float>(*r.f32).c_str(),
                  points(r.f32).c_str(), ulp(r.f64).c_str(), points(r.f64).c_str());
  }

  std::vector<std::string> failures;
  for (const Result& r : results) {
    for (const auto& [type, stats] : {std::pair{"f32", r.f32}, std::pair{"f64", r.f64}}) {
      if (!stats) continue;
      const std::string what = std::string(texc::mathName(r.fn)) + " " + texc::mathModeName(r.mode) + " " + type;
      if (stats->specialMismatches())
        failures.push_back(what + ": " + std::to_string(stats->specialMismatches()) + " special-value mismatch(es)");
      const bool f64 = std::string(type) == "f64";
      const bool check = f64 ? o.checkF64 : checkMaxUlp;
      const double limit = f64 ? o.maxUlpPreciseF64 : o.maxUlpPrecise;
      if (check && r.mode == MathMode::Precise && stats->maxUlp > limit)
        failures.push_back(what + ": max " + num(stats->maxUlp, 6) + " ulp exceeds --max-ulp-precise" + (f64 ? "-f64 " : " ") +
                           num(limit, 6));
    }
  }
  std::fflush(stdout);
  for (const std::string& f : failures) std::fprintf(stderr, "texc-vecmath-errors: FAILED %s\n", f.c_str());
  return failures.empty() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"texc-vecmath-errors: ulp errors of the inline vector math (exhaustive in f32, sampled in f64)"};
  app.add_option("--fn", o.functions,
                 "functions to measure, comma-separated (default: exp,log,tanh,sigmoid,erf,sin,cos)")
      ->delimiter(',');
  app.add_option("--mode", o.mode, "math mode: precise, fast or both (default both)")
      ->check(CLI::IsMember({"precise", "fast", "both"}));
  app.add_option("--stride", o.stride, "test every S-th f32 bit pattern (default 1: all 2^32)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 32));
  app.add_option("--threads", o.threads, "worker threads (default: hardware concurrency)")
      ->check(CLI::Range(1u, 4096u));
  app.add_option("--f64-samples", o.f64Samples, "f64 inputs per function (default 2^24; 0 skips f64)");
  app.add_option("--seed", o.seed, "seed of the f64 random bit patterns (default 1)");
  app.add_flag("--markdown", o.markdown, "also print a markdown table of the maxima");
  CLI::Option* maxUlpOption =
      app.add_option("--max-ulp-precise", o.maxUlpPrecise, "fail when a precise-mode f32 error exceeds this many ulp");
  CLI::Option* maxUlpF64Option =
      app.add_option("--max-ulp-precise-f64", o.maxUlpPreciseF64, "fail when a precise-mode f64 error exceeds this many ulp");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  std::vector<MathFn> functions;
  if (o.functions.empty()) functions.assign(std::begin(kFunctions), std::end(kFunctions));
  for (const std::string& name : o.functions) {
    const MathFn* found = std::find_if(std::begin(kFunctions), std::end(kFunctions),
                                       [&](MathFn fn) { return name == texc::mathName(fn); });
    if (found == std::end(kFunctions)) {
      std::fprintf(stderr, "texc-vecmath-errors: unknown function '%s' (%s)\n", name.c_str(),
                   name == "pow" ? "pow takes two arguments; only unary functions are measured"
                                 : "expected exp, log, tanh, sigmoid, erf, sin or cos");
      return 2;
    }
    if (std::find(functions.begin(), functions.end(), *found) == functions.end()) functions.push_back(*found);
  }
  std::vector<MathMode> modes;
  if (o.mode != "fast") modes.push_back(MathMode::Precise);
  if (o.mode != "precise") modes.push_back(MathMode::Fast);

  try {
    o.checkF64 = maxUlpF64Option->count() > 0;
    return measureAll(o, functions, modes, maxUlpOption->count() > 0);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "texc-vecmath-errors: error: %s\n", e.what());
    return 1;
  }
}
