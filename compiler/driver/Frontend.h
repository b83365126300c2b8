// Running the front end from the driver: read a file, parse, analyse, print diagnostics.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {

// Exit statuses of every texc command (spec section 6).
enum ExitCode : int { kExitOk = 0, kExitProgramError = 1, kExitUsage = 2, kExitRuntime = 3 };

// Thrown for bad command-line usage (exit 2) and run-time failures (exit 3) alike.
struct CommandError {
  int exitCode;
  std::string message;
};

// A source file carried through the front end. `diags` points into `file`.
struct FrontendResult {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  Module module;
  std::optional<Program> program;  // set when analysis succeeded
};

// Reads `path` (CommandError with exit 2 when unreadable).
std::unique_ptr<SourceFile> readSourceFile(const std::string& path);

// Parses "NAME=VALUE" options into overrides (CommandError, exit 2, when malformed).
LetOverrides parseDefines(const std::vector<std::string>& defines);

// Runs lexer, parser and (when parsing succeeded and `analyse`) semantic analysis. Checks the
// overrides against the module (CommandError, exit 2). Diagnostics are printed to stderr.
FrontendResult runFrontend(const std::string& path, const LetOverrides& overrides, bool analyse = true);

}  // namespace texc
