#include "compiler/passes/Pipeline.h"

#include <string>

namespace texc {

namespace {

// The whole pipeline, one line per pass, with why it runs there.
const char* const kPipeline[] = {
    "parse",            // everything starts from the AST
    "sema",             // ranges, shapes and bounds must be known before any graph is built
    "split-ops",        // the unfused graph: one node per operator, the baseline every pass improves
    "constant-fold",    // before simplify, so identities see folded constants (rsqrt(64) -> 0.125)
    "simplify",         // exact identities; may expose more duplicates for cse
    "cse",              // before dce, which removes the duplicates cse leaves unread
    "dce",              //
    "fuse",             // after the cleanups, so it weighs only what survived; last producer first
    "dce",              // the fused producers are now unread
    "lower-to-loops",   // graph -> loop nests
    "tile",             // on the loop nests, with the fused epilogues already inside them
    "fuse-row-passes",  // needs the reductions placed in their rows, which lowering does
    "sink-unit-loops",  // after the rewrites that match nests as lowered; before the user's steps, which name its result
    "schedule-loops",   // the user's loop transformations, after every automatic rewrite of the nests they name
    "split-borders",    // last loop rewrite: the guards it drops are the ones lowering, tiling and the user's steps left
    "fuse-into-tiles",  // on the final nests of both kernels: the proof enumerates what they touch
    "plan-memory",      // on the final loop nests; codegen reads it (in-place kernels read through the output pointer)
    "map-gpu",          // --target cuda: on the final loop nests, each kernel's strategy and launch; after the plan, which it does not change
    "sync-gpu-threads", // --target cuda: the combines and barriers of the row-block kernels map-gpu chose
    "codegen-llvm",     // loop IR -> LLVM IR
    "optimize-llvm",    // LLVM's own pipeline for the host
    "codegen-cuda",     // --target cuda: loop IR -> CUDA C, instead of the two LLVM passes
};

// The loop passes of the CUDA pipeline alone: they run only when codegen-cuda does.
bool cudaOnly(const PassInfo* p) {
  std::string name = p->name;
  return name == "map-gpu" || name == "sync-gpu-threads";
}

}  // namespace

std::vector<const PassInfo*> buildPipeline(Stage until, Target target) {
  std::vector<const PassInfo*> out;
  for (const char* name : kPipeline) {
    const PassInfo* p = findPass(name);
    // Each target keeps its own backend's passes.
    if (p->stage == (target == Target::Cuda ? Stage::LLVM : Stage::CUDA)) continue;
    if (cudaOnly(p) && (target != Target::Cuda || until < Stage::LLVM)) continue;
    if (p->stage > until && !(target == Target::Cuda && p->stage == Stage::CUDA && until >= Stage::LLVM)) break;
    out.push_back(p);
  }
  return out;
}

}  // namespace texc
