#include "compiler/backend/llvm/SplitPhases.h"

#include <llvm/IR/BasicBlock.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/Transforms/Utils/Local.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unordered_map>

namespace texc {

namespace {

// Cycles from an instruction's operands to its result, roughly a Zen 3's or a Skylake's: what
// matters is the ratio of a division to an FMA and of both to integer and logic operations.
int latencyOf(const llvm::Instruction& inst) {
  switch (inst.getOpcode()) {
    case llvm::Instruction::FDiv:
    case llvm::Instruction::FRem: return 13;
    case llvm::Instruction::FAdd:
    case llvm::Instruction::FSub:
    case llvm::Instruction::FMul: return 4;
    case llvm::Instruction::Load: return 5;
    case llvm::Instruction::GetElementPtr: return 0;
    case llvm::Instruction::Call:
      if (const auto* ii = llvm::dyn_cast<llvm::IntrinsicInst>(&inst)) {
        switch (ii->getIntrinsicID()) {
          case llvm::Intrinsic::fma:
          case llvm::Intrinsic::fmuladd: return 4;
          case llvm::Intrinsic::sqrt: return 15;
          default: return 2;
        }
      }
      return 4;
    default: return 1;
  }
}

// The instructions of a copy's body, in order, without the latch and the induction variable's
// increment (which every copy needs).
std::vector<llvm::Instruction*> bodyInstructions(llvm::BasicBlock& body, llvm::PHINode* iv) {
  std::vector<llvm::Instruction*> out;
  for (llvm::Instruction& inst : body) {
    if (inst.isTerminator() || iv->getIncomingValueForBlock(&body) == &inst) continue;
    out.push_back(&inst);
  }
  return out;
}

void deleteDead(llvm::BasicBlock& body, llvm::PHINode* iv) {
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<llvm::Instruction*> all = bodyInstructions(body, iv);
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      if (llvm::isInstructionTriviallyDead(*it)) {
        (*it)->eraseFromParent();
        changed = true;
      }
  }
}

}  // namespace

void emptyLoopBody(llvm::BasicBlock& body, llvm::PHINode* iv) {
  for (llvm::Instruction* inst : bodyInstructions(body, iv))
    if (llvm::isa<llvm::StoreInst>(inst)) inst->eraseFromParent();
  deleteDead(body, iv);
}

bool splitPhases(llvm::Function& fn, const std::vector<PhaseCopy>& copies, llvm::Value* blockStart, int64_t block) {
  const size_t phases = copies.size();
  if (phases < 2) return false;
  std::vector<std::vector<llvm::Instruction*>> insts;
  for (const PhaseCopy& c : copies) {
    if (c.iv->getParent()->getTerminator()->getSuccessor(0) != c.body) return false;  // body is one block
    insts.push_back(bodyInstructions(*c.body, c.iv));
  }
  const std::vector<llvm::Instruction*>& first = insts[0];
  const size_t n = first.size();
  for (size_t p = 1; p < phases; ++p) {
    if (insts[p].size() != n) return false;
    for (size_t i = 0; i < n; ++i)
      if (insts[p][i]->getOpcode() != first[i]->getOpcode() || insts[p][i]->getType() != first[i]->getType()) return false;
  }
  std::unordered_map<const llvm::Instruction*, size_t> position;
  for (size_t i = 0; i < n; ++i) {
    const llvm::Instruction* inst = first[i];
    if (llvm::isa<llvm::PHINode>(inst)) return false;
    if (inst->mayHaveSideEffects() && !llvm::isa<llvm::StoreInst>(inst)) return false;
    position[inst] = i;
  }

  // Start and finish times along the chains, and which values every copy can repeat: loads of
  // the kernel's buffers, their addresses, and integer operations and casts on them.
  std::vector<int> start(n, 0), finish(n, 0);
  std::vector<bool> repeatable(n, false);
  int longest = 0;
  for (size_t i = 0; i < n; ++i) {
    bool operandsRepeatable = true;
    for (const llvm::Use& u : first[i]->operands()) {
      auto it = llvm::isa<llvm::Instruction>(u.get()) ? position.find(llvm::cast<llvm::Instruction>(u.get())) : position.end();
      if (it == position.end()) continue;
      start[i] = std::max(start[i], finish[it->second]);
      operandsRepeatable = operandsRepeatable && repeatable[it->second];
    }
    finish[i] = start[i] + latencyOf(*first[i]);
    longest = std::max(longest, finish[i]);
    const llvm::Instruction* inst = first[i];
    repeatable[i] = operandsRepeatable && (llvm::isa<llvm::LoadInst>(inst) || llvm::isa<llvm::GetElementPtrInst>(inst) || llvm::isa<llvm::CastInst>(inst) ||
                                           llvm::isa<llvm::ICmpInst>(inst) || (llvm::isa<llvm::BinaryOperator>(inst) && inst->getType()->isIntegerTy()));
  }
  if (longest == 0) return false;

  // Operations of latency 1 (logic, comparisons, selects, integer bits) are repeated by a later
  // phase that needs them, from values it has, rather than stored: a comparison of a value that
  // crosses anyway is one more operation, not one more array.
  std::vector<bool> cheap(n, false);
  for (size_t i = 0; i < n; ++i)
    cheap[i] = latencyOf(*first[i]) <= 1 && !first[i]->mayReadOrWriteMemory() && !llvm::isa<llvm::CallInst>(first[i]);
  auto operandsOf = [&](size_t i, auto&& f) {
    for (const llvm::Use& u : first[i]->operands())
      if (auto* inst = llvm::dyn_cast<llvm::Instruction>(u.get()))
        if (auto it = position.find(inst); it != position.end()) f(it->second);
  };
  // The values that phases after their own use, walking through the repeated cheap ones: what
  // the arrays must carry for a given assignment of phases.
  auto crossingOf = [&](const std::vector<size_t>& ph) {
    std::vector<size_t> out;
    std::vector<bool> carried(n, false);
    for (size_t q = 1; q < phases; ++q) {
      std::vector<bool> seen(n, false);
      std::vector<size_t> work;
      for (size_t i = 0; i < n; ++i)
        if (ph[i] == q) work.push_back(i);
      while (!work.empty()) {
        const size_t u = work.back();
        work.pop_back();
        operandsOf(u, [&](size_t o) {
          if (ph[o] >= q || repeatable[o] || seen[o]) return;
          seen[o] = true;
          if (cheap[o]) work.push_back(o);
          else if (!carried[o]) carried[o] = true, out.push_back(o);
        });
      }
    }
    return out;
  };
  // The phase of each instruction for cuts at the given start times.
  auto phasesFor = [&](const std::vector<int>& cuts) {
    std::vector<size_t> ph(n, 0);
    for (size_t i = 0; i < n; ++i)
      for (int c : cuts) ph[i] += start[i] >= c;
    return ph;
  };
  // Cut k goes near k/N of the longest chain: at the start time, within a sixth of a phase's
  // length either side, that leaves the fewest values to carry (then the nearest to k/N).
  std::vector<int> starts;
  for (size_t i = 0; i < n; ++i)
    if (!repeatable[i]) starts.push_back(start[i]);
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  std::vector<std::vector<int>> candidates(phases - 1);
  const int slack = longest / static_cast<int>(6 * phases);
  for (size_t k = 1; k < phases; ++k) {
    const int ideal = static_cast<int>(k) * longest / static_cast<int>(phases);
    for (int t : starts)
      if (t > 0 && std::abs(t - ideal) <= slack) candidates[k - 1].push_back(t);
    if (candidates[k - 1].empty()) candidates[k - 1].push_back(ideal);
  }
  std::vector<int> best, cuts(phases - 1);
  size_t bestCount = SIZE_MAX;
  int bestDistance = INT32_MAX;
  auto search = [&](auto&& self, size_t k) -> void {
    if (k == cuts.size()) {
      const size_t count = crossingOf(phasesFor(cuts)).size();
      int distance = 0;
      for (size_t j = 0; j < cuts.size(); ++j) distance += std::abs(cuts[j] - static_cast<int>(j + 1) * longest / static_cast<int>(phases));
      if (count < bestCount || (count == bestCount && distance < bestDistance)) best = cuts, bestCount = count, bestDistance = distance;
      return;
    }
    for (int t : candidates[k])
      if (k == 0 || t > cuts[k - 1]) cuts[k] = t, self(self, k + 1);
  };
  search(search, 0);
  if (best.empty()) return false;
  const std::vector<size_t> phase = phasesFor(best);
  const std::vector<size_t> crossing = crossingOf(phase);
  for (size_t i : crossing) {
    llvm::Type* t = first[i]->getType();
    if (!t->isFloatingPointTy() && !t->isIntegerTy()) return false;
  }

  llvm::LLVMContext& ctx = fn.getContext();
  llvm::Type* i64 = llvm::Type::getInt64Ty(ctx);
  llvm::IRBuilder<> entry(&fn.getEntryBlock(), fn.getEntryBlock().begin());
  for (size_t i : crossing) {
    llvm::Type* t = first[i]->getType();
    // i1 values (a comparison) are kept as bytes.
    llvm::Type* stored = t->isIntegerTy(1) ? llvm::Type::getInt8Ty(ctx) : t;
    llvm::AllocaInst* array = entry.CreateAlloca(stored, llvm::ConstantInt::get(i64, block), "phase.cross");
    array->setAlignment(llvm::Align(64));
    const PhaseCopy& own = copies[phase[i]];
    llvm::IRBuilder<> b(own.body->getTerminator());
    llvm::Value* value = insts[phase[i]][i];
    if (stored != t) value = b.CreateZExt(value, stored);
    b.CreateStore(value, b.CreateInBoundsGEP(stored, array, b.CreateSub(own.iv, blockStart, "", true, true)));
    for (size_t p = phase[i] + 1; p < phases; ++p) {
      llvm::IRBuilder<> lb(&*copies[p].body->getFirstInsertionPt());
      llvm::Value* loaded = lb.CreateLoad(stored, lb.CreateInBoundsGEP(stored, array, lb.CreateSub(copies[p].iv, blockStart, "", true, true)));
      if (stored != t) loaded = lb.CreateTrunc(loaded, t);
      insts[p][i]->replaceAllUsesWith(loaded);
    }
  }
  for (size_t p = 0; p < phases; ++p) {
    for (size_t i = 0; i < n; ++i)
      if (llvm::isa<llvm::StoreInst>(insts[p][i]) && phase[i] != p) insts[p][i]->eraseFromParent();
    deleteDead(*copies[p].body, copies[p].iv);
  }
  return true;
}

}  // namespace texc
