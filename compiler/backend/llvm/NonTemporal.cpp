#include "compiler/backend/llvm/NonTemporal.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/KnownBits.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace texc {

namespace {

constexpr const char* kTagName = "texc.streaming_stores";
// One tag per distance: "texc.prefetched_loads.1024".
constexpr const char* kPrefetchTagPrefix = "texc.prefetched_loads.";

llvm::MDNode* tagOf(llvm::Module& M, const char* name) {
  llvm::NamedMDNode* named = M.getOrInsertNamedMetadata(name);
  if (named->getNumOperands() == 0) named->addOperand(llvm::MDNode::getDistinct(M.getContext(), {}));
  return named->getOperand(0);
}

// Whether access-group metadata `md` (one group, or a list of groups) holds `tag`.
bool holdsTag(const llvm::MDNode* md, const llvm::MDNode* tag) {
  if (md == tag) return true;
  if (md->getNumOperands() == 0) return false;
  for (const llvm::MDOperand& op : md->operands())
    if (op.get() == tag) return true;
  return false;
}

}  // namespace

llvm::MDNode* streamingStoreTag(llvm::Module& M) { return tagOf(M, kTagName); }
llvm::MDNode* prefetchedLoadTag(llvm::Module& M, int64_t distance) {
  return tagOf(M, (kPrefetchTagPrefix + std::to_string(distance)).c_str());
}

namespace {

// A prefetch of `distance` bytes past every tagged vector load's address (one per vector: the
// loads of a line are next to each other, and a prefetch of a line already asked for is cheap).
void prefetchTaggedLoads(llvm::Module& M, llvm::NamedMDNode* named, int64_t distance) {
  if (named->getNumOperands() == 0) return;
  const llvm::MDNode* tag = named->getOperand(0);
  std::vector<llvm::LoadInst*> loads;
  for (llvm::Function& f : M)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb) {
        auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        const llvm::MDNode* groups = load ? load->getMetadata(llvm::LLVMContext::MD_access_group) : nullptr;
        if (!groups || !holdsTag(groups, tag)) continue;
        load->setMetadata(llvm::LLVMContext::MD_access_group, nullptr);
        if (load->getType()->isVectorTy()) loads.push_back(load);
      }
  for (llvm::LoadInst* load : loads) {
    llvm::IRBuilder<> b(load);
    llvm::Value* ahead = b.CreateConstGEP1_64(b.getInt8Ty(), load->getPointerOperand(), distance);
    llvm::Function* prefetch = llvm::Intrinsic::getDeclaration(&M, llvm::Intrinsic::prefetch, {b.getPtrTy()});
    // read, locality 2 (prefetcht1: into L2, not L1): a prefetch into L1 holds one of its few
    // miss buffers until the line arrives, and those the demand loads need too (1 thread on
    // Zen 4: GELU 2^24 9.4 ms with prefetcht1, 10.1 with prefetcht0, 9.7 with none; softmax
    // 4096^2 8.1 ms, 8.6 and 11.0).
    b.CreateCall(prefetch, {ahead, b.getInt32(0), b.getInt32(2), b.getInt32(1)});
  }
  named->eraseFromParent();
}

}  // namespace

int finishStreamingStores(llvm::Module& M) {
  std::vector<std::pair<llvm::NamedMDNode*, int64_t>> prefetchTags;
  for (llvm::NamedMDNode& named : M.named_metadata()) {
    const llvm::StringRef name = named.getName();
    if (name.starts_with(kPrefetchTagPrefix))
      prefetchTags.push_back({&named, std::stoll(name.drop_front(std::strlen(kPrefetchTagPrefix)).str())});
  }
  for (auto [named, distance] : prefetchTags) prefetchTaggedLoads(M, named, distance);
  llvm::NamedMDNode* named = M.getNamedMetadata(kTagName);
  if (!named || named->getNumOperands() == 0) return 0;
  const llvm::MDNode* tag = named->getOperand(0);
  const llvm::DataLayout& layout = M.getDataLayout();
  llvm::MDNode* one = llvm::MDNode::get(M.getContext(), llvm::ConstantAsMetadata::get(
                                                            llvm::ConstantInt::get(llvm::Type::getInt32Ty(M.getContext()), 1)));
  int marked = 0;
  for (llvm::Function& f : M)
    for (llvm::BasicBlock& bb : f)
      for (llvm::Instruction& inst : bb) {
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        const llvm::MDNode* groups = store ? store->getMetadata(llvm::LLVMContext::MD_access_group) : nullptr;
        if (!groups || !holdsTag(groups, tag)) continue;
        store->setMetadata(llvm::LLVMContext::MD_access_group, nullptr);
        llvm::Type* type = store->getValueOperand()->getType();
        if (!type->isVectorTy()) continue;
        const uint64_t bytes = layout.getTypeStoreSize(type).getFixedValue();
        // The alignment the address's known low zero bits prove (base alignment from the
        // parameter's attribute, the row stride and the vector loop's step).
        llvm::KnownBits known = llvm::computeKnownBits(store->getPointerOperand(), layout);
        const uint64_t zeros = std::min<uint64_t>(known.countMinTrailingZeros(), 12);
        if ((uint64_t{1} << zeros) < bytes) continue;
        store->setAlignment(llvm::Align(bytes));
        store->setMetadata(llvm::LLVMContext::MD_nontemporal, one);
        ++marked;
      }
  named->eraseFromParent();
  return marked;
}

}  // namespace texc
