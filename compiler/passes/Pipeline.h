// The pass pipeline, in order (Pipeline.cpp says why each pass sits where it does).
//
// This is the one place that decides which passes run: the target and the pipeline switches
// (PipelineOptions) choose them here, and the passes themselves do not check whether they
// should run. `texc passes` prints this table, each pass with the condition it runs under.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "compiler/passes/Pass.h"

namespace texc {

// A pass of the pipeline and the condition under which it is in it ("always", "cpu target,
// tiling on (--no-tile turns it off)").
struct PipelineEntry {
  const PassInfo* pass;
  std::string condition;
};

// The passes that run for `options`, in order, each with its condition. The pipeline stops after
// the last pass of stage `until`: the CPU target ends in the LLVM passes, the CUDA target in
// codegen-cuda (Stage::LLVM or later runs it).
std::vector<PipelineEntry> pipelineTable(const PipelineOptions& options, Stage until = Stage::LLVM);

// The passes of pipelineTable, without their conditions: what the pass manager runs.
std::vector<const PassInfo*> buildPipeline(const PipelineOptions& options, Stage until = Stage::LLVM);

// Why pass `name` (a pass of Passes.def) is not in the pipeline of `options` at all, as
// "SWITCH: explanation" ("--no-tile: contractions keep their lowered nests"); empty when it is.
std::string whyNotInPipeline(const std::string& name, const PipelineOptions& options);

// Checks that every pass the print options name is in the pipeline of `options` and runs before
// it stops at `until`; returns a usage error saying which is not and why otherwise (an unknown
// name is checkPassNames's error).
std::string checkPassesInPipeline(const std::set<std::string>& printAfter, const std::set<std::string>& printBefore,
                                  const PipelineOptions& options, Stage until = Stage::LLVM);

// Checks the names of --disable-pass: each must be a pass of Passes.def that the pipeline can
// run without (parse, sema, split-ops, lower-to-loops and the code generators cannot be left
// out). Returns the usage error, empty when all are fine.
std::string checkDisabledPasses(const std::set<std::string>& names);

}  // namespace texc
