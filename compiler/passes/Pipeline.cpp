#include "compiler/passes/Pipeline.h"

#include <fmt/format.h>

#include <algorithm>

#include <string>

namespace texc {

namespace {

// Why a pass is left out of the pipeline of some options: empty when it runs.
using LeftOut = std::string (*)(const PipelineOptions&);

std::string always(const PipelineOptions&) { return ""; }

std::string fusionOff(const PipelineOptions& o) { return o.fuse == FuseMode::None ? "--fuse=none: one kernel per operator" : ""; }

std::string cudaTarget(const PipelineOptions& o, const char* why) {
  return o.target == Target::Cuda ? fmt::format("--target cuda: {}", why) : "";
}

// One pass of the pipeline: its name, when it runs (what `texc passes` prints beside it), and
// the test of the options that leaves it out.
struct Slot {
  const char* name;
  const char* condition;
  LeftOut leftOut;
};

// The passes without which nothing runs, and why: --disable-pass refuses them.
struct Required {
  const char* name;
  const char* why;
};
const Required kRequired[] = {
    {"parse", "every later pass starts from the AST"},
    {"sema", "the graph needs the shapes, ranges and bounds it resolves"},
    {"split-ops", "it builds the dataflow graph the later passes work on"},
    {"lower-to-loops", "it builds the loop IR both backends generate code from"},
    {"map-gpu", "codegen-cuda prints the mapping it chooses"},
    {"sync-gpu-threads", "without its barriers the threads of a row block would race"},
    {"codegen-llvm", "it generates the CPU code"},
    {"codegen-cuda", "it generates the CUDA code"},
};

// Why the slot is left out of the pipeline of `o`: disabled on the command line, or its own rule.
std::string slotLeftOut(const Slot& slot, const PipelineOptions& o) {
  if (o.disabledPasses.count(slot.name)) return "--disable-pass: left out on the command line";
  return slot.leftOut(o);
}

// Why a tiling pass is left out: the cuda target (`onCuda` says what happens there instead), or
// tiling turned off (`untiled` says what stays).
std::string tilingOff(const PipelineOptions& o, const char* onCuda, const char* untiled) {
  if (o.target == Target::Cuda) return fmt::format("--target cuda: {}", onCuda);
  if (!o.tile) return fmt::format("--no-tile: {}", untiled);
  if (o.schedule.tile == false) return fmt::format("`tile = off` in the schedule file: {}", untiled);
  return "";
}

// The whole pipeline, one slot per pass, with why it runs there.
const Slot kPipeline[] = {
    // everything starts from the AST
    {"parse", "always", always},
    // ranges, shapes and bounds must be known before any graph is built
    {"sema", "always", always},
    // the unfused graph: one node per operator, the baseline every pass improves
    {"split-ops", "always", always},
    // before simplify, so identities see folded constants (rsqrt(64) -> 0.125)
    {"constant-fold", "always", always},
    // exact identities; may expose more duplicates for cse
    {"simplify", "always", always},
    // before dce, which removes the duplicates cse leaves unread
    {"cse", "always", always},
    {"dce", "always", always},
    // after the cleanups and before fuse, which would split the pattern over kernels
    {"online-softmax", "always", always},
    // the max, exponentials and row sums it folded in are now unread
    {"dce", "after online-softmax, whose folded nodes it removes", always},
    // on the unfused graph, after online-softmax (whose pattern is a division by a sum) and
    // before fuse, so that every kernel that divides by a sum multiplies by the same reciprocal
    {"reciprocal-of-sums", "always", always},
    // after the cleanups, so it weighs only what survived; last producer first
    {"fuse", "fusion on, --fuse=all or elementwise (--fuse=none turns it off)", fusionOff},
    // the fused producers are now unread
    {"dce", "after fuse, whose inlined producers it removes (not with --fuse=none)", fusionOff},
    // graph -> loop nests
    {"lower-to-loops", "always", always},
    // on the loop nests, with the fused epilogues already inside them
    {"tile", "cpu target, tiling on (--no-tile, or `tile = off` in the schedule file, turns it off)",
     [](const PipelineOptions& o) {
       return tilingOff(o, "the CUDA backend tiles contractions its own way, through shared memory", "contractions keep their lowered nests");
     }},
    // on the one-pass kernels as lowered, like tile on the contractions
    {"tile-online-softmax", "cpu target, tiling on (--no-tile, or `tile = off` in the schedule file, turns it off)",
     [](const PipelineOptions& o) {
       return tilingOff(o, "the CUDA backend maps the one-pass kernel to its grid", "online softmax keeps one pass per row");
     }},
    // the CUDA target's counterpart of tile for convolutions, on the nests as lowered
    {"implicit-gemm", "cuda target, tiling on (--no-tile, or `tile = off` or `conv = direct` in the schedule file, turns it off)",
     [](const PipelineOptions& o) -> std::string {
       if (o.target != Target::Cuda) return "--target cpu: the tile pass builds the implicit GEMM, with packed panels";
       if (!o.tile) return "--no-tile: convolutions keep their lowered nests";
       if (o.schedule.tile == false) return "`tile = off` in the schedule file: convolutions keep their lowered nests";
       if (o.schedule.conv == loops::ConvMode::Direct) return "`conv = direct` in the schedule file: convolutions keep their lowered nests";
       return "";
     }},
    // on implicit-gemm's nests, before map-gpu, which maps the fused kernel's tile
    {"fuse-pool-into-gemm", "cuda target, --fuse=all, tiling on",
     [](const PipelineOptions& o) -> std::string {
       if (o.target != Target::Cuda) return "--target cpu: fuse-into-tiles runs the pool inside each block of the tiled nest";
       if (o.fuse != FuseMode::All) return fmt::format("--fuse={}: the kernels stay apart", o.fuse == FuseMode::None ? "none" : "elementwise");
       if (!o.tile) return "--no-tile: the contraction is not tiled";
       if (o.schedule.tile == false) return "`tile = off` in the schedule file: the contraction is not tiled";
       return "";
     }},
    // on the final contraction nests (after implicit-gemm and the pool's fusion, which it leaves
    // alone), before plan-memory, which places its partial sums
    {"split-k", "cuda target, tiling on",
     [](const PipelineOptions& o) -> std::string {
       if (o.target != Target::Cuda) return "--target cpu: the tile pass shares a contraction's row blocks among the threads";
       if (!o.tile) return "--no-tile: the contraction is not tiled";
       if (o.schedule.tile == false) return "`tile = off` in the schedule file: the contraction is not tiled";
       return "";
     }},
    // on the online-softmax kernels as lowered (their fixed shape), before plan-memory, which
    // places the slices' partial results
    {"split-keys", "cuda target",
     [](const PipelineOptions& o) -> std::string {
       return o.target == Target::Cuda ? "" : "--target cpu: tile-online-softmax shares the query blocks among the threads";
     }},
    // needs the reductions placed in their rows, which lowering does
    {"fuse-row-passes", "--fuse=all (not with --fuse=none or elementwise)",
     [](const PipelineOptions& o) -> std::string {
       return o.fuse != FuseMode::All ? fmt::format("--fuse={}: row passes stay apart", o.fuse == FuseMode::None ? "none" : "elementwise")
                                      : "";
     }},
    // after fuse-row-passes, which pairs a reduction with its row's store first
    {"fuse-sibling-reductions", "cpu target, --fuse=all",
     [](const PipelineOptions& o) -> std::string {
       if (std::string c = cudaTarget(o, "the GPU mappings reduce one loop at a time"); !c.empty()) return c;
       return o.fuse != FuseMode::All ? fmt::format("--fuse={}: the reductions stay in kernels of their own", o.fuse == FuseMode::None ? "none" : "elementwise")
                                      : "";
     }},
    // after the rewrites that match nests as lowered; before the user's steps, which name its result
    {"sink-unit-loops", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "the CUDA backend maps the lowered nests to its grid, all loops at once"); }},
    // the user's loop transformations, after every automatic rewrite of the nests they name; on
    // the cuda target it runs to say that they do not apply there (a usage error)
    {"schedule-loops", "a schedule file with `loops` lines (--schedule FILE); cpu target only, an error on cuda",
     [](const PipelineOptions& o) -> std::string {
       return o.schedule.loops.empty() ? "no --schedule FILE with `loops` lines: no loop transformations to apply" : "";
     }},
    // last loop rewrite: the guards it drops are the ones lowering, tiling and the user's steps left
    {"split-borders", "cpu target",
     [](const PipelineOptions& o) -> std::string {
       if (!o.splitBorders) return "PipelineOptions::splitBorders off (tests only): the guards stay in every iteration";
       return cudaTarget(o, "a guard on the GPU costs a predicated instruction");
     }},
    // on the final nests of both kernels: the proof enumerates what they touch
    {"fuse-into-tiles", "cpu target, --fuse=all",
     [](const PipelineOptions& o) -> std::string {
       if (std::string c = cudaTarget(o, "fuse-pool-into-gemm runs a pool in the tiled kernel's epilogue instead"); !c.empty()) return c;
       return o.fuse != FuseMode::All ? fmt::format("--fuse={}: the kernels stay apart", o.fuse == FuseMode::None ? "none" : "elementwise")
                                      : "";
     }},
    // on the final loop nests, whose stores it marks; codegen-llvm reads the marks
    {"stream-stores", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "the GPU's stores have no non-temporal form here"); }},
    // after stream-stores, whose streamed stores it moves; before interleave-loops, which marks
    // the pass the stores join
    {"pipeline-row-stores", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "a GPU block keeps its row in registers and stores it once"); }},
    // on the final loop nests, whose vector loops it marks; codegen-llvm reads the marks
    {"interleave-loops", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "a GPU thread runs one element; its latency is hidden by other warps"); }},
    // on the final loop nests, whose vector loops it marks (only loops that store, never sum);
    // before pair-bf16-lanes, which leaves a split loop's interleave count as it is
    {"split-chains", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "a GPU hides a thread's latency with other warps"); }},
    // on the final loop nests, whose bf16 loops it marks; codegen-llvm reads the marks
    {"pair-bf16-lanes", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "a GPU thread converts its own element"); }},
    // on the final loop nests, after pair-bf16-lanes (a pair loop's lanes count pairs), whose
    // innermost loops it marks; codegen-llvm reads the marks
    {"sum-lanes", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "the CUDA backend's reductions keep their own order"); }},
    // on the final loop nests, whose exp calls it marks; codegen-llvm reads the marks
    {"nonpositive-exp", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "the CUDA backend calls the device's expf"); }},
    // on the final loop nests; codegen reads it (in-place kernels read through the output pointer)
    {"plan-memory", "memory plan on (--no-plan turns it off)",
     [](const PipelineOptions& o) -> std::string {
       return o.planMemory ? "" : "--no-plan: every intermediate gets a buffer of its own";
     }},
    // cuda target: on the final loop nests, each kernel's strategy, launch shape and loop marks;
    // after the plan, which it does not change
    {"map-gpu", "cuda target",
     [](const PipelineOptions& o) -> std::string {
       return o.target == Target::Cuda ? "" : "--target cpu: the loops stay as the CPU backend runs them";
     }},
    // cuda target: the cross-thread combines and barriers of the row-block kernels map-gpu chose
    {"sync-gpu-threads", "cuda target",
     [](const PipelineOptions& o) -> std::string {
       return o.target == Target::Cuda ? "" : "--target cpu: no GPU threads to synchronise";
     }},
    // loop IR -> LLVM IR
    {"codegen-llvm", "cpu target",
     [](const PipelineOptions& o) { return cudaTarget(o, "codegen-cuda generates the code"); }},
    // LLVM's own pipeline for the target CPU
    {"optimize-llvm", "cpu target (-O0 to -O3)",
     [](const PipelineOptions& o) { return cudaTarget(o, "codegen-cuda generates the code, NVRTC optimises it"); }},
    // loop IR -> CUDA C, instead of the two LLVM passes
    {"codegen-cuda", "cuda target",
     [](const PipelineOptions& o) -> std::string {
       return o.target == Target::Cuda ? "" : "--target cpu: codegen-llvm generates the code";
     }},
};

// Whether the pipeline up to `until` reaches pass `p` (of a pass that runs for the target).
bool reaches(const PassInfo& p, Stage until, Target target) {
  // The CUDA target's mapping passes run only when its backend pass does (they prepare it).
  if (std::string(p.name) == "map-gpu" || std::string(p.name) == "sync-gpu-threads") return until >= Stage::LLVM;
  if (p.stage <= until) return true;
  // The CUDA target's backend pass comes with the LLVM stage, as the CPU target's LLVM passes do.
  return target == Target::Cuda && p.stage == Stage::CUDA && until >= Stage::LLVM;
}

}  // namespace

std::vector<PipelineEntry> pipelineTable(const PipelineOptions& options, Stage until) {
  std::vector<PipelineEntry> out;
  for (const Slot& slot : kPipeline) {
    const PassInfo* p = findPass(slot.name);
    if (!slotLeftOut(slot, options).empty()) continue;
    if (!reaches(*p, until, options.target)) break;
    out.push_back({p, slot.condition});
  }
  return out;
}

std::vector<const PassInfo*> buildPipeline(const PipelineOptions& options, Stage until) {
  std::vector<const PassInfo*> out;
  for (const PipelineEntry& e : pipelineTable(options, until)) out.push_back(e.pass);
  return out;
}

std::string whyNotInPipeline(const std::string& name, const PipelineOptions& options) {
  std::string why;
  for (const Slot& slot : kPipeline) {
    if (name != slot.name) continue;
    std::string reason = slotLeftOut(slot, options);
    if (reason.empty()) return "";  // one run of it is in the pipeline (dce runs twice)
    if (why.empty()) why = reason;
  }
  return why;
}

std::string checkDisabledPasses(const std::set<std::string>& names) {
  for (const std::string& name : names) {
    if (!findPass(name)) return fmt::format("--disable-pass={}: no such pass (`texc passes` lists them)", name);
    for (const Required& r : kRequired)
      if (name == r.name) return fmt::format("--disable-pass={}: the pipeline cannot run without it: {}", name, r.why);
  }
  return "";
}

std::string checkPassesInPipeline(const std::set<std::string>& printAfter, const std::set<std::string>& printBefore,
                                  const PipelineOptions& options, Stage until) {
  const std::vector<const PassInfo*> reached = buildPipeline(options, until);
  for (const auto* names : {&printAfter, &printBefore})
    for (const std::string& name : *names) {
      if (!findPass(name)) continue;
      if (std::string why = whyNotInPipeline(name, options); !why.empty())
      {
        // why is "SWITCH: explanation".
        size_t colon = why.find(": ");
        return fmt::format("pass '{}' is not in this pipeline ({}): {} (--print-{}={}; `texc passes{}` lists the passes that run)", name,
                           why.substr(0, colon), colon == std::string::npos ? "" : why.substr(colon + 2),
                           names == &printAfter ? "after" : "before", name, options.target == Target::Cuda ? " --target cuda" : "");
      }
      const bool runs = std::any_of(reached.begin(), reached.end(), [&](const PassInfo* p) { return name == p->name; });
      if (!runs)
        return fmt::format("pass '{}' does not run: the compile stops before it, at what --emit asks for (--print-{}={}; emit a later "
                           "form, or print after an earlier pass)",
                           name, names == &printAfter ? "after" : "before", name);
    }
  return "";
}

}  // namespace texc
