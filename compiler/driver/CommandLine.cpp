// texc's command line (spec section 6), for the executable (main.cpp) and `python -m texc`.
// CLI11 parses; each subcommand is a function in Commands.h. Exit statuses: 0 success, 1 program
// errors, 2 usage, 3 run-time failure, 4 results beyond their error bound against the float64
// reference (run --check, compare).
#include <CLI/CLI.hpp>

#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <stdexcept>

#include "compiler/analysis/HostModel.h"
#include "compiler/driver/Commands.h"
#include "compiler/driver/OutputFile.h"

namespace texc {

namespace {

// The switches that choose the pipeline (and what its passes generate): on every command that
// compiles, and on `texc passes`, which lists the pipeline they choose.
void addPipelineSwitches(CLI::App* cmd, ProgramOptions& o) {
  // CLI11 reads "-O3" as the short option -O with the value 3.
  cmd->add_option("-O", o.pipeline.optLevel, "optimisation level 0-3 (-O0 calls libm for math functions)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--fuse", o.fuse, "fusion: none (one kernel per operator), elementwise, all (see docs/cli.md)")
      ->check(CLI::IsMember({"none", "elementwise", "all"}))
      ->capture_default_str();
  cmd->add_flag("--no-plan", o.noPlan, "no memory plan: every intermediate gets a buffer of its own (for comparison)");
  cmd->add_flag("--no-tile", o.noTile, "keep contractions untiled (skip the tile pass)");
  cmd->add_option("--schedule", o.schedulePath, "tile-size overrides for contractions (docs/scheduling.md)")->type_name("FILE");
  cmd->add_option("--conv", o.conv, "convolutions as implicit GEMM (default), im2col + GEMM, or direct (untiled) loops")
      ->type_name("implicit|im2col|direct");
  cmd->add_option("--disable-pass", o.disablePasses, "leave these passes out of the pipeline (`texc passes` lists them)")
      ->delimiter(',')
      ->type_name("PASS,...");
  cmd->add_option("--math", o.math,
                  "elementary functions: precise (within 2 ulp) or fast (cheaper, errors in docs/vector-math.md); on the cuda "
                  "target fast also runs f32 contractions on TF32 tensor cores (docs/cuda.md)")
      ->check(CLI::IsMember({"precise", "fast"}))
      ->capture_default_str();
  cmd->add_option("--cpu", o.pipeline.cpu,
                  "the CPU to generate code for: host, or an LLVM CPU name (haswell, skylake-avx512, znver3, ...)")
      ->capture_default_str();
}

void addProgramOptions(CLI::App* cmd, ProgramOptions& o, bool pipeline) {
  cmd->add_option("FILE", o.file, "the .tex program")->required();
  cmd->add_option("-D", o.defines, "override a literal 'let': -D NAME=VALUE")->type_name("NAME=VALUE");
  if (!pipeline) return;
  addPipelineSwitches(cmd, o);
  cmd->add_flag("--print-after-all", o.instrumentation.printAfterAll, "print the IR after every pass (to standard error)");
  cmd->add_option("--print-after", o.printAfter, "print the IR after these passes")->delimiter(',')->type_name("PASS,...");
  cmd->add_option("--print-before", o.printBefore, "print the IR before these passes")->delimiter(',')->type_name("PASS,...");
  cmd->add_option("--dump-dir", o.instrumentation.dumpDir, "write the IR after each pass to numbered files in DIR");
  cmd->add_flag("--time-passes", o.timePasses, "print the time of every pass");
}

}  // namespace

int runCommandLine(int argc, char** argv) {
  CLI::App app{"texc: a tensor-expression compiler"};
  app.require_subcommand(1);

  ProgramOptions checkOpts;
  CLI::App* check = app.add_subcommand("check", "parse and analyse a program; print diagnostics; exit 1 on errors");
  addProgramOptions(check, checkOpts, false);

  CompileOptions compileOpts;
  CLI::App* compile = app.add_subcommand("compile", "compile a program and emit one of its forms");
  addProgramOptions(compile, compileOpts.program, true);
  compile->add_option("--emit", compileOpts.emit,
                      "ast (parsed program as source), sema (analysed program), ir (dataflow graph), "
                      "dot (dataflow graph for Graphviz), loops (loop IR), plan (memory plan), llvm (.ll), asm, obj (cpu target); "
                      "cuda (.cu source), ptx (cuda target); default llvm, or cuda with --target cuda")
      ->check(CLI::IsMember({"ast", "sema", "ir", "dot", "loops", "plan", "llvm", "asm", "obj", "cuda", "ptx"}));
  compile->add_option("--target", compileOpts.target, "cpu or cuda (--emit cuda|ptx select cuda)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  compile->add_option("--arch", compileOpts.arch, "GPU architecture for --emit ptx (default: the GPU's, or sm_90)")->type_name("sm_XX");
  compile->add_option("-o", compileOpts.output, "output path (default: standard output)");

  RunOptions runOpts;
  CLI::App* run = app.add_subcommand("run", "compile and run a program; write each output as DIR/NAME.npy");
  addProgramOptions(run, runOpts.program, true);
  run->add_option("--input", runOpts.inputs, "bind an input to a .npy file: NAME=PATH.npy")->type_name("NAME=PATH");
  run->add_option("--random", runOpts.randomSeed, "fill inputs not given with reproducible values in [-1, 1)")->type_name("SEED");
  run->add_option("--output-dir", runOpts.outputDir, "where outputs go (created if missing)")->capture_default_str();
  run->add_option("--target", runOpts.target, "cpu or cuda (a GPU and its driver are needed)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  run->add_option("--threads", runOpts.threads, "threads to run on (default: one per core)");
  run->add_option("--repeat", runOpts.repeat, "after the run, time N more runs and print the median and min kernel time")
      ->check(CLI::NonNegativeNumber);
  run->add_flag("--check", runOpts.check, "also run the float64 reference, print each output's error, exit 4 when one is beyond its error bound");
  run->add_flag("--profile", runOpts.profile,
                "with --repeat: sample the timed runs and print each kernel's share, each loop IR statement's, and the hottest loops instruction by instruction (cpu target)");

  ExplainOptions explainOpts;
  CLI::App* explain = app.add_subcommand("explain", "dataflow table, kernels fused vs unfused with bytes, FLOPs and roofline time, fusion decisions");
  addProgramOptions(explain, explainOpts.program, true);
  explain->add_option("--hw", explainOpts.hw,
                      "hardware model: host (measured, cached for a day), h100, h200, or figures bw=GB/s,peak=GFLOP/s[,launch=us]")
      ->check(CLI::Validator([](std::string& text) { return checkHardwareSpec(text); }, "MODEL"))
      ->capture_default_str();

  CompareOptions compareOpts;
  CLI::App* compare = app.add_subcommand("compare", "run the program unfused, elementwise-fused and fused; time and check each");
  addProgramOptions(compare, compareOpts.program, true);
  compare->add_option("--random", compareOpts.seed, "seed of the random inputs")->capture_default_str();
  compare->add_option("--threads", compareOpts.threads, "threads to run on (default: one per core)");
  compare->add_option("--repeat", compareOpts.repeat, "timed runs per variant, after one warm-up")->capture_default_str();
  compare->add_flag("--json", compareOpts.json, "print the variants as JSON");
  compare->add_flag("--emit", compareOpts.emitLoops, "show the generated kernels (loop IR) of each variant first");
  compare->add_option("--target", compareOpts.target, "cpu or cuda (a GPU and its driver are needed)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();

  ExploreOptions exploreOpts;
  CLI::App* explore = app.add_subcommand("explore", "write one self-contained HTML page about a program: source, passes with diffs, graphs, memory plan, roofline, code");
  addProgramOptions(explore, exploreOpts.program, true);
  explore->add_option("-o", exploreOpts.output, "the page (default: NAME.html in the current directory)")->type_name("PATH");
  explore->add_option("--target", exploreOpts.target, "cpu or cuda (show CUDA C; nothing runs without --measure)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  explore->add_flag("--measure", exploreOpts.measure, "also run texc compare and add its table and a bar chart of the variants' times");
  explore->add_option("--threads", exploreOpts.threads, "--measure: threads to run on (default: one per core)");
  explore->add_option("--repeat", exploreOpts.repeat, "--measure: timed runs per variant, after one warm-up")->capture_default_str();
  explore->add_flag("--asm", exploreOpts.assembly, "also show the assembly of the generated code");
  explore->add_option("--graph-layout", exploreOpts.layout, "auto (Graphviz dot when on PATH), dot, or builtin")
      ->check(CLI::IsMember({"auto", "dot", "builtin"}))
      ->capture_default_str();
  explore->add_flag("--error-page", exploreOpts.errorPage, "a program with errors still gets a page (source and diagnostics); exit 1");

  TuneOptions tuneOpts;
  CLI::App* tune = app.add_subcommand("tune", "time a few tile schedules around the rule; write the fastest as a schedule file (cached)");
  addProgramOptions(tune, tuneOpts.program, true);
  tune->add_option("--threads", tuneOpts.threads, "threads to run on (default: one per core)");
  tune->add_option("--repeat", tuneOpts.repeat, "timed runs per candidate, after one warm-up")->capture_default_str();
  tune->add_option("--random", tuneOpts.seed, "seed of the random inputs")->capture_default_str();
  tune->add_option("-o", tuneOpts.output, "also write the schedule file here");
  tune->add_flag("--force", tuneOpts.force, "measure again even when this program's schedule is cached");

  CLI::App* passes = app.add_subcommand(
      "passes", "list the pass pipeline that the switches choose, in order, each pass with its condition, after the CPU it generates code for");
  ProgramOptions passesOpts;
  addPipelineSwitches(passes, passesOpts);
  std::string passesTarget = "cpu";
  passes->add_option("--target", passesTarget, "list the pipeline of the cpu or the cuda target")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 only says "A subcommand is required" for `texc frobnicate`: name the word it did not know.
    if (argc > 1 && argv[1][0] != '-' && app.get_subcommands([&](CLI::App* sub) { return sub->check_name(argv[1]); }).empty()) {
      std::string known;
      for (const CLI::App* sub : app.get_subcommands(std::function<bool(CLI::App*)>{}))
        known += (known.empty() ? "" : ", ") + sub->get_name();
      std::cerr << "texc: error: unknown command '" << argv[1] << "' (commands: " << known << ")\n";
      return kExitUsage;
    }
    app.exit(e);
    return kExitUsage;
  }

  try {
    auto dispatch = [&] {
      if (check->parsed()) return commandCheck(checkOpts);
      if (compile->parsed()) return commandCompile(compileOpts);
      if (run->parsed()) return commandRun(runOpts);
      if (passes->parsed()) return commandPasses(passesOpts, passesTarget);
      if (explain->parsed()) return commandExplain(explainOpts);
      if (compare->parsed()) return commandCompare(compareOpts);
      if (tune->parsed()) return commandTune(tuneOpts);
      if (explore->parsed()) return commandExplore(exploreOpts);
      return static_cast<int>(kExitUsage);
    };
    // --dump-dir is an output like the others: the passes dump into a staging directory whose
    // files move into DIR only when the command succeeds (or exits 4, whose outputs are written).
    Instrumentation* instrumentation = compile->parsed()   ? &compileOpts.program.instrumentation
                                       : run->parsed()     ? &runOpts.program.instrumentation
                                       : explain->parsed() ? &explainOpts.program.instrumentation
                                       : compare->parsed() ? &compareOpts.program.instrumentation
                                       : tune->parsed()    ? &tuneOpts.program.instrumentation
                                       : explore->parsed() ? &exploreOpts.program.instrumentation
                                                           : nullptr;
    std::optional<StagedDirectory> dumps;
    if (instrumentation && !instrumentation->dumpDir.empty()) {
      dumps.emplace(instrumentation->dumpDir);
      instrumentation->dumpDir = dumps->stagingPath();
    }
    if (compare->parsed() && compare->get_option("--fuse")->count() > 0)
      std::cerr << "texc: note: compare runs every --fuse level as a variant of its own; --fuse changes nothing here\n";
    const int status = dispatch();
    if (dumps && (status == kExitOk || status == kExitMismatch)) dumps->commit();
    return status;
  } catch (const CommandError& e) {
    std::cerr << "texc: error: " << e.message << "\n";
    return e.exitCode;
  } catch (const std::bad_alloc&) {
    std::cerr << "texc: error: out of memory\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "texc: error: " << e.what() << "\n";
    return kExitRuntime;
  }
  return kExitUsage;
}

}  // namespace texc
