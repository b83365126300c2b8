// Accuracy of the inline vector math: each function is compiled into a loop, optimised at O3 (so
// the loop vectoriser widens it), JIT-compiled and run over a dense sweep of its domain plus the
// special values, then compared with long double libm. The measured maxima are printed (they are
// the numbers in docs/vector-math.md) and checked against bounds slightly above them.

#include <catch2/catch.hpp>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "compiler/backend/llvm/VectorMath.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

using texc::MathFn;

// out[i] = fn(in0[i] [, in1[i]]) for i < n, compiled for the host.
struct MathKernel {
  std::unique_ptr<texc::OrcJIT> jit;
  std::string optimizedIR;
  void* entry = nullptr;
};

MathKernel finish(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context, int optLevel) {
  auto machine = texc::createHostTargetMachine(optLevel);
  texc::optimizeModule(*module, *machine, optLevel);
  MathKernel kernel;
  kernel.optimizedIR = texc::printModule(*module);
  kernel.jit = std::make_unique<texc::OrcJIT>(optLevel);
  kernel.jit->addModule(std::move(module), std::move(context));
  kernel.entry = kernel.jit->lookup("kernel");
  return kernel;
}

MathKernel buildKernel(MathFn fn, bool f64, bool viaLibm = false, int optLevel = 3) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("vector_math_test", *context);
  llvm::Type* elem = f64 ? llvm::Type::getDoubleTy(*context) : llvm::Type::getFloatTy(*context);
  llvm::Type* ptr = llvm::PointerType::get(*context, 0);
  llvm::Type* i64 = llvm::Type::getInt64Ty(*context);
  const unsigned arity = texc::mathArity(fn);
  std::vector<llvm::Type*> params(arity + 1, ptr);
  params.push_back(i64);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(*context), params, false);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "kernel", *module);
  for (unsigned i = 0; i <= arity; ++i) f->addParamAttr(i, llvm::Attribute::NoAlias);

  auto* entry = llvm::BasicBlock::Create(*context, "entry", f);
  auto* loop = llvm::BasicBlock::Create(*context, "loop", f);
  auto* exit = llvm::BasicBlock::Create(*context, "exit", f);
  llvm::IRBuilder<> b(entry);
  llvm::Value* n = f->getArg(arity + 1);
  b.CreateCondBr(b.CreateICmpSGT(n, b.getInt64(0)), loop, exit);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(i64, 2);
  i->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::Value*> args;
  for (unsigned a = 0; a < arity; ++a) args.push_back(b.CreateLoad(elem, b.CreateGEP(elem, f->getArg(a), i)));
  llvm::Value* result = viaLibm ? texc::emitMathLibm(b, *module, fn, args) : texc::emitMath(b, fn, args);
  b.CreateStore(result, b.CreateGEP(elem, f->getArg(arity), i));
  llvm::Value* next = b.CreateAdd(i, b.getInt64(1), "next", true, true);
  i->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpSLT(next, n), loop, exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();

  return finish(std::move(module), std::move(context), optLevel);
}

// `void kernel(T* in0, [T* in1,] T* out)` applying fn once to <lanes x T> values: the emitters'
// own vector path, without the loop vectoriser.
MathKernel buildVectorKernel(MathFn fn, bool f64, unsigned lanes, bool viaLibm) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>("vector_math_vector_test", *context);
  llvm::Type* elem = f64 ? llvm::Type::getDoubleTy(*context) : llvm::Type::getFloatTy(*context);
  llvm::Type* vec = llvm::FixedVectorType::get(elem, lanes);
  llvm::Type* ptr = llvm::PointerType::get(*context, 0);
  const unsigned arity = texc::mathArity(fn);
  std::vector<llvm::Type*> params(arity + 1, ptr);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(*context), params, false),
                                   llvm::Function::ExternalLinkage, "kernel", *module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(*context, "entry", f));
  std::vector<llvm::Value*> args;
  for (unsigned a = 0; a < arity; ++a) args.push_back(b.CreateAlignedLoad(vec, f->getArg(a), llvm::Align(1)));
  llvm::Value* result = viaLibm ? texc::emitMathLibm(b, *module, fn, args) : texc::emitMath(b, fn, args);
  b.CreateAlignedStore(result, f->getArg(arity), llvm::Align(1));
  b.CreateRetVoid();
  return finish(std::move(module), std::move(context), 3);
}

template <class T>
std::vector<T> run(const MathKernel& kernel, const std::vector<T>& x, const std::vector<T>* y = nullptr) {
  std::vector<T> out(x.size());
  if (y) {
    using Fn = void (*)(const T*, const T*, T*, int64_t);
    reinterpret_cast<Fn>(kernel.entry)(x.data(), y->data(), out.data(), static_cast<int64_t>(x.size()));
  } else {
    using Fn = void (*)(const T*, T*, int64_t);
    reinterpret_cast<Fn>(kernel.entry)(x.data(), out.data(), static_cast<int64_t>(x.size()));
  }
  return out;
}

long double reference(MathFn fn, long double x, long double y) {
  switch (fn) {
    case MathFn::Exp: return expl(x);
    case MathFn::Log: return logl(x);
    case MathFn::Tanh: return tanhl(x);
    case MathFn::Sigmoid: return x < 0 ? expl(x) / (1 + expl(x)) : 1 / (1 + expl(-x));
    case MathFn::Erf: return erfl(x);
    case MathFn::Sin: return sinl(x);
    case MathFn::Cos: return cosl(x);
    case MathFn::Pow: return powl(x, y);
  }
  return 0;
}

// Largest errors over a sweep. Relative error is taken where |f| is at least the smallest normal
// number (below that the result itself has fewer bits); absolute error where |f| <= 1 (for exp,
// pow and log outside that range only the relative error is meaningful).
struct Errors {
  long double maxAbs = 0, maxRel = 0;
  long double worstAbsX = 0, worstRelX = 0, worstRelY = 0;
  size_t points = 0, mismatches = 0;
  std::string firstMismatch;
};

template <class T>
void compare(Errors& e, MathFn fn, T x, T y, T got) {
  ++e.points;
  const long double ref = reference(fn, x, y);
  const T rounded = static_cast<T>(ref);
  auto mismatch = [&](const char* why) {
    if (e.mismatches++ == 0) {
      char text[256];
      std::snprintf(text, sizeof text, "%s(%.17Lg, %.17Lg) = %.17Lg, expected %.20Lg (%s)", texc::mathName(fn),
                    static_cast<long double>(x), static_cast<long double>(y), static_cast<long double>(got), ref, why);
      e.firstMismatch = text;
    }
  };
  if (std::isnan(ref) || std::isnan(got)) {
    if (std::isnan(ref) != std::isnan(got)) mismatch("NaN");
    return;
  }
  if (std::isinf(ref) || std::isinf(got)) {
    // Infinite results must be exact; a finite reference may round to infinity (overflow).
    if (got != rounded && !(std::isinf(rounded) && std::fabs(got) == std::numeric_limits<T>::max()))
      mismatch("infinity");
    return;
  }
  if (ref == 0 && got == 0 && std::signbit(got) != std::signbit(rounded)) mismatch("sign of zero");
  const long double diff = std::fabs(static_cast<long double>(got) - ref);
  if (std::fabs(ref) <= 1 && diff > e.maxAbs) {
    e.maxAbs = diff;
    e.worstAbsX = x;
  }
  if (std::fabs(ref) >= std::numeric_limits<T>::min() && diff / std::fabs(ref) > e.maxRel) {
    e.maxRel = diff / std::fabs(ref);
    e.worstRelX = x;
    e.worstRelY = y;
  }
}

template <class T>
struct Sweep {
  std::vector<T> x, y;
  void add(T a, T b = 0) {
    x.push_back(a);
    y.push_back(b);
  }
};

template <class T>
T inf() {
  return std::numeric_limits<T>::infinity();
}

// Values every unary sweep includes.
template <class T>
void addSpecials(Sweep<T>& s) {
  using L = std::numeric_limits<T>;
  for (T v : {T(0), L::denorm_min(), L::min(), T(1e-30), T(1e-8), T(0.5), T(1), T(2), L::max(), inf<T>()}) {
    s.add(v);
    s.add(-v);
  }
  s.add(L::quiet_NaN());
}

template <class T>
void linspace(Sweep<T>& s, double lo, double hi, size_t n) {
  for (size_t i = 0; i < n; ++i)
    s.add(static_cast<T>(lo + (hi - lo) * static_cast<double>(i) / static_cast<double>(n - 1)));
}

// |x| log-uniform in [lo, hi], both signs.
template <class T>
void logUniform(Sweep<T>& s, std::mt19937_64& rng, double lo, double hi, size_t n) {
  std::uniform_real_distribution<double> u(std::log(lo), std::log(hi));
  for (size_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(std::exp(u(rng)));
    s.add(i % 2 ? -v : v);
  }
}

// Uniformly random bit patterns of positive finite numbers: every binade equally often.
template <class T>
void allPositive(Sweep<T>& s, std::mt19937_64& rng, size_t n) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  const T top = std::numeric_limits<T>::max();
  Bits maxBits;
  std::memcpy(&maxBits, &top, sizeof top);
  std::uniform_int_distribution<Bits> u(1, maxBits);
  for (size_t i = 0; i < n; ++i) {
    const Bits bits = u(rng);
    T v;
    std::memcpy(&v, &bits, sizeof v);
    s.add(v);
  }
}

constexpr size_t kPoints = 1'000'000;

template <class T>
Sweep<T> unarySweep(MathFn fn) {
  constexpr bool f64 = sizeof(T) == 8;
  std::mt19937_64 rng(42);
  Sweep<T> s;
  addSpecials(s);
  const size_t half = kPoints / 2, quarter = kPoints / 4;
  switch (fn) {
    case MathFn::Exp:
      for (double v : {88.72, 88.73, -87.33, -103.9, -104.0, 709.78, 709.79, -745.1, -745.2}) s.add(static_cast<T>(v));
      linspace(s, f64 ? -750 : -110, f64 ? 712 : 95, half);
      linspace(s, -1, 1, quarter);
      logUniform(s, rng, 1e-30, 1, quarter);
      break;
    case MathFn::Log:
      allPositive(s, rng, half);
      linspace(s, 0.5, 2, quarter);
      linspace(s, 1 - 1e-3, 1 + 1e-3, quarter);
      break;
    case MathFn::Tanh:
      linspace(s, f64 ? -22 : -12, f64 ? 22 : 12, half);
      logUniform(s, rng, f64 ? 1e-300 : 1e-40, 1, half);
      break;
    case MathFn::Sigmoid:
      linspace(s, f64 ? -760 : -120, f64 ? 760 : 120, half);
      linspace(s, -10, 10, half);
      break;
    case MathFn::Erf:
      linspace(s, f64 ? -7 : -5, f64 ? 7 : 5, half);
      logUniform(s, rng, f64 ? 1e-300 : 1e-40, 1, quarter);
      linspace(s, -1.5, 1.5, quarter);
      break;
    case MathFn::Sin:
    case MathFn::Cos:
      linspace(s, -1e4, 1e4, half);
      linspace(s, -7, 7, quarter);
      // Up to the documented limit of the argument reduction.
      logUniform(s, rng, f64 ? 1e-300 : 1e-40, f64 ? 0x1p47 : 0x1p19, quarter);
      break;
    case MathFn::Pow: break;
  }
  if (fn == MathFn::Sin || fn == MathFn::Cos) {
    // Beyond the reduction's domain the result is NaN by design; the check below covers that.
    std::erase_if(s.x, [](T v) { return std::isinf(v) || std::fabs(v) == std::numeric_limits<T>::max(); });
    s.y.resize(s.x.size());
  }
  return s;
}

template <class T>
Sweep<T> powSweep() {
  using L = std::numeric_limits<T>;
  std::mt19937_64 rng(7);
  Sweep<T> s;
  // Every pair of special values.
  const T specials[] = {T(0),     -T(0),     T(1),           T(-1),    T(0.5),          T(-0.5),
                        T(2),     T(-2),     T(3),           T(-3),    T(1.5),          T(-1.5),
                        inf<T>(), -inf<T>(), L::quiet_NaN(), L::min(), L::denorm_min(), L::max()};
  for (T a : specials)
    for (T b : specials) s.add(a, b);
  const size_t quarter = kPoints / 4;
  std::uniform_real_distribution<double> logX(std::log(1e-4), std::log(1e4)), y30(-30, 30), y2(-2, 2);
  for (size_t i = 0; i < quarter; ++i) s.add(static_cast<T>(std::exp(logX(rng))), static_cast<T>(y30(rng)));
  Sweep<T> anyX;
  allPositive(anyX, rng, quarter);
  for (T v : anyX.x) s.add(v, static_cast<T>(y2(rng)));
  // Results near overflow and deep in the subnormal range: y*log(x) close to the ends of exp's
  // range, where an error in log(x) is magnified the most.
  const bool f64 = sizeof(T) == 8;
  std::uniform_real_distribution<double> logWide(std::log(f64 ? 1e-300 : 1e-30), std::log(f64 ? 1e300 : 1e30));
  std::uniform_real_distribution<double> expo(f64 ? -750 : -105, f64 ? 712 : 90);
  for (size_t i = 0; i < quarter; ++i) {
    const double lx = logWide(rng);
    if (std::fabs(lx) < 1e-3) continue;
    s.add(static_cast<T>(std::exp(lx)), static_cast<T>(expo(rng) / lx));
  }
  // Negative bases with integral exponents, both parities.
  std::uniform_real_distribution<double> negX(-100, -0.01);
  std::uniform_int_distribution<int> intY(-40, 40);
  for (size_t i = 0; i < quarter; ++i) s.add(static_cast<T>(negX(rng)), static_cast<T>(intY(rng)));
  return s;
}

template <class T>
Errors measure(MathFn fn) {
  const bool f64 = sizeof(T) == 8;
  MathKernel kernel = buildKernel(fn, f64);
  Sweep<T> s = fn == MathFn::Pow ? powSweep<T>() : unarySweep<T>(fn);
  std::vector<T> out = fn == MathFn::Pow ? run(kernel, s.x, &s.y) : run(kernel, s.x);
  Errors e;
  for (size_t i = 0; i < out.size(); ++i) compare(e, fn, s.x[i], s.y[i], out[i]);
  std::printf("vector-math %-3s %-7s max_abs=%9.3Le max_rel=%9.3Le (%.4g ulp) points=%zu worst_rel_at=(%.9Lg, %.9Lg)\n",
              f64 ? "f64" : "f32", texc::mathName(fn), e.maxAbs, e.maxRel,
              static_cast<double>(e.maxRel / std::numeric_limits<T>::epsilon()), e.points, e.worstRelX, e.worstRelY);
  return e;
}

// Whether the IR calls any function other than an LLVM intrinsic (libm, say).
bool callsNonIntrinsic(const std::string& ir) {
  size_t at = 0;
  while ((at = ir.find(" call ", at)) != std::string::npos) {
    const size_t callee = ir.find('@', at);
    const size_t lineEnd = ir.find('\n', at);
    at += 6;
    if (callee == std::string::npos || callee > lineEnd) continue;
    if (ir.compare(callee + 1, 5, "llvm.") != 0) return true;
  }
  return false;
}

struct Bound {
  MathFn fn;
  double absF32, relF32, absF64, relF64;  // 0: not checked (not meaningful for the function)
};

// Slightly above the measured maxima documented in docs/vector-math.md.
constexpr Bound kBounds[] = {
    {MathFn::Exp, 5e-8, 8e-8, 1e-16, 1.5e-16},
    {MathFn::Log, 6e-8, 1e-7, 1.25e-16, 2.3e-16},
    {MathFn::Tanh, 1.9e-7, 2.1e-7, 3.5e-16, 4.1e-16},
    {MathFn::Sigmoid, 1.1e-7, 2.2e-7, 2.1e-16, 4.1e-16},
    {MathFn::Erf, 9e-8, 1.4e-7, 1.25e-16, 1.6e-16},
    {MathFn::Sin, 9e-8, 0, 1.65e-16, 0},
    {MathFn::Cos, 9e-8, 0, 1.55e-16, 0},
    {MathFn::Pow, 4e-8, 7.5e-8, 8e-17, 1.9e-16},
};

template <class T>
void checkFunction(const Bound& bound) {
  const bool f64 = sizeof(T) == 8;
  const Errors e = measure<T>(bound.fn);
  INFO(texc::mathName(bound.fn) << (f64 ? " f64" : " f32") << ": max abs " << static_cast<double>(e.maxAbs)
                                << ", max rel " << static_cast<double>(e.maxRel) << " over " << e.points << " points");
  INFO("first mismatch: " << e.firstMismatch);
  CHECK(e.points >= kPoints);
  CHECK(e.mismatches == 0);
  const double absBound = f64 ? bound.absF64 : bound.absF32;
  const double relBound = f64 ? bound.relF64 : bound.relF32;
  if (absBound > 0) CHECK(e.maxAbs <= absBound);
  if (relBound > 0) CHECK(e.maxRel <= relBound);
}

}  // namespace

TEST_CASE("vector math f32 matches libm over the whole domain", "[llvm][vector-math]") {
  for (const Bound& bound : kBounds) {
    SECTION(texc::mathName(bound.fn)) { checkFunction<float>(bound); }
  }
}

TEST_CASE("vector math f64 matches libm over the whole domain", "[llvm][vector-math]") {
  for (const Bound& bound : kBounds) {
    SECTION(texc::mathName(bound.fn)) { checkFunction<double>(bound); }
  }
}

TEST_CASE("sin and cos are NaN outside the reduction's domain", "[llvm][vector-math]") {
  for (MathFn fn : {MathFn::Sin, MathFn::Cos}) {
    MathKernel kf = buildKernel(fn, false);
    const std::vector<float> xf = {0x1p19f, 0x1.000002p19f, 1e30f, -1e30f, inf<float>(), -inf<float>()};
    const std::vector<float> of = run(kf, xf);
    CHECK(std::fabs(of[0] - static_cast<float>(fn == MathFn::Sin ? std::sin(0x1p19) : std::cos(0x1p19))) < 1e-6f);
    for (size_t i = 1; i < xf.size(); ++i) CHECK(std::isnan(of[i]));
    MathKernel kd = buildKernel(fn, true);
    const std::vector<double> xd = {0x1p47, 0x1.0000000000001p47, 1e300, -inf<double>()};
    const std::vector<double> od = run(kd, xd);
    CHECK(std::fabs(od[0] - static_cast<double>(fn == MathFn::Sin ? sinl(0x1p47L) : cosl(0x1p47L))) < 1e-15);
    for (size_t i = 1; i < xd.size(); ++i) CHECK(std::isnan(od[i]));
  }
}

TEST_CASE("pow follows numpy for negative bases and exact integer powers", "[llvm][vector-math]") {
  MathKernel kf = buildKernel(MathFn::Pow, false);
  const std::vector<float> xf = {-2, -2, -8, 2, 10, -0.0f, -0.0f, 0};
  const std::vector<float> yf = {3, 2, 1.0f / 3, 10, -2, -1, 0.5f, -0.5f};
  const std::vector<float> of = run(kf, xf, &yf);
  CHECK(of[0] == -8);
  CHECK(of[1] == 4);
  CHECK(std::isnan(of[2]));
  CHECK(of[3] == 1024);
  CHECK(of[4] == 0.01f);
  CHECK(of[5] == -inf<float>());
  CHECK((of[6] == 0 && !std::signbit(of[6])));
  CHECK(of[7] == inf<float>());
  MathKernel kd = buildKernel(MathFn::Pow, true);
  const std::vector<double> xd = {-3, 10, -1, 0.5, 7, 2, -2};
  const std::vector<double> yd = {5, 15, -inf<double>(), 1074, 2, 0.5, 0.5};
  const std::vector<double> od = run(kd, xd, &yd);
  // Exactly representable results come out exact: the exponent is carried in double-double.
  CHECK(od[0] == -243);
  CHECK(od[1] == 1e15);
  CHECK(od[2] == 1);
  CHECK(od[3] == std::numeric_limits<double>::denorm_min());
  CHECK(od[4] == 49);
  CHECK(std::fabs(od[5] - std::sqrt(2.0)) <= 0x1p-52);
  CHECK(std::isnan(od[6]));
}

TEST_CASE("the optimised f32 tanh loop is vectorised and calls no libm", "[llvm][vector-math]") {
  const MathKernel inlined = buildKernel(MathFn::Tanh, false);
  const bool wide = inlined.optimizedIR.find("<8 x float>") != std::string::npos ||
                    inlined.optimizedIR.find("<16 x float>") != std::string::npos;
  CHECK(wide);
  CHECK(inlined.optimizedIR.find("tanhf") == std::string::npos);
  CHECK_FALSE(callsNonIntrinsic(inlined.optimizedIR));
  // The check above would notice a libm call: the libm variant has one.
  const MathKernel libm = buildKernel(MathFn::Tanh, false, true);
  CHECK(libm.optimizedIR.find("tanhf") != std::string::npos);
  CHECK(callsNonIntrinsic(libm.optimizedIR));
  const std::vector<float> x = {-1, 0, 0.5f};
  const std::vector<float> a = run(inlined, x), b = run(libm, x);
  for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(a[i] - b[i]) <= 1e-7f);
}

TEST_CASE("every f32 and f64 function vectorises", "[llvm][vector-math]") {
  for (MathFn fn :
       {MathFn::Exp, MathFn::Log, MathFn::Tanh, MathFn::Sigmoid, MathFn::Erf, MathFn::Sin, MathFn::Cos, MathFn::Pow}) {
    for (bool f64 : {false, true}) {
      INFO(texc::mathName(fn) << (f64 ? " f64" : " f32"));
      const std::string ir = buildKernel(fn, f64).optimizedIR;
      const char* elem = f64 ? " x double>" : " x float>";
      CHECK(ir.find(elem) != std::string::npos);
      CHECK_FALSE(callsNonIntrinsic(ir));
    }
  }
}

namespace {

template <class T>
bool sameBits(T a, T b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

template <class T>
void checkVectorAndLevels(MathFn fn) {
  const bool f64 = sizeof(T) == 8;
  const std::vector<T> x = {T(-3.5), T(-1),      T(-0.25), T(0),     T(0.1),    T(0.75),
                            T(2),    T(1.25e3),  -T(0),    inf<T>(), -inf<T>(), std::numeric_limits<T>::quiet_NaN(),
                            T(7),    T(-2.5e-3), T(40),    T(3)};
  const std::vector<T> y = {T(2), T(-3), T(0.5), T(-1), T(3),  T(2.5), T(-0.5), T(1.5),
                            T(3), T(-2), T(3),   T(1),  T(-7), T(2),   T(0.25), T(-4)};
  const bool binary = texc::mathArity(fn) == 2;
  const std::vector<T> scalarO3 = binary ? run(buildKernel(fn, f64), x, &y) : run(buildKernel(fn, f64), x);
  // The expansion is deterministic IEEE arithmetic: every level and every vector width agree bitwise.
  for (int level = 0; level <= 2; ++level) {
    MathKernel k = buildKernel(fn, f64, false, level);
    const std::vector<T> got = binary ? run(k, x, &y) : run(k, x);
    for (size_t i = 0; i < x.size(); ++i) CHECK(sameBits(got[i], scalarO3[i]));
  }
  for (unsigned lanes : {2u, 4u, 8u, 16u}) {
    std::vector<T> out(16);
    for (bool viaLibm : {false, true}) {
      INFO("lanes " << lanes << (viaLibm ? " via libm" : " inline"));
      MathKernel k = buildVectorKernel(fn, f64, lanes, viaLibm);
      for (size_t start = 0; start < x.size(); start += lanes) {
        if (binary)
          reinterpret_cast<void (*)(const T*, const T*, T*)>(k.entry)(&x[start], &y[start], &out[start]);
        else
          reinterpret_cast<void (*)(const T*, T*)>(k.entry)(&x[start], &out[start]);
      }
      for (size_t i = 0; i < x.size(); ++i) {
        INFO("x = " << x[i] << ", y = " << y[i] << ": " << out[i] << " vs " << scalarO3[i]);
        if (viaLibm)
          CHECK((sameBits(out[i], scalarO3[i]) ||
                 std::fabs(out[i] - scalarO3[i]) <= 4 * std::numeric_limits<T>::epsilon() * std::fabs(scalarO3[i])));
        else
          CHECK(sameBits(out[i], scalarO3[i]));
      }
    }
  }
}

}  // namespace

TEST_CASE("vector arguments, libm calls and all optimisation levels agree", "[llvm][vector-math]") {
  for (MathFn fn :
       {MathFn::Exp, MathFn::Log, MathFn::Tanh, MathFn::Sigmoid, MathFn::Erf, MathFn::Sin, MathFn::Cos, MathFn::Pow}) {
    INFO(texc::mathName(fn));
    checkVectorAndLevels<float>(fn);
    checkVectorAndLevels<double>(fn);
  }
}

TEST_CASE("the emitters restore the builder's fast-math flags", "[llvm][vector-math]") {
  llvm::LLVMContext context;
  llvm::Module module("fmf", context);
  llvm::Type* f32 = llvm::Type::getFloatTy(context);
  auto* f =
      llvm::Function::Create(llvm::FunctionType::get(f32, {f32}, false), llvm::Function::ExternalLinkage, "f", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", f));
  llvm::FastMathFlags fast;
  fast.setFast();
  b.setFastMathFlags(fast);
  llvm::Value* v = texc::emitTanh(b, f->getArg(0));
  CHECK(b.getFastMathFlags().isFast());
  // None of the emitted instructions carries a fast-math flag.
  for (const llvm::Instruction& inst : f->getEntryBlock())
    if (llvm::isa<llvm::FPMathOperator>(inst)) CHECK_FALSE(inst.getFastMathFlags().any());
  b.CreateRet(v);
}
