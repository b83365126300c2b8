// `texc run --profile`: where sampled time went in the JIT's code, instruction by instruction.
//
// The samples are addresses (runtime/Sampler.h); the JIT says which function each address is in
// (JitFunctions.h). Each function's code is disassembled from memory with LLVM's MC layer, its
// innermost loops found from its backward branches, and the report gives the share of every
// function and then, for the hottest loops, every instruction with its share of the samples: the
// micro-kernel's FMAs against the packs, the row pass against the reductions. Where the code
// carries the loop IR's line table (run --profile asks for it), the samples are also summed per
// statement of the loop IR, and each instruction shows the line of the statement it was made for.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/backend/llvm/JitFunctions.h"
#include "compiler/target/CpuTarget.h"

namespace texc {

struct ProfileOptions {
  int loops = 3;             // the hottest innermost loops listed in full
  double minLoopShare = 0.02;  // ... of at least this share of all samples
  // The loop IR's listing (`--emit loops`), line 1 first, when the code carries its line table
  // (JitFunction::lines): the report then gives each statement's share of the samples and tags
  // every instruction of a hot loop with its statement's line. Empty: no lines.
  std::vector<std::string> listing;
  int statements = 8;  // the hottest statements listed, each of at least minLoopShare
};

// The report (text, for standard error). `cpu` is the JIT's, to decode its instructions;
// `dropped`, samples the sampler had no room for; `cpuSeconds`, the CPU time sampled.
std::string profileReport(const std::vector<JitFunction>& functions, const std::vector<uintptr_t>& samples, const CpuTarget& cpu,
                          uint64_t dropped, double cpuSeconds, const ProfileOptions& options = {});

}  // namespace texc
