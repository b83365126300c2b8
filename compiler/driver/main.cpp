// texc: the command line (spec section 6). CLI11 parses; each subcommand is a function in
// Commands.h. Exit statuses: 0 success, 1 program errors, 2 usage, 3 run-time failure.
#include <CLI/CLI.hpp>

#include <iostream>

#include "compiler/driver/Commands.h"
#include "compiler/driver/Frontend.h"

namespace {

using namespace texc;

void addCommon(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("FILE", o.file, "the .tex program")->required();
  cmd->add_option("-D", o.defines, "override a literal 'let': -D NAME=VALUE")->type_name("NAME=VALUE");
}

// -O0 .. -O3: CLI11 reads "-O3" as the short option -O with the value 3.
void addOptLevel(CLI::App* cmd, PipelineOptions& o) {
  cmd->add_option("-O", o.optLevel, "optimisation level 0-3 (-O0 calls libm for math functions)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"texc: a tensor-expression compiler"};
  app.require_subcommand(1);

  CommonOptions checkOpts;
  CLI::App* check = app.add_subcommand("check", "parse and analyse a program; print diagnostics; exit 1 on errors");
  addCommon(check, checkOpts);

  CompileOptions compileOpts;
  CLI::App* compile = app.add_subcommand("compile", "compile a program and emit one of its forms");
  addCommon(compile, compileOpts.common);
  addOptLevel(compile, compileOpts.pipeline);
  compile->add_option("--emit", compileOpts.emit,
                      "ast (parsed program as source), sema (analysed program), loops (loop IR), "
                      "llvm (.ll), asm, obj")
      ->check(CLI::IsMember({"ast", "sema", "loops", "llvm", "asm", "obj"}))
      ->capture_default_str();
  compile->add_option("--target", compileOpts.target, "cpu")->capture_default_str();
  compile->add_option("-o", compileOpts.output, "output path (default: standard output)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  try {
    if (check->parsed()) return commandCheck(checkOpts);
    if (compile->parsed()) return commandCompile(compileOpts);
  } catch (const CommandError& e) {
    std::cerr << "texc: error: " << e.message << "\n";
    return e.exitCode;
  }
  return kExitUsage;
}
