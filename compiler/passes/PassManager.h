// The pass manager: runs a pipeline (a list of passes) with instrumentation around each pass:
// timing (--time-passes), printing before/after (--print-before, --print-after,
// --print-after-all; "(unchanged)" when a pass changed nothing), numbered dump files
// (--dump-dir) and, in Debug builds, the IR verifiers after every pass.
#pragma once

#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "compiler/passes/Pass.h"

namespace texc {

struct PassTiming {
  std::string name;
  double ms = 0;
  bool changed = false;
};

struct Instrumentation {
  bool printAfterAll = false;
  std::set<std::string> printAfter;
  std::set<std::string> printBefore;
  std::string dumpDir;
#ifdef TEXC_VERIFY_EACH_PASS
  bool verifyEachPass = true;  // Debug builds verify the IR after every pass
#else
  bool verifyEachPass = false;
#endif
  std::ostream* out = nullptr;  // where prints and timings go (standard error by default)
  // Called after every pass that ran (texc explore's page): the pass, the state after it, its
  // timing, and the IR it read as text (what --print-before shows; computed only when this is set).
  std::function<void(const PassInfo& pass, const CompileState& state, const PassTiming& timing, const std::string& irBefore)>
      afterPass;
};

// Checks that every name in the print options is a pass; returns an error message otherwise.
std::string checkPassNames(const Instrumentation& inst);

// Runs `pipeline` in order, every pass of it and nothing else (the driver passes what
// buildPipeline returns for its options: the passes do not check whether they should run). Stops (returning false) after a pass that reported errors or set
// CompileState::usageError.
bool runPipeline(CompileState& state, const std::vector<const PassInfo*>& pipeline, const Instrumentation& inst,
                 std::vector<PassTiming>* timings = nullptr);

// The --time-passes table: one line per pass run, then the total.
void printTimings(std::ostream& out, const std::vector<PassTiming>& timings);

}  // namespace texc
