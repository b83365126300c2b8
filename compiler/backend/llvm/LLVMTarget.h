// LLVM set-up for the CPU backend: target initialisation, a host TargetMachine, the optimisation
// pipeline, and emission of .ll text, assembly and object code.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/target/CpuTarget.h"

namespace llvm {
class Module;
class TargetMachine;
}  // namespace llvm

namespace texc {

// Registers the native target with its asm printer and parser. Idempotent and thread-safe; every
// function below calls it, so callers only need it before using LLVM's target registry directly.
void initLLVM();

// The host CPU name ("znver3", "skylake-avx512", ...) and its features as LLVM names, each with a
// leading '+' or '-' ("+avx2", "-avx512f"): cpuTarget("host"). On AVX-512 CPUs the list also turns
// off LLVM's "prefer-256-bit" tuning (set for Intel's AVX-512 CPUs), so loops vectorise 512 bits wide.
std::string hostCPUName();
std::vector<std::string> hostCPUFeatures();

// A TargetMachine for the process triple and `cpu` (its name and exactly its features), position
// independent; optLevel is 0..3 (std::invalid_argument otherwise). Throws std::runtime_error if
// the target is unavailable. Any CPU works on any host: it only emits code.
std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTarget& cpu, int optLevel = 3);
std::unique_ptr<llvm::TargetMachine> createHostTargetMachine(int optLevel = 3);

// Gives M the triple and data layout of TM. optimizeModule and the emitters do this themselves
// for a module that has no triple yet.
void configureModule(llvm::Module& M, const llvm::TargetMachine& TM);

// Verifies M (std::runtime_error with the verifier's message if broken), then runs the new pass
// manager's default per-module pipeline at O0..O3 with loop and SLP vectorisation enabled. TM
// supplies TargetTransformInfo, so the vectorisers know the host's vector width.
void optimizeModule(llvm::Module& M, llvm::TargetMachine& TM, int optLevel);

// Native assembly text and ELF/Mach-O/COFF object bytes for M. M itself is left unchanged (code
// generation runs on a clone, as it rewrites the IR it consumes).
std::string emitAssembly(llvm::Module& M, llvm::TargetMachine& TM);
std::string emitObject(llvm::Module& M, llvm::TargetMachine& TM);

// M as textual IR (.ll).
std::string printModule(const llvm::Module& M);

}  // namespace texc
