// Running the pipeline from the driver: read the file, run the passes up to a stage with the
// user's instrumentation, print diagnostics.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/passes/PassManager.h"
#include "frontend/Diagnostics.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {

// Exit statuses of every texc command (spec section 6).
// kExitMismatch: results differ from the float64 reference beyond their error bound (the outputs
// are still written).
enum ExitCode : int { kExitOk = 0, kExitProgramError = 1, kExitUsage = 2, kExitRuntime = 3, kExitMismatch = 4 };

// Thrown for bad command-line usage (exit 2) and run-time failures (exit 3) alike.
struct CommandError {
  int exitCode;
  std::string message;
};

struct CompileRequest {
  std::string path;
  // The program's text, when it does not come from a file (the Python module's compile(source)):
  // `path` then only names it in diagnostics.
  std::optional<std::string> sourceText;
  bool printDiagnostics = true;  // to standard error; off where the caller reports them itself
  std::vector<std::string> defines;  // -D NAME=VALUE
  PipelineOptions options;
  Instrumentation instrumentation;
  bool timePasses = false;
  Stage until = Stage::LLVM;
  // A pass named by --print-after/--print-before that the options leave out of the pipeline is a
  // usage error (exit 2). Off for the variants a command compiles with switches of its own
  // (compare's --fuse=none), where the user's print options apply to the passes that do run.
  bool printedPassesMustRun = true;
};

// The outcome of compileProgram; `state` holds every IR produced. `ok` is false when the program
// has errors (already printed).
struct Compilation {
  std::unique_ptr<SourceFile> file;
  std::unique_ptr<DiagnosticEngine> diags;
  CompileState state;
  std::vector<PassTiming> timings;
  bool ok = false;
};

// Reads `path` (CommandError with exit 2 when unreadable).
std::unique_ptr<SourceFile> readSourceFile(const std::string& path);

// Parses "NAME=VALUE" options into overrides (CommandError, exit 2, when malformed).
LetOverrides parseDefines(const std::vector<std::string>& defines);

// Runs the pipeline of `request.options` (buildPipeline) up to `request.until`. -D names, and the
// passes the print options name, are checked first (CommandError, exit 2). Diagnostics go to
// standard error.
std::unique_ptr<Compilation> compileProgram(const CompileRequest& request);

// The mode the generated code's elementary functions are in: --math on the cpu target; the CUDA
// backend has only the precise forms (docs/cuda.md).
MathMode effectiveMathMode(const PipelineOptions& options);

}  // namespace texc
