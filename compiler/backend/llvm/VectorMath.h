// Inline, vectorisable elementary functions for the CPU backend.
//
// Each emitter expands into straight-line IR at the builder's insertion point: fadd/fmul/fdiv,
// llvm.fma, fcmp/select, llvm.floor/rint/fabs/copysign and integer bit manipulation, so the loop
// vectoriser can widen a loop that uses them. No emitter calls libm. The argument may be float or
// double, scalar or vector; the result has the same type. Algorithms, domains and measured errors
// are in docs/vector-math.md. The emitters ignore (and restore) the builder's fast-math flags,
// since reassociation or no-NaN assumptions would break the error-free transformations used here.
// The code assumes hardware FMA for speed (x86-64-v3, AArch64); elsewhere llvm.fma is still
// correct but lowered to a libm call.
#pragma once

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/IR/IRBuilder.h>

#include "core/MathMode.h"  // --math=precise|fast

namespace llvm {
class Module;
class Value;
}  // namespace llvm

namespace texc {

llvm::Value* emitExp(llvm::IRBuilder<>& B, llvm::Value* x);
llvm::Value* emitLog(llvm::IRBuilder<>& B, llvm::Value* x);
llvm::Value* emitTanh(llvm::IRBuilder<>& B, llvm::Value* x);
llvm::Value* emitSigmoid(llvm::IRBuilder<>& B, llvm::Value* x);  // 1 / (1 + exp(-x))
llvm::Value* emitErf(llvm::IRBuilder<>& B, llvm::Value* x);
llvm::Value* emitSin(llvm::IRBuilder<>& B, llvm::Value* x);
llvm::Value* emitCos(llvm::IRBuilder<>& B, llvm::Value* x);
// C99/numpy pow semantics, including negative x with integral y and the special cases of C99 F.9.4.4.
llvm::Value* emitPow(llvm::IRBuilder<>& B, llvm::Value* x, llvm::Value* y);

enum class MathFn { Exp, Log, Tanh, Sigmoid, Erf, Sin, Cos, Pow };

// Number of arguments (2 for Pow, else 1) and a lower-case name ("exp", "sigmoid", ...).
unsigned mathArity(MathFn fn);
const char* mathName(MathFn fn);

// The inline expansion of fn (one of the emitters above).
llvm::Value* emitMath(llvm::IRBuilder<>& B, MathFn fn, llvm::ArrayRef<llvm::Value*> args,
                      MathMode mode = MathMode::Precise);

// How exp(x) for x <= 0 gives +0 below the underflow limit (about -104 in f32). Select: a select
// after the arithmetic; with AVX-512 it becomes the last product masked off for those lanes, which
// on Intel cores saves a microcode assist per underflowing vector (docs/vector-math.md). Clamp:
// the argument clamped low enough (-120) that the last product itself rounds to +0; the same
// bits, a compare and an and fewer per vector, for targets where the select would be an and after
// the product anyway and save no time (AVX2), or whose products underflow at full speed (AMD).
enum class UnderflowZero { Select, Clamp };

// exp(x) for an x the caller has proved to be <= 0 or NaN (softmax's x - max(x): the
// nonpositive-exp pass marks such calls): the same bits as emitMath's exp in the same mode, with
// fewer operations in f32 (no overflow to guard against; precise: 2^n in one exact product; fast:
// 2^n as a product rather than an integer addition, which carries NaN without a select). `zero`
// applies to the precise form; the fast one flushes below -87.3 by a select.
llvm::Value* emitExpNonPositive(llvm::IRBuilder<>& B, llvm::Value* x, MathMode mode = MathMode::Precise,
                                UnderflowZero zero = UnderflowZero::Select);

// fn through libm instead ("expf"/"exp", ...; sigmoid via exp), for unoptimised builds and as a
// reference. Vector arguments are split into one call per lane, so such loops do not vectorise.
llvm::Value* emitMathLibm(llvm::IRBuilder<>& B, llvm::Module& M, MathFn fn, llvm::ArrayRef<llvm::Value*> args);

// A call to the C function `name` whose parameters and result all have args[0]'s scalar type;
// vector arguments are handled lane by lane. The declaration is marked nounwind, willreturn and
// memory(none), i.e. errno is ignored as with -fno-math-errno.
llvm::Value* emitLibmCall(llvm::IRBuilder<>& B, llvm::Module& M, llvm::StringRef name,
                          llvm::ArrayRef<llvm::Value*> args);

}  // namespace texc
