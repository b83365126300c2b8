// Look-ups in tables of 16 32-bit entries that vector code does with one register permute.
//
// LLVM's loop vectoriser turns a load from a table indexed per lane into a gather (slow, and
// microcoded on AMD) or into one load per lane; a table of 16 entries fits one AVX-512 register,
// where `vpermd` reads all 16 lanes in one instruction (two `vpermd` and a blend with AVX2). So
// the math emitters do not load: emitSmallTableLookup emits a call to a pure function that the
// vectorisers widen through its vector variants (LLVM's vector-function ABI: `_ZGV_LLVM_N16v_...`),
// and defineSmallTables, run after LLVM's pipeline, gives the scalar function and its variants
// their bodies for the target (the scalar one a load, the variants permutes) and inlines them.
// Every form reads the same table, so scalar and vector code give the same bits.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include <llvm/IR/IRBuilder.h>

namespace llvm {
class Module;
class TargetMachine;
class Value;
}  // namespace llvm

namespace texc {

struct SmallTable {
  std::string name;  // part of the functions' names: texc_table16_<name>
  std::array<uint32_t, 16> entries;
};

// table.entries[index & 15], for an i32 or <N x i32> index (the result has its type).
llvm::Value* emitSmallTableLookup(llvm::IRBuilder<>& B, const SmallTable& table, llvm::Value* index);

// Defines the look-up functions of M for TM's instruction set and inlines them; a module without
// look-ups is left as it is. optimizeModule runs it after LLVM's pipeline, before code generation.
void defineSmallTables(llvm::Module& M, const llvm::TargetMachine& TM);

}  // namespace texc
