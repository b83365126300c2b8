// LLVMTarget (host TargetMachine, pipeline, emission) and OrcJIT (adding, lookup, host symbols,
// the perf map).

#include <catch2/catch.hpp>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "compiler/backend/llvm/JitFunctions.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

struct OwnedModule {
  std::unique_ptr<llvm::LLVMContext> context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = std::make_unique<llvm::Module>("target_test", *context);
};

// i32 add_ints(i32 a, i32 b) { return a + b; }
void addIntAdder(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* i32 = llvm::Type::getInt32Ty(ctx);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(i32, {i32, i32}, false), llvm::Function::ExternalLinkage,
                                   "add_ints", m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  b.CreateRet(b.CreateAdd(f->getArg(0), f->getArg(1)));
}

// double `name`(double x) { return callee(x) + 1; } where callee is external.
void addCaller(llvm::Module& m, const std::string& name, const std::string& callee) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* f64 = llvm::Type::getDoubleTy(ctx);
  auto* type = llvm::FunctionType::get(f64, {f64}, false);
  llvm::FunctionCallee target = m.getOrInsertFunction(callee, type);
  auto* f = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  b.CreateRet(b.CreateFAdd(b.CreateCall(target, {f->getArg(0)}), llvm::ConstantFP::get(f64, 1.0)));
}

}  // namespace

extern "C" double texc_test_triple(double x) { return 3 * x; }

TEST_CASE("host target machine uses the host CPU", "[llvm]") {
  auto tm = texc::createHostTargetMachine(3);
  REQUIRE(tm);
  CHECK(tm->getTargetCPU().str() == texc::hostCPUName());
  const auto features = texc::hostCPUFeatures();
  REQUIRE_FALSE(features.empty());
  for (const std::string& f : features) CHECK((f[0] == '+' || f[0] == '-'));
  CHECK_THROWS_AS(texc::createHostTargetMachine(4), std::invalid_argument);
  CHECK_THROWS_AS(texc::createHostTargetMachine(-1), std::invalid_argument);
}

TEST_CASE("modules print, optimise at every level and emit assembly and objects", "[llvm]") {
  auto tm = texc::createHostTargetMachine(2);
  for (int level = 0; level <= 3; ++level) {
    OwnedModule om;
    addIntAdder(*om.module);
    texc::optimizeModule(*om.module, *tm, level);
    CHECK_FALSE(om.module->getTargetTriple().empty());
    CHECK(texc::printModule(*om.module).find("define") != std::string::npos);
  }
  OwnedModule om;
  addIntAdder(*om.module);
  const std::string before = texc::printModule(*om.module);
  CHECK(before.find("add i32") != std::string::npos);
  const std::string assembly = texc::emitAssembly(*om.module, *tm);
  CHECK_FALSE(assembly.empty());
  CHECK(assembly.find("add_ints") != std::string::npos);
  const std::string object = texc::emitObject(*om.module, *tm);
  REQUIRE(object.size() > 4);
#ifdef __linux__
  CHECK(object.compare(0, 4,
                       "\x7f"
                       "ELF") == 0);
#endif
  // Emission works on a copy; the module itself is untouched (apart from its new triple).
  texc::configureModule(*om.module, *tm);
  OwnedModule reference;
  addIntAdder(*reference.module);
  texc::configureModule(*reference.module, *tm);
  CHECK(texc::printModule(*om.module) == texc::printModule(*reference.module));
}

TEST_CASE("optimizeModule rejects an invalid module with the verifier's message", "[llvm]") {
  OwnedModule om;
  llvm::LLVMContext& ctx = *om.context;
  auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), false),
                                   llvm::Function::ExternalLinkage, "broken", *om.module);
  llvm::BasicBlock::Create(ctx, "entry", f);  // no terminator
  auto tm = texc::createHostTargetMachine(3);
  CHECK_THROWS_WITH(texc::optimizeModule(*om.module, *tm, 3), Catch::Contains("invalid LLVM module"));
}

TEST_CASE("OrcJIT runs code, resolves host symbols and reports missing ones", "[llvm]") {
  texc::OrcJIT jit(3);
  OwnedModule om;
  addIntAdder(*om.module);
  addCaller(*om.module, "cos_plus_one", "cos");                  // from libm, via the process
  addCaller(*om.module, "triple_plus_one", "texc_test_triple");  // registered by hand below
  jit.addSymbol("texc_test_triple", reinterpret_cast<void*>(&texc_test_triple));
  jit.addModule(std::move(om.module), std::move(om.context));

  auto add = reinterpret_cast<int (*)(int, int)>(jit.lookup("add_ints"));
  CHECK(add(2, 3) == 5);
  auto cosPlusOne = reinterpret_cast<double (*)(double)>(jit.lookup("cos_plus_one"));
  CHECK(cosPlusOne(0.5) == std::cos(0.5) + 1);
  auto triplePlusOne = reinterpret_cast<double (*)(double)>(jit.lookup("triple_plus_one"));
  CHECK(triplePlusOne(2) == 7);

  CHECK_THROWS_AS(jit.lookup("texc_no_such_symbol"), std::runtime_error);
  CHECK_THROWS_WITH(jit.lookup("texc_no_such_symbol"), Catch::Contains("texc_no_such_symbol"));
}

TEST_CASE("OrcJIT reports an unresolvable external at lookup", "[llvm]") {
  texc::OrcJIT jit(0);
  OwnedModule om;
  addCaller(*om.module, "calls_missing", "texc_missing_runtime_function");
  jit.addModule(std::move(om.module), std::move(om.context));
  CHECK_THROWS_WITH(jit.lookup("calls_missing"), Catch::Contains("texc_missing_runtime_function"));
}

TEST_CASE("TEXC_PERF_MAP lists the JIT's functions for perf, at their addresses", "[llvm]") {
  // perf's convention: /tmp/perf-PID.map, "START SIZE NAME" in hex, one function a line.
  const std::string map = "/tmp/perf-" + std::to_string(::getpid()) + ".map";
  std::remove(map.c_str());
  ::unsetenv("TEXC_PERF_MAP");
  CHECK(texc::perfMapPath().empty());
  ::setenv("TEXC_PERF_MAP", "0", 1);
  CHECK(texc::perfMapPath().empty());
  ::setenv("TEXC_PERF_MAP", "1", 1);
  REQUIRE(texc::perfMapPath() == map);
  void* address = nullptr;
  {
    texc::OrcJIT jit(2);
    OwnedModule om;
    addIntAdder(*om.module);
    jit.addModule(std::move(om.module), std::move(om.context));
    address = jit.lookup("add_ints");
    CHECK(reinterpret_cast<int (*)(int, int)>(address)(2, 3) == 5);
  }
  ::unsetenv("TEXC_PERF_MAP");
  std::ifstream in(map);
  REQUIRE(in.good());
  std::string line;
  bool found = false;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string start, size, name;
    REQUIRE(fields >> start >> size >> name);
    CHECK(std::stoull(size, nullptr, 16) > 0);
    if (name == "add_ints") found = std::stoull(start, nullptr, 16) == reinterpret_cast<uintptr_t>(address);
  }
  CHECK(found);
  std::remove(map.c_str());

  // Without the variable, a JIT writes no map.
  {
    texc::OrcJIT jit(2);
    OwnedModule om;
    addIntAdder(*om.module);
    jit.addModule(std::move(om.module), std::move(om.context));
    CHECK(jit.lookup("add_ints") != nullptr);
  }
  CHECK_FALSE(std::ifstream(map).good());
}
