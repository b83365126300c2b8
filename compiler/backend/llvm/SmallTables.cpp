#include "compiler/backend/llvm/SmallTables.h"

#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Module.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <cstdio>
#include <stdexcept>
#include <vector>

namespace texc {

namespace {

// Marks a look-up function; its value is the table's name, a colon and its 16 entries in hex,
// which defineSmallTables reads back (a global holding the table would be deleted as unused
// before then).
constexpr const char* kTableAttr = "texc-small-table";
// The vector variants the vectorisers may call: SSE, AVX2 and AVX-512 widths of i32 lanes.
constexpr unsigned kVariantWidths[] = {4, 8, 16};

std::string encode(const std::array<uint32_t, 16>& entries) {
  std::string out;
  char word[16];
  for (uint32_t v : entries) {
    std::snprintf(word, sizeof word, "%08x", v);
    out += word;
  }
  return out;
}

std::array<uint32_t, 16> decode(llvm::StringRef text) {
  std::array<uint32_t, 16> entries{};
  text = text.substr(text.find(':') + 1);
  if (text.size() != 16 * 8) throw std::logic_error("texc: malformed small-table attribute");
  for (size_t j = 0; j < 16; ++j)
    if (text.substr(8 * j, 8).getAsInteger(16, entries[j])) throw std::logic_error("texc: malformed small-table attribute");
  return entries;
}

llvm::Function* declareLookup(llvm::Module& M, const std::string& name, llvm::Type* type, const std::string& table) {
  if (llvm::Function* existing = M.getFunction(name)) return existing;
  auto* fn = llvm::Function::Create(llvm::FunctionType::get(type, {type}, false), llvm::GlobalValue::ExternalLinkage,
                                    name, M);
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->setWillReturn();
  fn->addFnAttr(llvm::Attribute::NoSync);
  fn->addFnAttr(llvm::Attribute::Speculatable);
  fn->addFnAttr(kTableAttr, table);
  return fn;
}

std::string variantName(const std::string& scalar, unsigned width) { return scalar + "_v" + std::to_string(width); }

llvm::Constant* tableConstant(llvm::LLVMContext& ctx, const std::array<uint32_t, 16>& entries, size_t first, size_t count) {
  return llvm::ConstantDataVector::get(ctx, llvm::ArrayRef<uint32_t>(entries.data() + first, count));
}

llvm::GlobalVariable* tableGlobal(llvm::Module& M, const std::string& name, const std::array<uint32_t, 16>& entries) {
  if (llvm::GlobalVariable* existing = M.getGlobalVariable(name, true)) return existing;
  llvm::Constant* init = llvm::ConstantDataArray::get(M.getContext(), llvm::ArrayRef<uint32_t>(entries));
  auto* global = new llvm::GlobalVariable(M, init->getType(), true, llvm::GlobalValue::InternalLinkage, init, name);
  global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  global->setAlignment(llvm::Align(64));
  return global;
}

llvm::Value* loadEntry(llvm::IRBuilder<>& b, llvm::GlobalVariable* table, llvm::Value* index) {
  llvm::Value* slot = b.CreateZExt(b.CreateAnd(index, b.getInt32(15)), b.getInt64Ty());
  llvm::Value* address = b.CreateInBoundsGEP(table->getValueType(), table, {b.getInt64(0), slot});
  return b.CreateLoad(b.getInt32Ty(), address);
}

struct Isa {
  bool avx512 = false;
  bool avx512vl = false;  // two-table permutes of 8 lanes
  bool avx2 = false;
};

// The body of `fn`: a load for the scalar form; for <N x i32>, vpermd per 16 lanes with AVX-512,
// per 8 lanes vpermi2d (two tables) with AVX-512VL, or with AVX2 two vpermd and a select on the
// index's bit 3; otherwise a load per lane.
void defineLookup(llvm::Function& fn, const std::array<uint32_t, 16>& entries, Isa isa) {
  llvm::Module& M = *fn.getParent();
  llvm::LLVMContext& ctx = M.getContext();
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", &fn));
  llvm::Value* index = fn.getArg(0);
  const llvm::StringRef attr = fn.getFnAttribute(kTableAttr).getValueAsString();
  const std::string dataName = "texc_table16_" + attr.substr(0, attr.find(':')).str() + "_data";
  auto* vecType = llvm::dyn_cast<llvm::FixedVectorType>(index->getType());
  if (!vecType) {
    b.CreateRet(loadEntry(b, tableGlobal(M, dataName, entries), index));
    return;
  }
  const unsigned width = vecType->getNumElements();
  const unsigned chunk = isa.avx512 && width % 16 == 0 ? 16 : isa.avx2 && width % 8 == 0 ? 8 : 0;
  if (chunk == 0) {
    llvm::GlobalVariable* table = tableGlobal(M, dataName, entries);
    llvm::Value* out = llvm::PoisonValue::get(vecType);
    for (unsigned lane = 0; lane < width; ++lane)
      out = b.CreateInsertElement(out, loadEntry(b, table, b.CreateExtractElement(index, lane)), lane);
    b.CreateRet(out);
    return;
  }
  std::vector<llvm::Value*> parts;
  for (unsigned first = 0; first < width; first += chunk) {
    llvm::SmallVector<int, 16> lanes;
    for (unsigned lane = 0; lane < chunk; ++lane) lanes.push_back(static_cast<int>(first + lane));
    llvm::Value* part = chunk == width ? index : b.CreateShuffleVector(index, lanes);
    if (chunk == 16) {
      parts.push_back(b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_permvar_si_512, {},
                                        {tableConstant(ctx, entries, 0, 16), part}));
    } else if (isa.avx512vl) {
      parts.push_back(b.CreateIntrinsic(llvm::Intrinsic::x86_avx512_vpermi2var_d_256, {},
                                        {tableConstant(ctx, entries, 0, 8), part, tableConstant(ctx, entries, 8, 8)}));
    } else {
      llvm::Value* low = b.CreateIntrinsic(llvm::Intrinsic::x86_avx2_permd, {}, {tableConstant(ctx, entries, 0, 8), part});
      llvm::Value* high = b.CreateIntrinsic(llvm::Intrinsic::x86_avx2_permd, {}, {tableConstant(ctx, entries, 8, 8), part});
      llvm::Value* bit3 = b.CreateAnd(part, llvm::ConstantInt::get(part->getType(), 8));
      parts.push_back(b.CreateSelect(b.CreateICmpNE(bit3, llvm::Constant::getNullValue(part->getType())), high, low));
    }
  }
  b.CreateRet(parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b, parts));
}

}  // namespace

llvm::Value* emitSmallTableLookup(llvm::IRBuilder<>& B, const SmallTable& table, llvm::Value* index) {
  llvm::Module& M = *B.GetInsertBlock()->getModule();
  const std::string scalarName = "texc_table16_" + table.name;
  const std::string encoded = table.name + ":" + encode(table.entries);
  llvm::Function* scalar = declareLookup(M, scalarName, B.getInt32Ty(), encoded);
  if (!scalar->hasFnAttribute("vector-function-abi-variant")) {
    std::string mappings;
    std::vector<llvm::GlobalValue*> variants;
    for (unsigned width : kVariantWidths) {
      const std::string name = variantName(scalarName, width);
      variants.push_back(declareLookup(M, name, llvm::FixedVectorType::get(B.getInt32Ty(), width), encoded));
      if (!mappings.empty()) mappings += ',';
      mappings += "_ZGV_LLVM_N" + std::to_string(width) + "v_" + scalarName + "(" + name + ")";
    }
    scalar->addFnAttr("vector-function-abi-variant", mappings);
    // Unused until the vectorisers call them: kept from dead-code elimination until then.
    llvm::appendToCompilerUsed(M, variants);
  }
  if (scalar->getFnAttribute(kTableAttr).getValueAsString() != encoded)
    throw std::logic_error("texc: two small tables named " + table.name);
  llvm::Function* callee = scalar;
  if (auto* vecType = llvm::dyn_cast<llvm::FixedVectorType>(index->getType()))
    callee = declareLookup(M, variantName(scalarName, vecType->getNumElements()), vecType, encoded);
  return B.CreateCall(callee, {index});
}

void defineSmallTables(llvm::Module& M, const llvm::TargetMachine& TM) {
  std::vector<llvm::Function*> lookups;
  for (llvm::Function& fn : M)
    if (fn.isDeclaration() && fn.hasFnAttribute(kTableAttr)) lookups.push_back(&fn);
  if (lookups.empty()) return;
  Isa isa;
  if (TM.getTargetTriple().isX86()) {
    const llvm::MCSubtargetInfo* sti = TM.getMCSubtargetInfo();
    isa.avx512 = sti->checkFeatures("+avx512f");
    isa.avx512vl = sti->checkFeatures("+avx512vl");
    isa.avx2 = sti->checkFeatures("+avx2");
  }
  llvm::SmallPtrSet<llvm::Constant*, 8> defined;
  for (llvm::Function* fn : lookups) {
    defineLookup(*fn, decode(fn->getFnAttribute(kTableAttr).getValueAsString()), isa);
    fn->removeFnAttr(kTableAttr);
    fn->removeFnAttr("vector-function-abi-variant");
    fn->setLinkage(llvm::GlobalValue::InternalLinkage);
    fn->addFnAttr(llvm::Attribute::AlwaysInline);
    defined.insert(fn);
  }
  llvm::removeFromUsedLists(M, [&](llvm::Constant* c) { return defined.contains(c); });
  for (llvm::Function* fn : lookups) {
    std::vector<llvm::CallBase*> calls;
    for (llvm::User* user : fn->users())
      if (auto* call = llvm::dyn_cast<llvm::CallBase>(user)) calls.push_back(call);
    for (llvm::CallBase* call : calls) {
      llvm::InlineFunctionInfo info;
      if (!llvm::InlineFunction(*call, info).isSuccess())
        throw std::logic_error("texc: cannot inline " + fn->getName().str());
    }
  }
  for (llvm::Function* fn : lookups) {
    fn->removeDeadConstantUsers();  // the list removeFromUsedLists replaced
    if (fn->use_empty()) fn->eraseFromParent();
  }
}

}  // namespace texc
