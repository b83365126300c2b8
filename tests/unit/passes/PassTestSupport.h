// Shared helpers of the pass tests: finding the test programs and their options, running the
// pipeline in-process pass by pass, golden files (TEXC_ACCEPT=1 rewrites them) with a readable
// diff on mismatch, and running graphs through the float64 reference on random inputs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/loops/Schedule.h"
#include "compiler/passes/Pass.h"
#include "compiler/passes/PassManager.h"
#include "compiler/reference/Reference.h"
#include "frontend/Diagnostics.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"
#include "tests/support/GoldenFiles.h"

namespace texc::passtest {

namespace fs = std::filesystem;

// ---- files and goldens (shared with the other layers' golden tests) --------------------------

using namespace testsupport;

// ---- test programs -----------------------------------------------------------------------------

// How a test program is compiled: -D overrides and the fusion mode.
struct ProgramOptions {
  LetOverrides overrides;
  FuseMode fuse = FuseMode::All;
};

// Reads the options of every line starting with `# golden:` in `text`: `-D NAME=VALUE`,
// `-DNAME=VALUE` and `--fuse=none|elementwise|all`. Returns an error message for anything else.
std::optional<std::string> readGoldenOptions(const std::string& text, ProgramOptions& out);

// Parses one line of `-D NAME=VALUE` / `--fuse=MODE` words (the part after `# golden:`).
std::optional<std::string> readOptionWords(const std::string& words, ProgramOptions& out);

struct TestProgram {
  std::string name;  // the source path from the repository root, or a made-up name for inline text
  std::string fileName;  // what diagnostics call the file
  std::string text;
  ProgramOptions options;
  std::string error;  // why the program cannot be used (bad options), empty when it can
};

// The file tests/golden/graph/example-sizes.txt: one line per example, `NAME.tex -D N=8 ...`,
// giving the small sizes the examples are compiled with in every pass test.
fs::path exampleSizesFile();

// Every examples/*.tex with its small sizes (error set when the sizes file has no line for it).
std::vector<TestProgram> examplePrograms();
// A .tex file with the options of its `# golden:` lines.
TestProgram fileProgram(const fs::path& path);
// Program text given inline (regression tests).
TestProgram inlineProgram(const std::string& name, const std::string& text, ProgramOptions options = {});
// Every example and every tests/golden/**/*.tex.
std::vector<TestProgram> allPrograms();

// ---- running the pipeline ----------------------------------------------------------------------

// A program being compiled: owns the source and diagnostics the CompileState points at. Not
// movable (CompileState is not), so it lives behind a unique_ptr. Its code is for --cpu haswell,
// whatever the host, so the text the tests read is the same on every machine.
class Session {
 public:
  explicit Session(const TestProgram& program);
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  CompileState& state() { return state_; }
  const CompileState& state() const { return state_; }
  DiagnosticEngine& diags() { return diags_; }
  // Why the program could not be compiled this far, empty while all is well.
  const std::string& failure() const { return failure_; }

  // Runs parse, checks the -D names against the module (as texc does), then the rest of
  // `pipeline` through the pass manager with `inst`. Returns false (failure() says why) on errors.
  bool runThroughPassManager(const std::vector<const PassInfo*>& pipeline, const Instrumentation& inst);

  // Runs one pass directly (no pass manager); returns whether it changed anything. Sets failure()
  // when the pass reported errors.
  bool runPass(const PassInfo& pass);

 private:
  SourceFile file_;
  DiagnosticEngine diags_;
  CompileState state_;
  std::string failure_;
};

std::unique_ptr<Session> startSession(const TestProgram& program);

// The passes of buildPipeline(options, Stage::Graph) that work on the graph (those after sema),
// in order: with --fuse=none, no fuse and no second dce.
std::vector<const PassInfo*> graphPipeline(const PipelineOptions& options = {});

// Runs `pass` on a copy of `graph` with `options`; returns the new graph. `changed` receives what
// the pass returned, `error` the diagnostics when it reported errors.
Graph applyGraphPass(const PassInfo& pass, const Graph& graph, const PipelineOptions& options, bool& changed,
                     std::string& error);

// Every field of the graph as text (tensors, nodes, value trees with constants by their bits):
// equal exactly when the graphs are the same data, whatever the printers show.
std::string graphStructure(const Graph& g);

// ---- loop programs -----------------------------------------------------------------------------

// A program lowered to the loop IR by the pipeline, with its graph (for the inputs and outputs).
struct LoweredLoops {
  Graph graph;
  loops::LoopProgram loops;
};

// The loop program of `text` as lowering makes it: the tile pass off, and split-borders too
// unless `splitBorders`, so that tests of a loop pass start from the lowered nests.
LoweredLoops lowerToLoops(const std::string& name, const std::string& text, bool splitBorders = false);

// The loop program exactly as the lower-to-loops pass leaves it (no loop pass after it): what the
// tile pass receives in the pipeline.
LoweredLoops lowerOnly(const std::string& name, const std::string& text);

// Runs `lp` (a rewrite of l.loops) under the loop-IR interpreter on the random inputs of `seed`
// (randomInputs kind 0); fails the test if the interpreter does. Returns every buffer.
std::vector<std::vector<double>> interpretOnRandomInputs(const LoweredLoops& l, const loops::LoopProgram& lp, uint64_t seed);

// A fixed AVX2 machine for the tile pass (8 floats per register, 16 registers, 32 KiB L1, 512 KiB
// L2), so that tiled nests do not depend on the host.
loops::MachineInfo avx2Machine(int threads = 4);

// ---- reference runs ----------------------------------------------------------------------------

// Deterministic inputs for every input of `g`. Kind 0: uniform in [-2, 2); kind 1: mostly
// uniform, with about one value in four taken from 0, -0, 1, -1, 0.5, 2, 1e-300, inf, -inf, NaN.
std::vector<RefTensor> randomInputs(const Graph& g, uint64_t seed, int kind);

// The outputs of `g` on `inputs`, in g.outputs order; throws what evaluateReference throws.
std::vector<RefTensor> referenceOutputs(const Graph& g, const std::vector<RefTensor>& inputs);

// Empty when the two sets of outputs (of graphs `a` and `b`) are bit for bit the same (any NaN
// equals any NaN); otherwise what differs first, with both values.
std::string compareOutputsExactly(const Graph& a, const std::vector<RefTensor>& ra, const Graph& b,
                                  const std::vector<RefTensor>& rb);

}  // namespace texc::passtest
