// A JIT-compiled loop that applies one of texc's elementary functions (compiler/backend/llvm/
// VectorMath.h) to arrays, for the tools and tests that measure or exercise the emitters:
//
//   auto loop = texc::tools::MathLoop::compile(MathFn::Exp, /*f64=*/false, {.mode = MathMode::Fast});
//   loop.apply(in.data(), out.data(), n);           // out[i] = exp(in[i]), i < n
//   pow.apply(x.data(), y.data(), out.data(), n);   // binary functions: out[i] = pow(x[i], y[i])
//
// The loop is `void kernel(T* noalias in0, [T* noalias in1,] T* noalias out, i64 n)` around
// emitMath (or emitMathLibm), optimised for the host CPU at the given level (at O3 the loop
// vectoriser widens it, as it does in generated code) and compiled by texc's OrcJIT. A compiled
// loop is immutable: apply may run on several threads at once.
#pragma once

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "compiler/backend/llvm/VectorMath.h"

namespace texc::tools {

struct MathLoopOptions {
  MathMode mode = MathMode::Precise;
  int optLevel = 3;      // 0..3, for both the IR pipeline and the JIT's code generator
  bool viaLibm = false;  // emitMathLibm (one libm call per element) instead of the inline expansion
};

class MathLoop {
 public:
  // Builds, optimises and JIT-compiles the loop; throws std::runtime_error when LLVM fails.
  static MathLoop compile(MathFn fn, bool f64, const MathLoopOptions& options = {}) {
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("math_loop", *context);
    llvm::Type* elem = f64 ? llvm::Type::getDoubleTy(*context) : llvm::Type::getFloatTy(*context);
    llvm::Type* ptr = llvm::PointerType::get(*context, 0);
    llvm::Type* i64 = llvm::Type::getInt64Ty(*context);
    const unsigned arity = mathArity(fn);
    std::vector<llvm::Type*> params(arity + 1, ptr);
    params.push_back(i64);
    auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(*context), params, false);
    auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, "kernel", *module);
    for (unsigned a = 0; a <= arity; ++a) f->addParamAttr(a, llvm::Attribute::NoAlias);

    auto* entry = llvm::BasicBlock::Create(*context, "entry", f);
    auto* body = llvm::BasicBlock::Create(*context, "loop", f);
    auto* exit = llvm::BasicBlock::Create(*context, "exit", f);
    llvm::IRBuilder<> b(entry);
    llvm::Value* n = f->getArg(arity + 1);
    b.CreateCondBr(b.CreateICmpSGT(n, b.getInt64(0)), body, exit);
    b.SetInsertPoint(body);
    llvm::PHINode* i = b.CreatePHI(i64, 2);
    i->addIncoming(b.getInt64(0), entry);
    std::vector<llvm::Value*> args;
    for (unsigned a = 0; a < arity; ++a) args.push_back(b.CreateLoad(elem, b.CreateGEP(elem, f->getArg(a), i)));
    llvm::Value* result =
        options.viaLibm ? emitMathLibm(b, *module, fn, args) : emitMath(b, fn, args, options.mode);
    b.CreateStore(result, b.CreateGEP(elem, f->getArg(arity), i));
    llvm::Value* next = b.CreateAdd(i, b.getInt64(1), "next", /*HasNUW=*/true, /*HasNSW=*/true);
    i->addIncoming(next, body);
    b.CreateCondBr(b.CreateICmpSLT(next, n), body, exit);
    b.SetInsertPoint(exit);
    b.CreateRetVoid();

    auto machine = createHostTargetMachine(options.optLevel);
    optimizeModule(*module, *machine, options.optLevel);
    MathLoop loop;
    loop.fn_ = fn;
    loop.f64_ = f64;
    loop.optimizedIR_ = printModule(*module);
    loop.jit_ = std::make_unique<OrcJIT>(options.optLevel);
    loop.jit_->addModule(std::move(module), std::move(context));
    loop.entry_ = loop.jit_->lookup("kernel");
    return loop;
  }

  MathFn fn() const { return fn_; }
  bool f64() const { return f64_; }
  // The module after optimisation, as .ll text (to check that the loop vectorised, say).
  const std::string& optimizedIR() const { return optimizedIR_; }

  // out[i] = fn(in[i]) for i < n. T must be the loop's type (double when compiled with f64).
  template <class T>
  void apply(const T* in, T* out, std::size_t n) const {
    check<T>(1);
    reinterpret_cast<void (*)(const T*, T*, int64_t)>(entry_)(in, out, static_cast<int64_t>(n));
  }

  // out[i] = fn(x[i], y[i]) for i < n, for binary functions (pow).
  template <class T>
  void apply(const T* x, const T* y, T* out, std::size_t n) const {
    check<T>(2);
    reinterpret_cast<void (*)(const T*, const T*, T*, int64_t)>(entry_)(x, y, out, static_cast<int64_t>(n));
  }

 private:
  template <class T>
  void check(unsigned arity) const {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "MathLoop works on float or double");
    if (std::is_same_v<T, double> != f64_)
      throw std::logic_error(std::string("MathLoop: ") + mathName(fn_) + " was compiled for " +
                             (f64_ ? "double" : "float"));
    if (arity != mathArity(fn_))
      throw std::logic_error(std::string("MathLoop: ") + mathName(fn_) + " takes " +
                             std::to_string(mathArity(fn_)) + " argument(s)");
  }

  MathFn fn_ = MathFn::Exp;
  bool f64_ = false;
  std::string optimizedIR_;
  std::unique_ptr<OrcJIT> jit_;
  void* entry_ = nullptr;
};

}  // namespace texc::tools
