// texc run --profile's parts: the sampler (runtime/Sampler.h) and the report (Profile.h) over code
// the JIT linked (JitFunctions.h).

#include <catch2/catch.hpp>

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "compiler/backend/llvm/OrcJIT.h"
#include "compiler/backend/llvm/Profile.h"
#include "runtime/Sampler.h"

namespace {

// double spin(i64 n): a loop of n dependent multiply-adds on doubles (volatile-free: the chain
// keeps it from being folded), so that a sampled call spends its time in one loop.
void addSpin(llvm::Module& m) {
  llvm::LLVMContext& ctx = m.getContext();
  llvm::Type* f64 = llvm::Type::getDoubleTy(ctx);
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(f64, {i64}, false), llvm::Function::ExternalLinkage, "spin", m);
  auto* entry = llvm::BasicBlock::Create(ctx, "entry", f);
  auto* loop = llvm::BasicBlock::Create(ctx, "loop", f);
  auto* exit = llvm::BasicBlock::Create(ctx, "exit", f);
  llvm::IRBuilder<> b(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode* i = b.CreatePHI(i64, 2);
  llvm::PHINode* x = b.CreatePHI(f64, 2);
  i->addIncoming(b.getInt64(0), entry);
  x->addIncoming(llvm::ConstantFP::get(f64, 1.0), entry);
  llvm::Value* next = b.CreateFAdd(b.CreateFMul(x, llvm::ConstantFP::get(f64, 0.999999)), llvm::ConstantFP::get(f64, 1e-6));
  llvm::Value* i1 = b.CreateAdd(i, b.getInt64(1));
  i->addIncoming(i1, loop);
  x->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpULT(i1, f->getArg(0)), loop, exit);
  b.SetInsertPoint(exit);
  b.CreateRet(next);
}

struct Spin {
  texc::OrcJIT jit{2};
  double (*fn)(int64_t) = nullptr;
  Spin() {
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = std::make_unique<llvm::Module>("profile_test", *context);
    addSpin(*module);
    jit.addModule(std::move(module), std::move(context));
    fn = reinterpret_cast<double (*)(int64_t)>(jit.lookup("spin"));
  }
  texc::JitFunction function() const {
    for (const texc::JitFunction& f : jit.linkedFunctions.all())
      if (f.name == "spin") return f;
    throw std::logic_error("spin not listed");
  }
};

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("the JIT lists the functions it links, with their addresses and sizes", "[llvm][profile]") {
  Spin spin;
  const texc::JitFunction f = spin.function();
  CHECK(f.start == reinterpret_cast<uintptr_t>(spin.fn));
  CHECK(f.size > 0);
  CHECK(spin.fn(10) > 0);
}

TEST_CASE("profile report: shares by function and the loop's instructions, from given samples", "[llvm][profile]") {
  Spin spin;
  const texc::JitFunction f = spin.function();
  const texc::CpuTarget cpu = texc::cpuTarget("host");

  SECTION("no samples: says so") {
    const std::string r = texc::profileReport({f}, {}, cpu, 0, 0.001);
    CHECK(contains(r, "profile: 0 samples"));
    CHECK(contains(r, "no samples"));
  }
  SECTION("samples outside the JIT's code") {
    const std::vector<uintptr_t> samples(10, reinterpret_cast<uintptr_t>(&contains));
    const std::string r = texc::profileReport({f}, samples, cpu, 3, 1.0);
    CHECK(contains(r, "profile: 10 samples over 1.000 s of CPU time (all threads); 3 more not kept"));
    CHECK(contains(r, "100.0%  outside the JIT's code"));
    CHECK_FALSE(contains(r, "spin"));
  }
  SECTION("a sample on every byte of the function: the loop's instructions each get theirs") {
    std::vector<uintptr_t> samples;
    for (size_t b = 0; b < f.size; ++b) samples.push_back(f.start + b);
    texc::ProfileOptions options;
    options.loops = 1;
    options.minLoopShare = 0.0;
    const std::string r = texc::profileReport({f}, samples, cpu, 0, 1.0, options);
    INFO(r);
    CHECK(contains(r, "100.0%  spin"));
    CHECK(contains(r, "  0.0%  outside the JIT's code"));
    CHECK(contains(r, "of the samples in a loop of spin ("));
    CHECK((contains(r, "mul") || contains(r, "fmadd")));  // the loop's product
    CHECK(contains(r, "+0x"));
    CHECK_FALSE(contains(r, "by statement"));  // no line table, no listing
  }
  SECTION("with a line table: the samples by statement, and each instruction's line") {
    texc::JitFunction lined = f;
    lined.lines = {{f.start, 2}, {f.start + f.size, 0}};  // the whole function made for line 2
    std::vector<uintptr_t> samples;
    for (size_t b = 0; b < f.size; ++b) samples.push_back(f.start + b);
    texc::ProfileOptions options;
    options.loops = 1;
    options.minLoopShare = 0.0;
    options.listing = {"kernel k0 (f32)", "  for i < 100", "    x[i] = 1"};
    const std::string r = texc::profileReport({lined}, samples, cpu, 0, 1.0, options);
    INFO(r);
    CHECK(contains(r, "by statement of the loop IR"));
    CHECK(contains(r, "100.0%     L2    for i < 100"));
    const size_t loop = r.find("of the samples in a loop of spin");
    REQUIRE(loop != std::string::npos);
    CHECK(r.find(" L2    ", loop) != std::string::npos);  // the loop's instructions, tagged
    CHECK_FALSE(contains(r, "L3"));
  }
}

TEST_CASE("sampler: a busy JIT loop is where the samples land", "[llvm][profile]") {
  Spin spin;
  texc::Sampler sampler;
  sampler.start(1000);
  CHECK_THROWS_WITH(texc::Sampler().start(1000), Catch::Contains("another sampler is running"));
  double sink = 0;
  // At least half a second of CPU time: 125 ticks at Linux's 250 Hz.
  for (int round = 0; round < 1000 && sampler.addresses().size() < 100; ++round) sink += spin.fn(2'000'000);
  sampler.stop();
  CHECK(sink > 0);
  const std::vector<uintptr_t> samples = sampler.addresses();
  REQUIRE(samples.size() >= 20);
  CHECK(sampler.cpuSeconds() > 0);
  const texc::JitFunction f = spin.function();
  size_t inSpin = 0;
  for (uintptr_t pc : samples) inSpin += pc >= f.start && pc < f.start + f.size ? 1 : 0;
  CHECK(inSpin * 2 > samples.size());
  const std::string r = texc::profileReport({f}, samples, texc::cpuTarget("host"), sampler.dropped(), sampler.cpuSeconds());
  INFO(r);
  CHECK(contains(r, "of the samples in a loop of spin"));
  CHECK_THROWS_AS(texc::Sampler().start(0), std::invalid_argument);
}
