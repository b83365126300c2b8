#include "compiler/driver/Frontend.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "compiler/driver/OutputFile.h"
#include "compiler/passes/Pipeline.h"
#include "frontend/Parser.h"

namespace texc {

std::unique_ptr<SourceFile> readSourceFile(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    throw CommandError{kExitUsage, fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  if (S_ISDIR(st.st_mode)) throw CommandError{kExitUsage, fmt::format("cannot read '{}': it is a directory", path)};
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CommandError{kExitUsage, fmt::format("cannot read '{}': {}", path, std::strerror(errno))};
  std::ostringstream ss;
  ss << in.rdbuf();
  return std::make_unique<SourceFile>(path, ss.str());
}

LetOverrides parseDefines(const std::vector<std::string>& defines) {
  LetOverrides out;
  for (const std::string& d : defines) {
    size_t eq = d.find('=');
    std::string name = d.substr(0, eq);
    if (eq == std::string::npos || name.empty())
      throw CommandError{kExitUsage, fmt::format("-D '{}': expected NAME=VALUE", d)};
    std::string value = d.substr(eq + 1);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (value.empty() || ec != std::errc() || p != value.data() + value.size())
      throw CommandError{kExitUsage, fmt::format("-D {}: '{}' is not an integer", name, value)};
    if (v <= 0) throw CommandError{kExitUsage, fmt::format("-D {}={}: sizes must be > 0", name, v)};
    out[name] = v;
  }
  return out;
}

std::unique_ptr<Compilation> compileProgram(const CompileRequest& req) {
  auto c = std::make_unique<Compilation>();
  LetOverrides overrides = parseDefines(req.defines);
  if (std::string err = checkPassNames(req.instrumentation); !err.empty()) throw CommandError{kExitUsage, err};
  if (std::string err = checkDisabledPasses(req.options.disabledPasses); !err.empty()) throw CommandError{kExitUsage, err};
  if (req.printedPassesMustRun)
    if (std::string err = checkPassesInPipeline(req.instrumentation.printAfter, req.instrumentation.printBefore, req.options,
                                                req.until);
        !err.empty())
      throw CommandError{kExitUsage, err};
  c->file = req.sourceText ? std::make_unique<SourceFile>(req.path, *req.sourceText) : readSourceFile(req.path);
  c->diags = std::make_unique<DiagnosticEngine>(c->file.get());
  CompileState& s = c->state;
  s.file = c->file.get();
  s.diags = c->diags.get();
  s.overrides = overrides;
  s.options = req.options;

  // -D names are checked against the parsed module before analysis uses them. The pipeline runs
  // in one piece (so dump files are numbered as `texc passes` lists them); the names are checked
  // on a parse of their own, whose diagnostics are dropped: the pipeline's parse reports them.
  if (!overrides.empty()) {
    DiagnosticEngine scratch(c->file.get());
    Module module = parse(*c->file, scratch);
    if (!scratch.hasErrors())
      if (auto err = checkOverrides(module, overrides)) throw CommandError{kExitUsage, *err};
  }
  c->ok = runPipeline(s, buildPipeline(req.options, req.until), req.instrumentation, &c->timings);
  if (req.printDiagnostics) c->diags->print(std::cerr, stderrWantsColor());
  if (!s.usageError.empty())
    throw CommandError{kExitUsage, req.options.schedulePath.empty()
                                       ? s.usageError
                                       : fmt::format("schedule file '{}': {}", req.options.schedulePath, s.usageError)};
  if (req.timePasses) printTimings(std::cerr, c->timings);
  // --dump-dir also gets the final LLVM module (the one the JIT or the emitters get) by a fixed name.
  if (c->ok && !req.instrumentation.dumpDir.empty() && req.until == Stage::LLVM && s.llvmModule)
    writeFileAtomic((std::filesystem::path(req.instrumentation.dumpDir) / "final.ll").string(), printStage(s, Stage::LLVM));
  return c;
}

}  // namespace texc
