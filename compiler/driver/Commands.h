// The texc subcommands, each a function from its options to an exit status (spec section 6).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "compiler/driver/Frontend.h"

namespace texc {

// What every command that reads a program shares: the file, -D, the pipeline switches and the
// pass instrumentation.
struct ProgramOptions {
  std::string file;
  std::optional<std::string> sourceText;  // the program itself, `file` only naming it (CompileRequest)
  std::vector<std::string> defines;
  PipelineOptions pipeline;
  Instrumentation instrumentation;
  std::vector<std::string> printAfter;   // --print-after=PASS,...
  std::vector<std::string> printBefore;  // --print-before=PASS,...
  std::string fuse = "all";
  std::string math = "precise";  // --math precise|fast
  bool noPlan = false;  // --no-plan: one buffer per intermediate, no memory plan
  bool noTile = false;  // --no-tile
  std::vector<std::string> disablePasses;  // --disable-pass=PASS,...
  std::string schedulePath;  // --schedule FILE (docs/scheduling.md)
  std::string conv;          // --conv implicit|im2col|direct (empty: the schedule's, else implicit)
  bool timePasses = false;

  // The compile request these options describe, running up to `until`.
  CompileRequest request(Stage until) const;
};

struct CompileOptions {
  ProgramOptions program;
  std::string target = "cpu";
  std::string emit;    // empty: llvm for the cpu target, cuda for the cuda target
  std::string arch;    // --arch sm_XX for --emit ptx; empty: the GPU's, or sm_90 without one
  std::string output;  // -o; empty or "-" is standard output
};

struct RunOptions {
  ProgramOptions program;
  std::vector<std::string> inputs;  // NAME=PATH.npy
  std::optional<uint64_t> randomSeed;
  std::string outputDir = ".";
  std::string target = "cpu";
  int threads = 0;  // 0: one per core
  bool check = false;
  int repeat = 0;  // > 0: time that many runs after the first and print median and min
  bool profile = false;  // sample the timed runs and print where their time went (--repeat > 0, cpu)
};

struct ExplainOptions {
  ProgramOptions program;
  std::string hw = "host";  // host (measured), h100, h200, or figures (checkHardwareSpec)
};

struct CompareOptions {
  ProgramOptions program;
  uint64_t seed = 1;
  int threads = 0;
  int repeat = 10;
  bool json = false;
  bool emitLoops = false;  // --emit: show each variant's kernels (loop IR) first
  std::string target = "cpu";  // cpu or cuda (each variant runs on the GPU)
};

// texc compare's results as data, for texc explore --measure: the printed table (header row
// first) and each variant's kernels, median time and bandwidth, and whether it is within its
// error bound.
struct CompareVariantResult {
  std::string name;
  size_t kernels = 0;
  double bytes = 0;  // the cost model's
  double flops = 0;
  double medianMs = 0;
  double gbps = 0;
  bool withinBound = true;
};
struct CompareReport {
  std::vector<std::vector<std::string>> table;
  std::vector<CompareVariantResult> variants;
};

// texc explore (docs/explore.md): one self-contained HTML page about one program.
struct ExploreOptions {
  ProgramOptions program;
  std::string output;         // -o; empty: NAME.html (the program's name) in the current directory
  std::string target = "cpu";  // cpu or cuda (the generated code is CUDA C; nothing runs)
  bool measure = false;       // --measure: run texc compare and add its table and a bar chart
  int threads = 0;            // --measure: threads (0: one per core)
  int repeat = 5;             // --measure: timed runs per variant
  bool assembly = false;      // --asm: the assembly of the generated code too (cpu target)
  std::string layout = "auto";  // --graph-layout auto|dot|builtin
  bool errorPage = false;     // --error-page: a program with errors still gets a page (exit 1)
};

// texc tune (docs/scheduling.md, "Tuning: texc tune").
struct TuneOptions {
  ProgramOptions program;
  int threads = 0;     // 0: one per core
  int repeat = 5;      // timed runs per candidate, after a warm-up
  uint64_t seed = 1;   // random inputs
  std::string output;  // -o: also (or, without a cache directory, only) write the schedule here
  bool force = false;  // measure again even when the cache has this program's schedule
};

// Usage error (exit 2) naming the missing features when the host cannot run code for `cpu`.
void requireHostRuns(const std::string& cpu);

// The whole command line (main.cpp's): parses argv, runs the subcommand, returns the exit status.
// The Python module's `python -m texc` calls it too.
int runCommandLine(int argc, char** argv);

int commandCheck(const ProgramOptions& options);
int commandTune(const TuneOptions& options);
int commandExplain(const ExplainOptions& options);
int commandCompare(const CompareOptions& options);
// commandCompare, its report printed to `out` and, when `report` is given, returned as data too.
int runCompare(const CompareOptions& options, std::ostream& out, CompareReport* report);
int commandExplore(const ExploreOptions& options);
int commandCompile(const CompileOptions& options);
int commandRun(const RunOptions& options);
// texc passes: the pipeline that `options`' switches (and `target`) choose; the file is not read.
int commandPasses(const ProgramOptions& options, const std::string& target = "cpu");

}  // namespace texc
