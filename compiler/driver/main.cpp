// texc: the command line (spec section 6). Each subcommand is a small function; CLI11 parses.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "compiler/driver/Frontend.h"

namespace texc {
namespace {

// Writes `text` to `path` all or nothing: a temporary file beside it, renamed into place.
void writeFileAtomic(const std::string& path, const std::string& text) {
  std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
  }
}

void emitText(const std::string& outPath, const std::string& text) {
  if (outPath.empty() || outPath == "-") std::cout << text;
  else writeFileAtomic(outPath, text);
}

struct CommonOptions {
  std::string file;
  std::vector<std::string> defines;
};

void addCommon(CLI::App* cmd, CommonOptions& o) {
  cmd->add_option("FILE", o.file, "the .tex program")->required();
  cmd->add_option("-D", o.defines, "override a literal 'let': -D NAME=VALUE")->type_name("NAME=VALUE");
}

int runCheck(const CommonOptions& o) {
  FrontendResult r = runFrontend(o.file, parseDefines(o.defines));
  return r.diags->hasErrors() ? kExitProgramError : kExitOk;
}

struct CompileOptions {
  CommonOptions common;
  std::string emit = "sema";
  std::string output;
};

int runCompile(const CompileOptions& o) {
  bool analyse = o.emit != "ast";
  FrontendResult r = runFrontend(o.common.file, parseDefines(o.common.defines), analyse);
  if (r.diags->hasErrors()) return kExitProgramError;
  if (o.emit == "ast") emitText(o.output, printModule(r.module));
  else if (o.emit == "sema") emitText(o.output, printProgram(*r.program));
  return kExitOk;
}

}  // namespace
}  // namespace texc

int main(int argc, char** argv) {
  using namespace texc;
  CLI::App app{"texc: a tensor-expression compiler"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "show help for every command");

  CommonOptions checkOpts;
  CLI::App* check = app.add_subcommand("check", "parse and analyse a program; print diagnostics; exit 1 on errors");
  addCommon(check, checkOpts);

  CompileOptions compileOpts;
  CLI::App* compile = app.add_subcommand("compile", "compile a program and emit one of its forms");
  addCommon(compile, compileOpts.common);
  compile->add_option("--emit", compileOpts.emit, "what to emit: ast (the parsed program as source), sema (the analysed program)")
      ->check(CLI::IsMember({"ast", "sema"}))
      ->capture_default_str();
  compile->add_option("-o", compileOpts.output, "output path (default: standard output)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kExitUsage;
  }

  try {
    if (check->parsed()) return runCheck(checkOpts);
    if (compile->parsed()) return runCompile(compileOpts);
  } catch (const CommandError& e) {
    std::cerr << "texc: error: " << e.message << "\n";
    return e.exitCode;
  }
  return kExitUsage;
}
