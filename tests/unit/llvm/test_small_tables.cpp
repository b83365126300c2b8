// SmallTables: look-ups in tables of 16 entries, scalar and in vectors of 4, 8 and 16 lanes, for
// each instruction-set form (per-lane loads, AVX2 permutes and blend, AVX-512 permutes), compiled
// at O0 and O3 and run where the host can run them.

#include <catch2/catch.hpp>

#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/backend/llvm/OrcJIT.h"
#include "compiler/backend/llvm/SmallTables.h"
#include "compiler/target/CpuTarget.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

texc::SmallTable testTable() {
  texc::SmallTable table{"test", {}};
  for (uint32_t j = 0; j < 16; ++j) table.entries[j] = 0x9e3779b9u * (j + 1);  // distinct, high bits set
  return table;
}

// void look_up(const i32* in, i32* out): out = lookup(in) on one value of `width` lanes (scalar
// for width 1).
std::unique_ptr<llvm::Module> lookupModule(llvm::LLVMContext& ctx, unsigned width) {
  auto module = std::make_unique<llvm::Module>("small_tables_test", ctx);
  llvm::Type* ptr = llvm::PointerType::get(ctx, 0);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr}, false),
                                   llvm::Function::ExternalLinkage, "look_up", *module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Type* type = width == 1 ? b.getInt32Ty() : static_cast<llvm::Type*>(llvm::FixedVectorType::get(b.getInt32Ty(), width));
  llvm::Value* index = b.CreateAlignedLoad(type, f->getArg(0), llvm::Align(4));
  b.CreateAlignedStore(texc::emitSmallTableLookup(b, testTable(), index), f->getArg(1), llvm::Align(4));
  b.CreateRetVoid();
  return module;
}

}  // namespace

TEST_CASE("small-table look-ups give the table's entries at every width, form and level", "[llvm]") {
  const texc::SmallTable table = testTable();
  for (const char* cpu : {"x86-64", "haswell", "skylake-avx512", "znver4"}) {
    const texc::CpuTarget target = texc::cpuTarget(cpu);
    if (!texc::missingHostFeatures(target).empty()) {
      WARN("skipped " << cpu << ": the host lacks its instructions");
      continue;
    }
    for (int level : {0, 3}) {
      for (unsigned width : {1u, 4u, 8u, 16u}) {
        INFO(cpu << " O" << level << " width " << width);
        auto context = std::make_unique<llvm::LLVMContext>();
        std::unique_ptr<llvm::Module> module = lookupModule(*context, width);
        auto machine = texc::createTargetMachine(target, level);
        texc::optimizeModule(*module, *machine, level);
        for (const llvm::Function& fn : *module) CHECK_FALSE(fn.getName().starts_with("texc_table16_"));
        texc::OrcJIT jit(level, target);
        jit.addModule(std::move(module), std::move(context));
        auto lookUp = reinterpret_cast<void (*)(const int32_t*, int32_t*)>(jit.lookup("look_up"));
        // Every index, also with bits above the low four set (only those four count).
        for (uint32_t base : {0u, 16u, 0x4b400000u, 0xfffffff0u}) {
          std::vector<int32_t> in(width), out(width, 0);
          for (uint32_t start = 0; start < 16; start += width) {
            for (unsigned lane = 0; lane < width; ++lane) in[lane] = static_cast<int32_t>(base + (start + lane * 5) % 16);
            lookUp(in.data(), out.data());
            for (unsigned lane = 0; lane < width; ++lane)
              CHECK(static_cast<uint32_t>(out[lane]) == table.entries[static_cast<uint32_t>(in[lane]) & 15]);
          }
        }
      }
    }
  }
}

TEST_CASE("the JIT defines small-table look-ups of a module LLVM's pipeline did not see", "[llvm]") {
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module = lookupModule(*context, 8);
  texc::OrcJIT jit(0);
  jit.addModule(std::move(module), std::move(context));
  auto lookUp = reinterpret_cast<void (*)(const int32_t*, int32_t*)>(jit.lookup("look_up"));
  int32_t in[8] = {15, 0, 7, 8, 31, 1, 2, 3}, out[8] = {};
  lookUp(in, out);
  const texc::SmallTable table = testTable();
  for (int lane = 0; lane < 8; ++lane) CHECK(static_cast<uint32_t>(out[lane]) == table.entries[in[lane] & 15]);
}

TEST_CASE("a module without look-ups is left as it is", "[llvm]") {
  llvm::LLVMContext context;
  llvm::Module module("plain", context);
  auto* f = llvm::Function::Create(llvm::FunctionType::get(llvm::Type::getVoidTy(context), false),
                                   llvm::Function::ExternalLinkage, "nothing", module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", f));
  b.CreateRetVoid();
  auto machine = texc::createTargetMachine(texc::cpuTarget("x86-64"), 3);
  const size_t before = module.size();
  texc::defineSmallTables(module, *machine);
  CHECK(module.size() == before);
  CHECK(module.global_size() == 0);
}
