#include "compiler/backend/llvm/VectorMath.h"

#include "compiler/backend/llvm/SmallTables.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace texc {

namespace {

using llvm::Value;

// Polynomial coefficients, lowest order first. They come from a Remez (minimax) fit in 40-digit
// arithmetic with the coefficients then rounded to float or double; the fitted function, interval
// and error of each are listed in docs/vector-math.md. F tables hold float-representable values.
// clang-format off
// expm1(r) = r + r^2 * Q(r) on |r| <= ln2/2: Q's coefficients.
constexpr double kExpm1F[] = {
    0x1.fffffep-2, 0x1.5554aep-3, 0x1.555676p-5, 0x1.122886p-7, 0x1.6bebdep-10};
constexpr double kExpm1D[] = {
    0x1p-1, 0x1.5555555555559p-3, 0x1.555555555553ep-5, 0x1.111111110f673p-7, 0x1.6c16c16c1f268p-10,
    0x1.a01a01b0020dap-13, 0x1.a01a017b62105p-16, 0x1.71ddf7fe17aep-19, 0x1.27e53692c22a8p-22,
    0x1.af5f68f541fafp-26, 0x1.1ee8943b97981p-29};
// f32 exp: e^r = 1 + r*(c1 + r*(c2 + ...)) on |r| <= ln2/2, these c1..c6.
constexpr double kExpF[] = {
    0x1p+0, 0x1.fffffcp-2, 0x1.55548ap-3, 0x1.55584cp-5, 0x1.123f66p-7, 0x1.6ad988p-10};
// Fast mode (f32): e^r = 1 + r*(c1 + ...) on |r| <= ln2/2, degree 4.
constexpr double kExpFastF[] = {0x1.fff998p-1, 0x1.fff552p-2, 0x1.5840f8p-3, 0x1.5b354cp-5};
// Fast mode: log1p(f) = f + f^2 * P(f) on sqrt(1/2)-1 <= f <= sqrt(2)-1, P of degree 5.
constexpr double kLogFastF[] = {
    -0x1.00011ep-1, 0x1.553016p-2, -0x1.fe5668p-3, 0x1.a2d526p-3, -0x1.7cbf7p-3, 0x1.e95f2cp-4};
// Fast mode: tanh(x) = x * P(z) / Q(z) and erf(x) = x * P(z) / Q(z), z = x^2, with Q's constant
// term 1 (not listed); for |x| up to the clamps below.
constexpr double kTanhFastPF[] = {0x1.ffffep-1, 0x1.f6c242p-4, 0x1.26c936p-9, 0x1.fb51aep-19};
constexpr double kTanhFastQF[] = {0x1.d3039ep-2, 0x1.573f98p-6, 0x1.23b71cp-13};
constexpr double kErfFastPF[] = {0x1.20dd9ap+0, 0x1.5047e4p-3, 0x1.767fb8p-5, 0x1.174658p-10};
constexpr double kErfFastQF[] = {0x1.ea6542p-2, 0x1.9961c8p-4, 0x1.578b86p-7, 0x1.0b0f02p-15};
// log((1+s)/(1-s)) = 2s + s*R(z), z = s^2 <= 0.0295: R(z) = z * (these, in z).
constexpr double kLogF[] = {
    0x1.55557cp-1, 0x1.995cbcp-2, 0x1.321d36p-2};
constexpr double kLogD[] = {
    0x1.5555555555597p-1, 0x1.999999997e2bfp-2, 0x1.249249438c6c7p-2, 0x1.c71c50a4d7042p-3,
    0x1.74668c5752d41p-3, 0x1.399984879d9aap-3, 0x1.2f5c0286662b7p-3};
// The same series with the 2s^3/3 term split off, for pow: s^5 * (these, in z).
constexpr double kLogTailD[] = {
    0x1.999999999999fp-2, 0x1.249249248df67p-2, 0x1.c71c71d92ce4bp-3, 0x1.745d0923492eep-3,
    0x1.3b18f2c48f19ap-3, 0x1.10113d29c05bcp-3, 0x1.08d3b7c96e3e4p-3};
// sin(r) = r + r^3 * S(z) and cos(r) = 1 - z/2 + z^2 * C(z), z = r^2, |r| <= 0.83.
constexpr double kSinF[] = {
    -0x1.55553ep-3, 0x1.110486p-7, -0x1.9862b4p-13};
constexpr double kCosF[] = {
    0x1.555546p-5, -0x1.6c09cp-10, 0x1.993bcep-16};
constexpr double kSinD[] = {
    -0x1.555555555553cp-3, 0x1.111111110e4e9p-7, -0x1.a01a0199ada16p-13, 0x1.71de337277be8p-19,
    -0x1.ae5cdc415f89p-26, 0x1.5d240bccd329dp-33};
constexpr double kCosD[] = {
    0x1.555555555554p-5, -0x1.6c16c16c1392cp-10, 0x1.a01a019a682e5p-16, -0x1.27e4f67261b2cp-22,
    0x1.1ee8e0fa26e19p-29, -0x1.8f29694d4919p-37};
// erf(x) = x * (2/sqrt(pi) + z * P(z)), z = x^2, for |x| < 1 (f32) or 0.75 (f64): P's coefficients.
constexpr double kErfSmallF[] = {
    -0x1.81274p-2, 0x1.ce2d28p-4, -0x1.b7fabp-6, 0x1.540a3cp-8, -0x1.a3ec54p-11, 0x1.48f0bap-14};
constexpr double kErfSmallD[] = {
    -0x1.812746b0379e2p-2, 0x1.ce2f21a04258ap-4, -0x1.b82ce31259c5fp-6, 0x1.565bcd03a579ap-8,
    -0x1.c02db127e1cf3p-11, 0x1.f9a2afac54de3p-14, -0x1.f4c5d4406c893p-17, 0x1.b90dde196bf77p-20,
    -0x1.5646aa1750cfp-23, 0x1.89f288c06f548p-27};
// erfc(x) = P(x - start) on each piece of [1, 3.92] (f32) and [0.75, 5.93] (f64).
constexpr double kErfTail24_1[] = {
    0x1.422616p-3, -0x1.a911dcp-2, 0x1.a90f48p-2, -0x1.1b1ed2p-3, -0x1.1e9568p-4, 0x1.2637eep-4,
    -0x1.3af9cep-7, -0x1.54254p-7, 0x1.ed537p-9};
constexpr double kErfTail24_1_8[] = {
    0x1.657b86p-7, -0x1.6a0594p-5, 0x1.45dc1ap-4, -0x1.4b1544p-4, 0x1.7e625cp-5, -0x1.583802p-7,
    -0x1.2b1eep-8, 0x1.faa9c8p-9, -0x1.b9319cp-11};
constexpr double kErfTail24_2_8[] = {
    0x1.3aa054p-14, -0x1.d1b7aep-12, 0x1.45a364p-10, -0x1.1afeecp-9, 0x1.4fad12p-9, -0x1.1586f6p-9,
    0x1.350fbap-10, -0x1.a0e6ep-12, 0x1.001526p-14};
constexpr double kErfTail53_0_75[] = {
    0x1.27c6d14c5e341p-2, -0x1.492e42d78d291p-1, 0x1.edc5644350f8fp-2, -0x1.b6e85917c8f3ep-6,
    -0x1.349b5ebffce77p-3, 0x1.b42a1d5847b58p-5, 0x1.b84721637b84ep-6, -0x1.2e08c78b5b753p-6,
    -0x1.2e04571f4709bp-9, 0x1.0499e0cc0326ep-8, -0x1.b185368a64232p-13, -0x1.32b2a7ce756p-11,
    0x1.b0ad40e61dep-15, 0x1.13a92145f2e6p-13, -0x1.036b60c3caf0dp-14, 0x1.6d4601c905f6ap-17,
    -0x1.33a8e2d735486p-21};
constexpr double kErfTail53_1_6[] = {
    0x1.8382120210ec1p-6, -0x1.654a4c217f9b7p-4, 0x1.1dd509b4648eap-3, -0x1.eaadb70ecd1e1p-4,
    0x1.93f9e4ad4de32p-5, 0x1.1ee63f98d9c8ep-8, -0x1.fb6a34ecf97e4p-7, 0x1.8b9e3b6c2b8b5p-8,
    0x1.d98faea7aaf2ep-11, -0x1.87a6897eb0282p-10, 0x1.4af7f55b702f1p-12, 0x1.45b29807efbc7p-13,
    -0x1.8012e795a93b7p-14, 0x1.6a0614795bd62p-20, 0x1.af3a31b310658p-17, -0x1.35ba07b46264bp-18,
    0x1.3261dd1d7b83p-21};
constexpr double kErfTail53_2_5[] = {
    0x1.aab859b20accp-12, -0x1.1d83170fc00a5p-9, 0x1.64e3dcd3cccf5p-8, -0x1.119da0c6a7f86p-7,
    0x1.1a89b9aa6766ap-7, -0x1.90e816ea7b7abp-8, 0x1.6ece075fea22cp-9, -0x1.1c67737f4c49dp-11,
    -0x1.11207c89063c3p-12, 0x1.05d1ee74ff8fep-12, -0x1.44de04cadd39ap-14, -0x1.f2a6c1a917e6fp-18,
    0x1.1d44668893a9p-16, -0x1.f33203641499fp-18, 0x1.bd7db1c33b85fp-20, -0x1.70206dc99af5dp-23,
    0x1.76c2d4419c1b5p-29};
constexpr double kErfTail53_3_5[] = {
    0x1.8ef2a9a18d982p-21, -0x1.6a597219ae64p-18, 0x1.3d0e43d6ec8ep-16, -0x1.62ccea6c7deddp-15,
    0x1.1c07726f28357p-14, -0x1.586bb3a61f155p-14, 0x1.46155d55edd44p-14, -0x1.e829334f15c26p-15,
    0x1.1f679225a4b17p-15, -0x1.014d713f28403p-16, 0x1.382bbc31e1ccfp-18, -0x1.ec196bf3d3d35p-22,
    -0x1.d24af0589f76ep-22, 0x1.459cb3914b42fp-22, -0x1.c11e0fe1b3ad4p-24, 0x1.635f7d3ee02b8p-26,
    -0x1.02d71bb6ca0a2p-29};
constexpr double kErfTail53_4_5[] = {
    0x1.b05cfe28333a4p-33, -0x1.f1e350f173c05p-30, 0x1.180fd33a5b3dep-27, -0x1.99b7d0d4be25ap-26,
    0x1.b5949f7f797f7p-25, -0x1.6b09967b15cc5p-24, 0x1.e5e927cf483d7p-24, -0x1.0c9869e6ce32p-23,
    0x1.f1491051c33fbp-24, -0x1.8341f65723b17p-24, 0x1.f8dec2b7ea807p-25, -0x1.0f29657362e03p-25,
    0x1.d2a1762b64eeap-27, -0x1.33c06b41bbc0ep-28, 0x1.2266b15711559p-30, -0x1.5b04d744484e9p-33,
    0x1.888ad0ec1c42ep-37};
// clang-format on

// Small-|x| part of erf: x * (c0 + z * P(z)), z = x^2, with c0 = 2/sqrt(pi) kept as hi + lo.
constexpr double kErfC0F[] = {0x1.20dd76p+0, -0x1.f7ac94p-25};
constexpr double kErfC0D[] = {0x1.20dd750429b6dp+0, 0x1.1ae3a914fed8p-56};

// erf for |x| >= first edge: 1 - P_i(|x| - edge_i) on [edge_i, edge_i+1), P_i fitted to erfc.
struct ErfPiece {
  double start;
  std::span<const double> coeffs;
};
constexpr ErfPiece kErfTailF[] = {{1.0, kErfTail24_1}, {1.8, kErfTail24_1_8}, {2.8, kErfTail24_2_8}};
constexpr ErfPiece kErfTailD[] = {{0.75, kErfTail53_0_75},
                                  {1.6, kErfTail53_1_6},
                                  {2.5, kErfTail53_2_5},
                                  {3.5, kErfTail53_3_5},
                                  {4.5, kErfTail53_4_5}};
// Above these erf rounds to +-1 (erfc(x) < half an ulp of 1).
constexpr double kErfOneF = 3.92;
constexpr double kErfOneD = 5.93;

// Range of exp's argument that still matters: beyond it the result is 0 or +inf in any case.
constexpr double kExpMaxF = 89.0, kExpMinF = -104.0;
// exp[<=0]'s clamp when it leaves the underflow to its last product (UnderflowZero::Clamp).
constexpr double kExpFlushF = -120.0;
constexpr double kExpMaxD = 710.0, kExpMinD = -746.0;
// tanh(x) rounds to +-1 beyond these.
constexpr double kTanhMaxF = 9.05, kTanhMaxD = 20.0;
// Fast mode: the smallest floats at which the rational tanh and erf above evaluate to exactly 1
// (they stay below 1 under them); and exp's normal results, for x from kExpFastMinF (the first
// float above -126 ln2) up to kExpFastMaxF = 128 * kLn2HiF, the first float whose e^x rounds to
// +inf.
constexpr double kTanhFastMaxF = 0x1.dabf1ap+2, kErfFastMaxF = 0x1.c73fa4p+1;
constexpr double kExpFastMinF = -0x1.5d589ep+6, kExpFastMaxF = 0x1.62e43p+6;
// sin/cos: largest |x| for which the three-part Cody-Waite reduction stays accurate.
constexpr double kTrigMaxF = 0x1p19, kTrigMaxD = 0x1p47;

// ln2 = hi + lo (hi rounded to the type's precision) and pi/2 = p1 + p2 + p3, for fma reductions.
constexpr double kLn2HiF = 0x1.62e43p-1, kLn2LoF = -0x1.05c61p-29;
constexpr double kLn2HiD = 0x1.62e42fefa39efp-1, kLn2LoD = 0x1.abc9e3b39803fp-56;
constexpr double kLog2eF = 0x1.715476p+0, kLog2eD = 0x1.71547652b82fep+0;
constexpr double kPio2F[] = {0x1.921fb6p+0, -0x1.777a5cp-25, -0x1.ee59dap-50};
constexpr double kPio2D[] = {0x1.921fb54442d18p+0, 0x1.1a62633145c07p-54, -0x1.f1976b7ed8fbcp-110};
constexpr double kTwoOverPiF = 0x1.45f306p-1, kTwoOverPiD = 0x1.45f306dc9c883p-1;
// For pow's extended-precision log: ln2 with a 42-bit head (k * head is exact), and 2/3 as hi + lo.
constexpr double kLn2Head42 = 0x1.62e42fefa38p-1, kLn2Tail42 = 0x1.ef35793c7673p-45;
constexpr double kTwoThirdsHi = 0x1.5555555555555p-1, kTwoThirdsLo = 0x1.5555555555555p-55;

// The IR helpers for one argument type: float or double, scalar or vector.
struct Emitter {
  llvm::IRBuilder<>& b;
  llvm::Type* ft;  // the floating-point type
  llvm::Type* it;  // integer type of the same width and lane count
  bool f64;
  int mant;  // stored mantissa bits
  int bias;  // exponent bias

  Emitter(llvm::IRBuilder<>& builder, llvm::Type* type) : b(builder), ft(type) {
    llvm::Type* scalar = type->getScalarType();
    if (!scalar->isFloatTy() && !scalar->isDoubleTy())
      throw std::invalid_argument("texc: vector math needs float or double values (or vectors of them)");
    f64 = scalar->isDoubleTy();
    mant = f64 ? 52 : 23;
    bias = f64 ? 1023 : 127;
    it = type->getWithNewType(b.getIntNTy(f64 ? 64 : 32));
  }

  double pick(double f, double d) const { return f64 ? d : f; }
  Value* c(double v) const { return llvm::ConstantFP::get(ft, v); }
  Value* ci(uint64_t v) const { return llvm::ConstantInt::get(it, v); }
  Value* inf() const { return c(std::numeric_limits<double>::infinity()); }
  Value* nan() const { return c(std::numeric_limits<double>::quiet_NaN()); }

  Value* add(Value* x, Value* y) { return b.CreateFAdd(x, y); }
  Value* sub(Value* x, Value* y) { return b.CreateFSub(x, y); }
  Value* mul(Value* x, Value* y) { return b.CreateFMul(x, y); }
  Value* div(Value* x, Value* y) { return b.CreateFDiv(x, y); }
  Value* neg(Value* x) { return b.CreateFNeg(x); }
  Value* fma(Value* x, Value* y, Value* z) { return b.CreateIntrinsic(llvm::Intrinsic::fma, {ft}, {x, y, z}); }
  Value* fabs(Value* x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x); }
  Value* floor(Value* x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, x); }
  Value* rint(Value* x) { return b.CreateUnaryIntrinsic(llvm::Intrinsic::rint, x); }
  Value* copysign(Value* mag, Value* sign) { return b.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, mag, sign); }
  Value* sel(Value* cond, Value* x, Value* y) { return b.CreateSelect(cond, x, y); }
  // Ordered comparisons are false for NaN, so `sel(olt(x, k), ...)` lets NaN through untouched.
  Value* olt(Value* x, Value* y) { return b.CreateFCmpOLT(x, y); }
  Value* ole(Value* x, Value* y) { return b.CreateFCmpOLE(x, y); }
  Value* ogt(Value* x, Value* y) { return b.CreateFCmpOGT(x, y); }
  Value* oge(Value* x, Value* y) { return b.CreateFCmpOGE(x, y); }
  Value* oeq(Value* x, Value* y) { return b.CreateFCmpOEQ(x, y); }
  Value* one(Value* x, Value* y) { return b.CreateFCmpONE(x, y); }
  Value* ult(Value* x, Value* y) { return b.CreateFCmpULT(x, y); }
  Value* isnan(Value* x) { return b.CreateFCmpUNO(x, x); }
  Value* signbit(Value* x) { return b.CreateICmpSLT(bits(x), ci(0)); }

  Value* bits(Value* x) { return b.CreateBitCast(x, it); }
  Value* fromBits(Value* i) { return b.CreateBitCast(i, ft); }
  // 1.5 * 2^mant: adding it to an integer-valued v with |v| < 2^(mant-1) leaves v, in two's
  // complement, in the low mantissa bits. Cheaper than fptosi/sitofp (which AVX2 lacks for i64)
  // and free of poison for NaN or out-of-range inputs.
  double magic() const { return f64 ? 0x1.8p52 : 0x1.8p23; }
  uint64_t magicBits() const { return f64 ? 0x4338000000000000ull : 0x4b400000ull; }
  Value* toInt(Value* v) { return b.CreateSub(bits(add(v, c(magic()))), ci(magicBits())); }
  Value* toFp(Value* i) { return sub(fromBits(b.CreateAdd(i, ci(magicBits()))), c(magic())); }
  // 2^i for an integer i in the normal exponent range.
  Value* pow2(Value* i) { return fromBits(b.CreateShl(b.CreateAdd(i, ci(bias)), ci(mant))); }

  // c[0] + x*(c[1] + x*(c[2] + ...)).
  Value* horner(Value* x, std::span<const double> coeffs) {
    Value* acc = c(coeffs.back());
    for (size_t j = coeffs.size() - 1; j-- > 0;) acc = fma(acc, x, c(coeffs[j]));
    return acc;
  }
  std::span<const double> table(std::span<const double> f, std::span<const double> d) const { return f64 ? d : f; }
};

// Restores the caller's fast-math flags on exit; the emitters need strict IEEE semantics.
struct StrictFP {
  llvm::IRBuilder<>::FastMathFlagGuard guard;
  explicit StrictFP(llvm::IRBuilder<>& b) : guard(b) { b.clearFastMathFlags(); }
};

// expm1(r) for |r| <= ln2/2 as r + r^2 * Q(r).
Value* expm1Kernel(Emitter& e, Value* r) { return e.fma(e.mul(r, r), e.horner(r, e.table(kExpm1F, kExpm1D)), r); }

struct ReducedLn2 {
  Value* n;   // integer-valued
  Value* r;   // |r| <= ln2/2
  Value* lo;  // low-order part of r, or nullptr
};

// n = rint(x / ln2) and r = x - n*ln2 by Cody-Waite with fma. `lo`, if given, is the low half of
// pow's double-double exponent; then r + lo is returned as r + (exact) low part.
ReducedLn2 reduceLn2(Emitter& e, Value* x, Value* lo) {
  Value* n = e.rint(e.mul(x, e.c(e.pick(kLog2eF, kLog2eD))));
  Value* negN = e.neg(n);
  Value* r = e.fma(negN, e.c(e.pick(kLn2HiF, kLn2HiD)), x);  // exact
  if (!lo) return {n, e.fma(negN, e.c(e.pick(kLn2LoF, kLn2LoD)), r), nullptr};
  Value* t = e.fma(negN, e.c(e.pick(kLn2LoF, kLn2LoD)), lo);
  Value* sum = e.add(r, t);
  return {n, sum, e.sub(t, e.sub(sum, r))};
}

// exp(x + lo) over the whole line: clamp to where the result is still finite and nonzero, reduce,
// evaluate, and scale by 2^n in two steps so that subnormal and near-overflow results are exact.
// exp(r) = 1 + r + r^2*Q(r) is summed as (1 + r) split exactly into hi + lo, plus the small terms,
// so the final addition is the only rounding of consequence (about half an ulp overall).
Value* expCore(Emitter& e, Value* x, Value* lo) {
  Value* hi = e.c(e.pick(kExpMaxF, kExpMaxD));
  Value* low = e.c(e.pick(kExpMinF, kExpMinD));
  Value* under = e.olt(x, low);  // +0 by a select, not an underflow (expFloat)
  Value* xc = e.sel(e.ogt(x, hi), hi, x);
  xc = e.sel(e.olt(xc, low), low, xc);
  ReducedLn2 red = reduceLn2(e, xc, lo);
  Value* small = e.mul(e.mul(red.r, red.r), e.horner(red.r, e.table(kExpm1F, kExpm1D)));
  Value* pHi = e.add(e.c(1.0), red.r);
  Value* pLo = e.add(e.sub(e.c(1.0), pHi), red.r);  // exact, as |r| < 1
  if (red.lo) small = e.fma(red.lo, pHi, small);    // exp(r + lo) ~ exp(r) * (1 + lo)
  Value* p = e.add(pHi, e.add(pLo, small));
  Value* n1 = e.floor(e.mul(red.n, e.c(0.5)));
  Value* n2 = e.sub(red.n, n1);
  return e.sel(under, e.c(0.0), e.mul(e.mul(p, e.pow2(e.toInt(n1))), e.pow2(e.toInt(n2))));
}

// e^r = 1 + r*(c1 + r*(c2 + ... + r*c6)) for float, |r| <= ln2/2, by Horner: six FMAs, with
// `scale` (a power of two) multiplying every coefficient and the 1, and so, exactly, every
// operation's result while those stay normal (each is dominated by its constant term: c_j * scale
// >= 2^-77 for the 2^-64 sigmoid uses), so the result is e^r * scale with the same significand.
// The f32 exp used it (at scale 1) until 2026-12-07, see expFloat below; sigmoid still does.
Value* expPolyFloat(Emitter& e, Value* r, double scale) {
  double c[std::size(kExpF)];
  for (size_t j = 0; j < std::size(kExpF); ++j) c[j] = kExpF[j] * scale;
  Value* h = e.c(c[std::size(kExpF) - 1]);
  for (size_t j = std::size(kExpF) - 1; j-- > 0;) h = e.fma(h, r, e.c(c[j]));
  return e.fma(h, r, e.c(scale));
}

// The f32 exp: e^x = 2^k * 2^(j/16) * e^r with x = (16k + j) ln2/16 + r, |r| <= ln2/32.
// 2^(j/16) comes from a table of 16 floats that vector code reads with one register permute
// (SmallTables.h: vpermd with AVX-512, two and a blend with AVX2), and e^r - 1 from a polynomial
// of degree 3 instead of 6 on the eight times longer interval of the plain reduction: three
// FMAs fewer per element for an integer addition and the permute. Softmax's exp loop in cache,
// 1 thread, Zen 4: 0.220 -> 0.185 ns per element; the error over every float 0.90 -> 0.997 ulp
// (the table's own rounding, up to half an ulp, adds to the final one).
//
// t = fma(x, 16/ln2, 1.5 * 2^23) leaves v = 16k + j in its low bits, in two's complement (T =
// bits(t)); n = t - 1.5 * 2^23 is v as a float. The table holds bits(2^(j/16)) - (j << 19) +
// (E << 23), so that entry + (T << 19) = bits(2^(j/16) * 2^(k + E)) (the high bits of T and the
// wrap-around drop out modulo 2^32): the scale in two integer operations and the look-up.
// e^r = 1 + r * (c1 + r * (c2 + c3 r)) on |r| <= ln2/32 * 1.002 with c1 = 1: these c1..c3, a
// minimax fit of relative error 1.6e-9 (0.013 ulp).
constexpr double kExpTableF[] = {0x1p+0, 0x1.00022p-1, 0x1.55559cp-3};
// 2^(j/16), j = 0..15, correctly rounded to float.
constexpr uint32_t kExp2SixteenthsF[16] = {
    0x3f800000u, 0x3f85aac3u, 0x3f8b95c2u, 0x3f91c3d3u, 0x3f9837f0u, 0x3f9ef532u, 0x3fa5fed7u, 0x3fad583fu,
    0x3fb504f3u, 0x3fbd08a4u, 0x3fc5672au, 0x3fce248cu, 0x3fd744fdu, 0x3fe0ccdfu, 0x3feac0c7u, 0x3ff5257du};

SmallTable exp2SixteenthsTable(int extraExponent) {
  SmallTable table{extraExponent == 0 ? "exp2_16ths" : "exp2_16ths_x2p" + std::to_string(extraExponent), {}};
  for (uint32_t j = 0; j < 16; ++j)
    table.entries[j] = kExp2SixteenthsF[j] - (j << 19) + (static_cast<uint32_t>(extraExponent) << 23);
  return table;
}

struct ExpTableParts {
  Value* tBits;  // bits of t: v = 16k + j in the low bits
  Value* p;      // e^r - 1
};

ExpTableParts reduceExpTable(Emitter& e, Value* xc) {
  Value* t = e.fma(xc, e.c(16 * kLog2eF), e.c(e.magic()));
  Value* n = e.sub(t, e.c(e.magic()));
  Value* r = e.fma(n, e.c(-kLn2HiF / 16), xc);  // exact
  r = e.fma(n, e.c(-kLn2LoF / 16), r);
  Value* q = e.fma(e.fma(e.c(kExpTableF[2]), r, e.c(kExpTableF[1])), r, e.c(kExpTableF[0]));
  return {e.bits(t), e.mul(q, r)};
}

// bits(2^(j/16) * 2^(k + extraExponent)).
Value* exp2TableScaleBits(Emitter& e, Value* tBits, int extraExponent) {
  Value* entry = emitSmallTableLookup(e.b, exp2SixteenthsTable(extraExponent), tBits);
  return e.b.CreateAdd(entry, e.b.CreateShl(tBits, e.ci(19)));
}

// exp for float: clamp, reduce, and e^x = S1 * (1 + p) * S2 with S1 = 2^(j/16) * 2^ceil(k/2) and
// S2 = 2^floor(k/2), both normal: fma(S1, p, S1) rounds once in the normal range and the product
// by S2 rounds once more, into the subnormals or to +inf at the ends. floor(k/2) = T >> 5 in the
// exponent field, as with (T << 19) above. NaN propagates through p.
// Below kExpMinF (-inf among them: a masked score) the result is selected as +0 rather than
// left to the last product's underflow: on Intel cores an underflowing product costs a microcode
// assist per vector, and AVX-512 then issues that product masked ({z}), off for those lanes.
// exp(x * 1000) for 2^20 floats in [-1, 1), half of them below the limit, on a Sapphire Rapids
// class Xeon: 2.52 -> 0.55 ms (exp(x): 0.34 ms); causal bf16 attention N = 1024, whose masked
// half is exp(-inf): 2.36 -> 1.13 ms. Results in the subnormal band, (-104, -87.3], still pay it.
Value* expFloat(Emitter& e, Value* x) {
  Value* under = e.olt(x, e.c(kExpMinF));
  Value* xc = e.sel(under, e.c(kExpMinF), x);
  xc = e.sel(e.ogt(xc, e.c(kExpMaxF)), e.c(kExpMaxF), xc);
  ExpTableParts parts = reduceExpTable(e, xc);
  Value* halfK = e.b.CreateShl(e.b.CreateAShr(parts.tBits, e.ci(5)), e.ci(23));  // floor(k/2) << 23
  Value* s1 = e.fromBits(e.b.CreateSub(exp2TableScaleBits(e, parts.tBits, 0), halfK));
  Value* s2 = e.fromBits(e.b.CreateAdd(halfK, e.ci(0x3f800000u)));
  return e.sel(under, e.c(0.0), e.mul(e.fma(s1, parts.p, s1), s2));
}

// e^xc for kExpMinF <= xc <= 0 (the caller clamps; down to kExpFlushF for the clamp form):
// expFloat's reduction, and 2^k applied as 2^(k+64) * 2^-64 (k + 64 is a normal exponent down to
// x = -130): fma(S, p, S) with S = 2^(j/16) * 2^(k+64) is 2^(k + 64 - ceil(k/2)) times expFloat's
// fma, exactly, so the product by 2^-64 rounds to expFloat's bits, with four integer operations
// fewer (the second scale factor's).
Value* expClampedNonPositiveFloat(Emitter& e, Value* xc) {
  ExpTableParts parts = reduceExpTable(e, xc);
  Value* s = e.fromBits(exp2TableScaleBits(e, parts.tBits, 64));
  return e.mul(e.fma(s, parts.p, s), e.c(0x1p-64));
}

// The same for sigmoid, with the polynomial of degree 6 on |r| <= ln2/2: sigmoid's error bound
// (2 ulp) leaves no room for the table form's extra error in u (with it: 2.10 ulp in the sweep).
Value* expClampedNonPositivePolyFloat(Emitter& e, Value* xc) {
  const double magic = e.magic() + 127 + 64;
  Value* t = e.fma(xc, e.c(kLog2eF), e.c(magic));
  Value* n = e.sub(t, e.c(magic));
  Value* r = e.fma(n, e.c(-kLn2HiF), xc);  // exact
  r = e.fma(n, e.c(-kLn2LoF), r);
  Value* p = expPolyFloat(e, r, 0x1p-64);
  return e.mul(p, e.fromBits(e.b.CreateShl(e.bits(t), e.ci(23))));
}

// exp for a float the caller knows is <= 0 or NaN (softmax's x - max(x), loops/NonPositiveExp.h):
// expFloat without the upper clamp, so expFloat's bits with a compare, a select and four integer
// operations fewer (expClampedNonPositiveFloat); with UnderflowZero::Clamp also without the
// compare and select after the arithmetic.
Value* expNonPositiveFloat(Emitter& e, Value* x, UnderflowZero zero) {
  if (zero == UnderflowZero::Clamp) {
    // At x = -120, s = 2^(j/16) * 2^-110 and fma(s, p, s) are normal, and the product by 2^-64,
    // near 2^-173, is far below half the least subnormal: +0, as the select gives.
    return expClampedNonPositiveFloat(e, e.sel(e.olt(x, e.c(kExpFlushF)), e.c(kExpFlushF), x));
  }
  Value* under = e.olt(x, e.c(kExpMinF));
  return e.sel(under, e.c(0.0), expClampedNonPositiveFloat(e, e.sel(under, e.c(kExpMinF), x)));
}

// sigmoid for float from u = exp(-|x|) in (0, 1] (expClampedNonPositivePolyFloat) and one division:
// with q = u / (1 + u), 1 - q for x >= 0 and u * (1 - q) for x < 0, both as fma(B, -q, B). The second form makes the rounding error of the division
// matter only in proportion to u, so tiny results are as accurate as u itself.
Value* sigmoidFloat(Emitter& e, Value* x) {
  Value* v = e.fromBits(e.b.CreateOr(e.bits(x), e.ci(0x80000000u)));  // -|x|
  Value* u = expClampedNonPositivePolyFloat(e, e.sel(e.olt(v, e.c(kExpMinF)), e.c(kExpMinF), v));
  Value* negQ = e.div(u, e.sub(e.c(-1.0), u));
  Value* b = e.sel(e.olt(x, e.c(0.0)), u, e.c(1.0));
  return e.fma(b, negQ, b);
}

// tanh for float. With a = min(|x|, 9.05) and u = exp(-2a): P = 1 - u = -expm1(-2a), computed as
// fma(s, E, 1 - s) with s = 2^n and E = -expm1(-v) for the reduced v = 2a + n ln2, and
// tanh(a) = P / (2 - P), all at half scale (P/2, 1 - P/2). The reduction works on h = v/2 =
// a + n ln2/2 and E/2 = h + h^2 * 2Q(2h), whose coefficients are Q's times powers of two: every
// operation is the v form's scaled by a power of two, so the same bits, without the 2a. The
// quotient q is then corrected by its exact residual: with c = P/2 - q (exact) the residual is
// c + q*P/2, and 1/(1 - P/2) = 1 + q, so tanh(a) = q + (c + q*P/2) * (1 + q). That removes the
// rounding of the denominator and of the division; what remains is the rounding of P, magnified
// up to 2x where P and the result share a binade (0.17 < a < 0.75, where the error reaches
// 1.93 ulp).
Value* tanhFloat(Emitter& e, Value* x) {
  Value* ax = e.fabs(x);
  Value* a = e.sel(e.ogt(ax, e.c(kTanhMaxF)), e.c(kTanhMaxF), ax);
  const double magic = e.magic() + 127;  // the low bits of t hold n + 127: s = 2^n
  Value* t = e.fma(a, e.c(-2 * kLog2eF), e.c(magic));
  Value* n = e.sub(t, e.c(magic));
  Value* h = e.fma(n, e.c(kLn2HiF / 2), a);  // v / 2, exact; ln2's low part is negligible here
  // -expm1(-v) / 2 = h + h^2 * (-2Q(-2h)): kExpm1F with alternating signs, coefficient j times
  // 2^(j+1), Estrin-style with h^2.
  double c[std::size(kExpm1F)];
  for (size_t j = 0; j < std::size(kExpm1F); ++j) c[j] = (j % 2 ? 1 : -1) * std::ldexp(kExpm1F[j], static_cast<int>(j) + 1);
  Value* h2 = e.mul(h, h);
  Value* negQ = e.fma(h2, e.fma(h2, e.c(c[4]), e.fma(h, e.c(c[3]), e.c(c[2]))), e.fma(h, e.c(c[1]), e.c(c[0])));
  Value* halfEm = e.fma(h2, negQ, h);
  Value* s = e.fromBits(e.b.CreateShl(e.bits(t), e.ci(23)));
  Value* halfP = e.fma(s, halfEm, e.fma(s, e.c(-0.5), e.c(0.5)));
  Value* q = e.div(halfP, e.sub(e.c(1.0), halfP));
  Value* res = e.fma(q, halfP, e.sub(halfP, q));
  return e.copysign(e.fma(res, e.add(e.c(1.0), q), q), x);
}

// Fast mode (float only). exp: one Cody-Waite step, a degree-4 polynomial and 2^n added to p's
// exponent field as an integer. That is exact while the result is normal: between the limits
// p >= 1 where n = -126 (r >= 0) and p <= 1 where n = 128 (r <= 0, as p = 1 + r * (positive)).
// Below, results flush to +0; from 128 * kLn2HiF on, where e^x rounds to +inf, the result is +inf
// (x + inf, which also passes NaN on): one select each.
Value* fastExpFloat(Emitter& e, Value* x) {
  Value* t = e.fma(x, e.c(kLog2eF), e.c(e.magic()));
  Value* n = e.sub(t, e.c(e.magic()));
  Value* r = e.fma(n, e.c(-kLn2HiF), x);
  Value* p = e.fma(e.horner(r, kExpFastF), r, e.c(1.0));
  Value* y = e.fromBits(e.b.CreateAdd(e.bits(p), e.b.CreateShl(e.bits(t), e.ci(23))));
  y = e.sel(e.olt(x, e.c(kExpFastMinF)), e.c(0.0), y);
  return e.sel(e.olt(x, e.c(kExpFastMaxF)), y, e.add(x, e.inf()));
}

// fastExpFloat for x <= 0 or NaN: the same n, r and p (the rounding constant's extra 127 leaves n
// as it is, since the constant's ulp is still 1), and 2^n applied as a product, exact as the
// integer addition is while the result is normal, which it is down to kExpFastMinF. The product
// carries NaN through, so the overflow select, which also passed NaN on, goes: a compare and a
// select fewer per vector.
Value* fastExpNonPositiveFloat(Emitter& e, Value* x) {
  const double magic = e.magic() + 127;  // the low bits of t hold n + 127: s = 2^n
  Value* t = e.fma(x, e.c(kLog2eF), e.c(magic));
  Value* n = e.sub(t, e.c(magic));
  Value* r = e.fma(n, e.c(-kLn2HiF), x);
  Value* p = e.fma(e.horner(r, kExpFastF), r, e.c(1.0));
  Value* s = e.fromBits(e.b.CreateShl(e.bits(t), e.ci(23)));
  return e.sel(e.olt(x, e.c(kExpFastMinF)), e.c(0.0), e.mul(p, s));
}

// 1 / (1 + exp(-x)) with the fast exp of -x folded in (r is negated, so the polynomial's odd
// coefficients change sign). exp(-x) flushes to 0 for x > 87.34 (result 1) and is +inf for
// x <= -88.72 (result +0, where sigmoid is below 3e-39).
Value* fastSigmoidFloat(Emitter& e, Value* x) {
  Value* t = e.fma(x, e.c(-kLog2eF), e.c(e.magic()));
  Value* n = e.sub(t, e.c(e.magic()));
  Value* r = e.fma(n, e.c(kLn2HiF), x);  // = -(-x - n ln2)
  double c[std::size(kExpFastF)];
  for (size_t j = 0; j < std::size(kExpFastF); ++j) c[j] = (j % 2 ? 1 : -1) * kExpFastF[j];
  Value* p = e.fma(e.horner(r, c), r, e.c(1.0));
  Value* u = e.fromBits(e.b.CreateAdd(e.bits(p), e.b.CreateShl(e.bits(t), e.ci(23))));
  u = e.sel(e.ogt(x, e.c(-kExpFastMinF)), e.c(0.0), u);
  u = e.sel(e.ogt(x, e.c(-kExpFastMaxF)), u, e.sub(e.inf(), x));
  return e.div(e.c(1.0), e.add(e.c(1.0), u));
}

// x * P(x^2) / Q(x^2) for x clamped to [-limit, limit] (ordered selects keep NaN); odd, so the
// clamps give exactly +-1 and -0 stays -0.
Value* fastRationalFloat(Emitter& e, Value* x, double limit, std::span<const double> P, std::span<const double> Q) {
  Value* xc = e.sel(e.ogt(x, e.c(limit)), e.c(limit), x);
  xc = e.sel(e.olt(xc, e.c(-limit)), e.c(-limit), xc);
  Value* z = e.mul(xc, xc);
  Value* den = e.fma(e.horner(z, Q), z, e.c(1.0));
  return e.div(e.mul(xc, e.horner(z, P)), den);
}

// log: x = 2^k * m with m in [sqrt(1/2), sqrt(2)) straight from the bits (k by an arithmetic
// shift and sitofp, exact for 32-bit lanes), log(m) = f + f^2 * P(f) with f = m - 1, plus k*ln2.
// Subnormal inputs count as zero (-inf), like the rest of the fast forms' flush to zero.
Value* fastLogFloat(Emitter& e, Value* x) {
  const uint64_t sqrtHalf = 0x3f3504f3;
  Value* d = e.b.CreateSub(e.bits(x), e.ci(sqrtHalf));
  Value* k = e.b.CreateSIToFP(e.b.CreateAShr(d, e.ci(23)), e.ft);
  Value* f = e.sub(e.fromBits(e.b.CreateAdd(e.b.CreateAnd(d, e.ci(0x7fffff)), e.ci(sqrtHalf))), e.c(1.0));
  Value* y = e.fma(k, e.c(kLn2HiF), e.fma(e.mul(f, f), e.horner(f, kLogFastF), f));
  Value* tiny = e.sel(e.oge(x, e.c(0.0)), e.neg(e.inf()), e.nan());  // also NaN for NaN
  y = e.sel(e.oge(x, e.c(0x1p-126)), y, tiny);
  return e.sel(e.oeq(x, e.inf()), x, y);
}

// expm1(a) for -2*kTanhMax <= a <= 0, accurate relative to the result near 0:
// expm1(n*ln2 + r) = 2^n * expm1(r) + (2^n - 1).
Value* expm1Negative(Emitter& e, Value* a) {
  ReducedLn2 red = reduceLn2(e, a, nullptr);
  Value* s = e.pow2(e.toInt(red.n));
  return e.fma(s, expm1Kernel(e, red.r), e.sub(s, e.c(1.0)));
}

// Splits a positive (possibly subnormal) x into x = 2^k * m with m in [sqrt(1/2), sqrt(2)).
// Returns {k as floating point, m}.
std::pair<Value*, Value*> splitExponent(Emitter& e, Value* x) {
  Value* tiny = e.olt(x, e.c(e.pick(0x1p-126, 0x1p-1022)));
  const int shift = e.mant + 1;
  Value* xs = e.sel(tiny, e.mul(x, e.c(std::ldexp(1.0, shift))), x);
  Value* kAdjust = e.sel(tiny, e.c(-shift), e.c(0.0));
  const uint64_t sqrtHalf = e.f64 ? 0x3fe6a09e667f3bcdull : 0x3f3504f3ull;
  const uint64_t one = e.f64 ? 0x3ff0000000000000ull : 0x3f800000ull;
  const uint64_t mantMask = (uint64_t{1} << e.mant) - 1;
  // Offsetting the bits makes the exponent field step at sqrt(1/2) instead of at 1.
  Value* t = e.b.CreateAdd(e.bits(xs), e.ci(one - sqrtHalf));
  Value* k = e.b.CreateSub(e.b.CreateLShr(t, e.ci(e.mant)), e.ci(e.bias));
  Value* m = e.fromBits(e.b.CreateAdd(e.b.CreateAnd(t, e.ci(mantMask)), e.ci(sqrtHalf)));
  return {e.add(e.toFp(k), kAdjust), m};
}

// log(x) for positive finite x (other inputs give garbage that emitLog patches).
Value* logCore(Emitter& e, Value* x) {
  auto [k, m] = splitExponent(e, x);
  // log(m) = log1p(f) = 2 atanh(s), s = f / (2 + f), in the arrangement
  // f - (hf - s*(hf + R)) with hf = f^2/2, which keeps the rounding error below an ulp.
  Value* f = e.sub(m, e.c(1.0));
  Value* s = e.div(f, e.add(f, e.c(2.0)));
  Value* z = e.mul(s, s);
  Value* R = e.mul(z, e.horner(z, e.table(kLogF, kLogD)));
  Value* hf = e.mul(e.mul(f, f), e.c(0.5));
  Value* log1pf = e.sub(f, e.sub(hf, e.mul(s, e.add(hf, R))));
  Value* rest = e.fma(k, e.c(e.pick(kLn2LoF, kLn2LoD)), log1pf);
  return e.fma(k, e.c(e.pick(kLn2HiF, kLn2HiD)), rest);
}

// log(a) for a >= 0 with IEEE special cases of a non-negative argument: 0 -> -inf, inf -> inf.
Value* logNonNegative(Emitter& e, Value* a) {
  Value* r = logCore(e, a);
  r = e.sel(e.oeq(a, e.inf()), e.inf(), r);
  r = e.sel(e.oeq(a, e.c(0.0)), e.neg(e.inf()), r);
  return e.sel(e.isnan(a), a, r);
}

// log(a) as hi + lo to about 2^-64 relative error, for a double a > 0 (pow's exponent must be
// this accurate, since an absolute error d in y*log(x) is a relative error d in the result).
std::pair<Value*, Value*> logDoubleDouble(Emitter& e, Value* a) {
  auto [k, m] = splitExponent(e, a);
  Value* f = e.sub(m, e.c(1.0));  // exact
  // s = f / (2 + f) as sh + sl.
  Value* d = e.add(f, e.c(2.0));
  Value* dl = e.sub(f, e.sub(d, e.c(2.0)));  // exact low part of 2 + f
  Value* sh = e.div(f, d);
  Value* resid = e.fma(e.neg(sh), d, f);  // exact
  resid = e.fma(e.neg(sh), dl, resid);
  Value* sl = e.div(resid, d);
  // s^3 = c3 + c3l.
  Value* z = e.mul(sh, sh);
  Value* zl = e.fma(sh, sh, e.neg(z));
  Value* c3 = e.mul(z, sh);
  Value* c3l = e.add(e.fma(z, sh, e.neg(c3)), e.fma(zl, sh, e.mul(e.mul(z, e.c(3.0)), sl)));
  // (2/3) s^3 = th + tl.
  Value* th = e.mul(e.c(kTwoThirdsHi), c3);
  Value* tl =
      e.add(e.fma(e.c(kTwoThirdsHi), c3, e.neg(th)), e.fma(e.c(kTwoThirdsHi), c3l, e.mul(e.c(kTwoThirdsLo), c3)));
  // s^5 * Q(s^2) needs only double precision.
  Value* tail = e.mul(e.mul(c3, z), e.horner(z, kLogTailD));
  // k*ln2 + 2s + (2/3)s^3 + tail, summing the large terms exactly (Fast2Sum: |k*ln2| >= |2s| or k == 0,
  // and |2s| >> |(2/3)s^3|).
  Value* A = e.mul(k, e.c(kLn2Head42));  // exact: k has at most 11 bits
  Value* B = e.mul(sh, e.c(2.0));
  Value* h1 = e.add(A, B);
  Value* e1 = e.sub(B, e.sub(h1, A));
  Value* h2 = e.add(h1, th);
  Value* e2 = e.sub(th, e.sub(h2, h1));
  Value* small = e.add(e.mul(sl, e.c(2.0)), e.add(tl, tail));
  Value* lo = e.add(e.add(e1, e2), e.fma(k, e.c(kLn2Tail42), small));
  Value* hi = e.add(h2, lo);
  lo = e.sub(lo, e.sub(hi, h2));
  return {hi, lo};
}

// Applies C99 pow's sign rules and special cases to mag = |x|^y (computed as exp(y*log|x|), which
// already gives the right 0/inf for x = 0, x = inf and y = +-inf).
Value* powSpecialCases(Emitter& e, Value* x, Value* y, Value* mag) {
  Value* one = e.c(1.0);
  Value* yInt = e.oeq(e.floor(y), y);  // true for +-inf, false for NaN
  Value* yHalf = e.mul(y, e.c(0.5));
  Value* yOdd = e.b.CreateAnd(yInt, e.one(e.floor(yHalf), yHalf));
  Value* r = e.sel(e.b.CreateAnd(e.signbit(x), yOdd), e.neg(mag), mag);
  // Finite negative x to a non-integral power has no real value.
  Value* xFiniteNeg = e.b.CreateAnd(e.olt(x, e.c(0.0)), e.ogt(x, e.neg(e.inf())));
  r = e.sel(e.b.CreateAnd(xFiniteNeg, e.b.CreateNot(yInt)), e.nan(), r);
  // pow(-1, +-inf) = 1; pow(1, y) = 1 and pow(x, 0) = 1 even for NaN.
  Value* minusOneInf = e.b.CreateAnd(e.oeq(x, e.c(-1.0)), e.oeq(e.fabs(y), e.inf()));
  r = e.sel(minusOneInf, one, r);
  return e.sel(e.b.CreateOr(e.oeq(x, one), e.oeq(y, e.c(0.0))), one, r);
}

// sin/cos share the reduction of |x|: |x| = q*pi/2 + r, |r| <= pi/4 (slightly more near the top
// of the domain), q taken mod 4.
struct TrigReduced {
  Value* r;
  Value* quadrant;  // integer 0..3
  Value* inDomain;  // |x| <= kTrigMax (false for inf and NaN)
};

TrigReduced reduceTrig(Emitter& e, Value* ax) {
  Value* inDomain = e.ole(ax, e.c(e.pick(kTrigMaxF, kTrigMaxD)));
  Value* xs = e.sel(inDomain, ax, e.c(0.0));
  Value* q = e.rint(e.mul(xs, e.c(e.pick(kTwoOverPiF, kTwoOverPiD))));
  Value* negQ = e.neg(q);
  const double* p = e.f64 ? kPio2D : kPio2F;
  // With fma each step is exact or rounds only at the size of the (small) result.
  Value* r = e.fma(negQ, e.c(p[0]), xs);
  r = e.fma(negQ, e.c(p[1]), r);
  r = e.fma(negQ, e.c(p[2]), r);
  Value* qMod4 = e.fma(e.floor(e.mul(q, e.c(0.25))), e.c(-4.0), q);  // exact
  return {r, e.toInt(qMod4), inDomain};
}

Value* sinKernel(Emitter& e, Value* r, Value* z) { return e.fma(e.mul(r, z), e.horner(z, e.table(kSinF, kSinD)), r); }

Value* cosKernel(Emitter& e, Value* z) {
  return e.fma(z, e.fma(z, e.horner(z, e.table(kCosF, kCosD)), e.c(-0.5)), e.c(1.0));
}

Value* sinOrCos(llvm::IRBuilder<>& B, Value* x, bool isCos) {
  StrictFP strict(B);
  Emitter e(B, x->getType());
  TrigReduced red = reduceTrig(e, e.fabs(x));
  Value* z = e.mul(red.r, red.r);
  // cos(x) = sin(|x| + pi/2): one quadrant further.
  Value* j = isCos ? e.b.CreateAdd(red.quadrant, e.ci(1)) : red.quadrant;
  Value* useCos = e.b.CreateICmpNE(e.b.CreateAnd(j, e.ci(1)), e.ci(0));
  Value* negate = e.b.CreateICmpNE(e.b.CreateAnd(j, e.ci(2)), e.ci(0));
  if (!isCos) negate = e.b.CreateXor(negate, e.signbit(x));  // sin is odd; keeps sin(-0) = -0
  Value* v = e.sel(useCos, cosKernel(e, z), sinKernel(e, red.r, z));
  v = e.sel(negate, e.neg(v), v);
  return e.sel(red.inDomain, v, e.nan());
}

}  // namespace

Value* emitExp(llvm::IRBuilder<>& B, Value* x) {
  StrictFP strict(B);
  Emitter e(B, x->getType());
  if (!e.f64) return expFloat(e, x);
  return expCore(e, x, nullptr);
}

Value* emitExpNonPositive(llvm::IRBuilder<>& B, Value* x, MathMode mode, UnderflowZero zero) {
  // The f64 exp has no cheaper form here: the general one.
  if (!x->getType()->getScalarType()->isFloatTy()) return emitMath(B, MathFn::Exp, {x}, mode);
  StrictFP strict(B);
  Emitter e(B, x->getType());
  return mode == MathMode::Fast ? fastExpNonPositiveFloat(e, x) : expNonPositiveFloat(e, x, zero);
}

Value* emitLog(llvm::IRBuilder<>& B, Value* x) {
  StrictFP strict(B);
  Emitter e(B, x->getType());
  Value* r = logNonNegative(e, x);
  return e.sel(e.olt(x, e.c(0.0)), e.nan(), r);
}

Value* emitTanh(llvm::IRBuilder<>& B, Value* x) {
  StrictFP strict(B);
  Emitter e(B, x->getType());
  if (!e.f64) return tanhFloat(e, x);
  Value* ax = e.fabs(x);
  Value* limit = e.c(kTanhMaxD);
  Value* a = e.sel(e.ogt(ax, limit), limit, ax);
  // tanh(a) = -t / (t + 2) with t = expm1(-2a): no cancellation anywhere, and tanh(a) = a for tiny a.
  Value* t = expm1Negative(e, e.mul(a, e.c(-2.0)));
  Value* y = e.div(e.neg(t), e.add(t, e.c(2.0)));
  return e.copysign(y, x);
}

Value* emitSigmoid(llvm::IRBuilder<>& B, Value* x) {
  StrictFP strict(B);
  Emitter e(B, x->getType());
  if (!e.f64) return sigmoidFloat(e, x);
  // With u = exp(-|x|) <= 1: 1/(1+u) for x >= 0 and u/(1+u) for x < 0, so nothing overflows and
  // results down to the subnormal range keep their relative accuracy.
  Value* u = expCore(e, e.neg(e.fabs(x)), nullptr);
  Value* num = e.sel(e.olt(x, e.c(0.0)), u, e.c(1.0));
  return e.div(num, e.add(e.c(1.0), u));
}

Value* emitErf(llvm::IRBuilder<>& B, Value* x) {
  StrictFP strict(B);
  Emitter e(B, x->getType());
  Value* ax = e.fabs(x);
  // Near 0: x * (c0 + z*P(z)) with c0 split so that erf(x) ~ 1.128x keeps full relative accuracy.
  const double* c0 = e.f64 ? kErfC0D : kErfC0F;
  Value* z = e.mul(x, x);
  Value* inner = e.fma(z, e.horner(z, e.table(kErfSmallF, kErfSmallD)), e.c(c0[1]));
  Value* small = e.fma(x, e.c(c0[0]), e.mul(x, inner));
  // Further out: piecewise erfc polynomials, the piece's coefficients chosen per lane by select.
  std::span<const ErfPiece> pieces =
      e.f64 ? std::span<const ErfPiece>(kErfTailD) : std::span<const ErfPiece>(kErfTailF);
  Value* oneAt = e.c(e.pick(kErfOneF, kErfOneD));
  Value* a = e.sel(e.ogt(ax, oneAt), oneAt, ax);
  std::vector<Value*> inPiece;
  for (size_t i = 1; i < pieces.size(); ++i) inPiece.push_back(e.oge(a, e.c(pieces[i].start)));
  auto choose = [&](auto valueOf) {
    Value* v = e.c(valueOf(pieces[0]));
    for (size_t i = 1; i < pieces.size(); ++i) v = e.sel(inPiece[i - 1], e.c(valueOf(pieces[i])), v);
    return v;
  };
  Value* u = e.sub(a, choose([](const ErfPiece& p) { return p.start; }));
  const size_t degree = pieces[0].coeffs.size() - 1;
  Value* erfc = choose([&](const ErfPiece& p) { return p.coeffs[degree]; });
  for (size_t j = degree; j-- > 0;) erfc = e.fma(erfc, u, choose([&](const ErfPiece& p) { return p.coeffs[j]; }));
  Value* tail = e.sel(e.oge(ax, oneAt), e.c(1.0), e.sub(e.c(1.0), erfc));
  // copysign also fixes erf(-0): the small-|x| sum gives +0 there.
  return e.copysign(e.sel(e.olt(ax, e.c(pieces[0].start)), small, tail), x);
}

Value* emitSin(llvm::IRBuilder<>& B, Value* x) { return sinOrCos(B, x, false); }
Value* emitCos(llvm::IRBuilder<>& B, Value* x) { return sinOrCos(B, x, true); }

Value* emitPow(llvm::IRBuilder<>& B, Value* x, Value* y) {
  StrictFP strict(B);
  if (x->getType() != y->getType()) throw std::invalid_argument("texc: pow needs arguments of one type");
  Emitter e(B, x->getType());
  Value* mag = nullptr;
  if (!e.f64) {
    // float: exp(y * log|x|) in double is exact enough that only the final rounding remains.
    llvm::Type* dty = x->getType()->getWithNewType(B.getDoubleTy());
    Emitter d(B, dty);
    Value* ax = d.fabs(B.CreateFPExt(x, dty));
    Value* t = d.mul(B.CreateFPExt(y, dty), logNonNegative(d, ax));
    mag = B.CreateFPTrunc(expCore(d, t, nullptr), x->getType());
  } else {
    // double: log|x| in double-double, so that y*log|x| is accurate to ~2^-64 relative.
    Value* ax = e.fabs(x);
    auto [lh, ll] = logDoubleDouble(e, ax);
    Value* positiveFinite = e.b.CreateAnd(e.ogt(ax, e.c(0.0)), e.olt(ax, e.inf()));
    lh = e.sel(positiveFinite, lh, logNonNegative(e, ax));
    ll = e.sel(positiveFinite, ll, e.c(0.0));
    Value* th = e.mul(y, lh);
    Value* tl = e.fma(y, ll, e.fma(y, lh, e.neg(th)));
    // The low part only matters, and is only finite, when th is finite.
    tl = e.sel(e.olt(e.fabs(th), e.c(0x1p1000)), tl, e.c(0.0));
    mag = expCore(e, th, tl);
  }
  return powSpecialCases(e, x, y, mag);
}

unsigned mathArity(MathFn fn) { return fn == MathFn::Pow ? 2 : 1; }

const char* mathName(MathFn fn) {
  switch (fn) {
    case MathFn::Exp: return "exp";
    case MathFn::Log: return "log";
    case MathFn::Tanh: return "tanh";
    case MathFn::Sigmoid: return "sigmoid";
    case MathFn::Erf: return "erf";
    case MathFn::Sin: return "sin";
    case MathFn::Cos: return "cos";
    case MathFn::Pow: return "pow";
  }
  return "?";
}

namespace {

void checkArity(MathFn fn, llvm::ArrayRef<Value*> args) {
  if (args.size() != mathArity(fn))
    throw std::invalid_argument(std::string("texc: ") + mathName(fn) + " takes " + std::to_string(mathArity(fn)) +
                                " argument(s)");
}

}  // namespace

Value* emitMath(llvm::IRBuilder<>& B, MathFn fn, llvm::ArrayRef<Value*> args, MathMode mode) {
  checkArity(fn, args);
  llvm::Type* scalar = args[0]->getType()->getScalarType();
  if (mode == MathMode::Fast && scalar->isFloatTy()) {
    // Fast forms exist for float; double, sin, cos and pow use the precise expansions.
    StrictFP strict(B);
    Emitter e(B, args[0]->getType());
    switch (fn) {
      case MathFn::Exp: return fastExpFloat(e, args[0]);
      case MathFn::Log: return fastLogFloat(e, args[0]);
      case MathFn::Tanh: return fastRationalFloat(e, args[0], kTanhFastMaxF, kTanhFastPF, kTanhFastQF);
      case MathFn::Sigmoid: return fastSigmoidFloat(e, args[0]);
      case MathFn::Erf: return fastRationalFloat(e, args[0], kErfFastMaxF, kErfFastPF, kErfFastQF);
      default: break;
    }
  }
  switch (fn) {
    case MathFn::Exp: return emitExp(B, args[0]);
    case MathFn::Log: return emitLog(B, args[0]);
    case MathFn::Tanh: return emitTanh(B, args[0]);
    case MathFn::Sigmoid: return emitSigmoid(B, args[0]);
    case MathFn::Erf: return emitErf(B, args[0]);
    case MathFn::Sin: return emitSin(B, args[0]);
    case MathFn::Cos: return emitCos(B, args[0]);
    case MathFn::Pow: return emitPow(B, args[0], args[1]);
  }
  throw std::invalid_argument("texc: unknown math function");
}

Value* emitMathLibm(llvm::IRBuilder<>& B, llvm::Module& M, MathFn fn, llvm::ArrayRef<Value*> args) {
  checkArity(fn, args);
  StrictFP strict(B);
  Emitter e(B, args[0]->getType());
  const std::string suffix = e.f64 ? "" : "f";
  if (fn == MathFn::Sigmoid) {
    // Same overflow-free arrangement as emitSigmoid.
    Value* u = emitLibmCall(B, M, "exp" + suffix, {e.neg(e.fabs(args[0]))});
    Value* num = e.sel(e.olt(args[0], e.c(0.0)), u, e.c(1.0));
    return e.div(num, e.add(e.c(1.0), u));
  }
  return emitLibmCall(B, M, mathName(fn) + suffix, args);
}

Value* emitLibmCall(llvm::IRBuilder<>& B, llvm::Module& M, llvm::StringRef name, llvm::ArrayRef<Value*> args) {
  if (args.empty()) throw std::invalid_argument("texc: a libm call needs arguments");
  llvm::Type* type = args[0]->getType();
  llvm::Type* scalar = type->getScalarType();
  std::vector<llvm::Type*> params(args.size(), scalar);
  llvm::FunctionCallee callee = M.getOrInsertFunction(name, llvm::FunctionType::get(scalar, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
    f->setDoesNotThrow();
    f->setWillReturn();
    f->setDoesNotAccessMemory();
  }
  auto* vecType = llvm::dyn_cast<llvm::FixedVectorType>(type);
  if (!vecType) return B.CreateCall(callee, args);
  Value* out = llvm::PoisonValue::get(type);
  for (unsigned lane = 0; lane < vecType->getNumElements(); ++lane) {
    std::vector<Value*> laneArgs;
    for (Value* a : args) laneArgs.push_back(B.CreateExtractElement(a, lane));
    out = B.CreateInsertElement(out, B.CreateCall(callee, laneArgs), lane);
  }
  return out;
}

}  // namespace texc
