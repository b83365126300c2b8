// Differential testing: one program, every pipeline variant, every result against the float64
// reference under the end-to-end suite's tolerance rule (docs/testing.md); its fused runs against
// its unfused ones, bit for bit (tests/support/FusionKeepsBits.h); and its code for a CPU of
// another vector width against the same pipeline's for the first, bit for bit.
//
// Everything runs in-process (parse, analyse, compile through the driver's pipeline, JIT, run),
// which is a hundred times faster than starting texc per variant. A crash or a hang in the
// compiler would take the tester down with it, so runIsolated() runs a check in a forked child
// with a time limit and reports how the child ended.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/passes/Pass.h"

namespace texc::random {

// One way of compiling and running a program. Adding a pipeline switch to the tester is one line
// in variants() (DiffTest.cpp): a variant is a PipelineOptions value plus the thread counts to
// run the compiled code with.
struct Variant {
  std::string name;  // the texc switches that give the same pipeline, e.g. "--fuse=none -O0"
  PipelineOptions options;
  std::vector<int> threads;  // each count is one run of the same compiled code
  // The variant whose bits this one must give, compared at 2 threads (crossCpuVariants); empty:
  // none.
  std::string copies = {};
};
const std::vector<Variant>& variants();
// The variants that run a copy of another variant's pipeline with code for a CPU of another
// vector width, to be compared with it bit for bit ("--no-tile -O3 --cpu x86-64", SSE2's 4 lanes,
// on every host; "--no-tile -O3 --cpu haswell", AVX2's 8, where `cpu` has 16 and the host runs
// AVX2), at 2 threads; and "--no-tile -O3 --cpu x86-64" with split-chains' blocks of 4
// iterations instead of 256 (PipelineOptions::phaseBlock), so that the random programs' loops,
// at most 40 long, run in phases where their chains are long, against the same pipeline's loops
// in one phase.
std::vector<Variant> crossCpuVariants(const std::string& cpu);
// variants() with every CPU variant's code for `cpu` (texc's --cpu: an LLVM CPU name or "host"),
// so that one host checks the code another kind of host would run (haswell for AVX2 on an
// AVX-512 machine), then crossCpuVariants(cpu). The caller checks that this host can run `cpu`
// (missingHostFeatures).
std::vector<Variant> variantsFor(const std::string& cpu);

enum class Verdict : uint8_t {
  Pass,          // every variant matched the reference
  Invalid,       // the program does not compile (a generator bug, or a shrinking step too far)
  Inconclusive,  // the reference says nothing useful (too many uncertain elements): not a bug
  Mismatch,      // some variant computed a wrong value, or failed to compile a valid program
  Crash,         // the check died on a signal (runIsolated only)
  Hang,          // the check ran past its time limit (runIsolated only)
};
const char* verdictName(Verdict v);
bool isFailure(Verdict v);  // Mismatch, Crash, Hang

struct Outcome {
  Verdict verdict = Verdict::Pass;
  std::string report;   // what failed, which variant, the first wrong elements
  int variantRuns = 0;  // variant x thread-count runs that were checked (each CPU one twice, poisoned)
  // Fused runs compared bit for bit with --fuse=none at the same -O level and thread count
  // (fusion must keep every bit; tests/support/FusionKeepsBits.h).
  int fusionBitComparisons = 0;
  // crossCpuVariants' runs compared bit for bit with the variant each copies (a sum's order and
  // every function are the same on every CPU; loops/SumLanes.h).
  int cpuBitComparisons = 0;
};

struct CheckOptions {
  uint64_t inputSeed = 1;  // inputs are uniform in [-1, 1) from this seed, rounded to their dtype
  // Tests of the tester: add 1e-3 * (1 + |value|) to the first element of the first output of
  // every run, which must then be reported as a mismatch.
  bool damageForTest = false;
};

// Checks `source` under every variant in `vs`, in this process.
Outcome checkProgram(const std::string& source, const std::vector<Variant>& vs, const CheckOptions& options = {});

// Runs checkProgram in a forked child, killed after `timeoutSeconds`.
Outcome runIsolated(const std::string& source, const std::vector<Variant>& vs, double timeoutSeconds,
                    const CheckOptions& options = {});

}  // namespace texc::random
