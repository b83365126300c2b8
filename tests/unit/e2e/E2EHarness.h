// The end-to-end harness: finds the programs (tests/e2e/*.tex and examples/*.tex), prepares each
// one (analysis, inputs as .npy, float64 reference, error bounds), runs the texc binary on it
// under every variant as a subprocess, and compares what it wrote with the reference.
// docs/testing.md describes the suite; E2ETests.cpp holds the test cases.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/reference/ErrorBound.h"
#include "compiler/reference/Tolerance.h"
#include "compiler/reference/Reference.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"

namespace texc::e2e {

// One program of the suite, with the -D overrides from its `# e2e:` directive.
struct ProgramSpec {
  std::string label;                    // "tests/e2e/matmul_odd.tex -D M=7 -D K=257 -D N=33"
  std::filesystem::path path;           // absolute
  std::string relPath;                  // relative to the source tree
  std::vector<std::string> defineArgs;  // {"-D", "M=7", ...}
  LetOverrides overrides;
  std::vector<std::string> scheduleArgs;  // {"--schedule", PATH} from a `# e2e-schedule: FILE` line
  std::string directiveError;           // a malformed or missing directive
};

// Every program: tests/e2e/*.tex, then examples/*.tex, each sorted by name. Examples take their
// directive from the file or, failing that, from tests/e2e/examples.e2e.
std::vector<ProgramSpec> discoverPrograms();

// Parses the arguments of a directive ("-D N=33 -D D=7"). Returns an error message or nothing.
std::optional<std::string> parseDirective(const std::string& text, ProgramSpec& spec);

// One way of running texc: a name for section labels and the extra command-line switches.
struct Variant {
  std::string name;
  std::vector<std::string> args;
};
const std::vector<Variant>& variants();
// Whether device 0 opens through the CUDA driver (then variants() includes `--target cuda`).
bool gpuOpens();

// The result of one subprocess.
struct ProcessResult {
  int exitCode = -1;     // valid when the process exited normally
  int signal = 0;        // the signal that killed it, or 0
  bool timedOut = false;
  bool spawnFailed = false;
  double seconds = 0;
  std::string describe() const;  // "exit 0", "killed by signal 11", ...
};

// A command, its standard output and error both going to `logPath`.
struct Job {
  std::vector<std::string> argv;
  std::filesystem::path logPath;
  ProcessResult result;
};
// Runs the jobs, at most `parallel` at a time, each killed after `timeoutSeconds`.
void runJobs(std::vector<Job>& jobs, int parallel, double timeoutSeconds);

// Everything computed once per program and shared by its variants' sections.
struct PreparedProgram {
  std::string error;  // non-empty: the program could not be prepared (every variant fails)
  Program program;
  std::vector<RefTensor> reference;  // by tensor id
  BoundResult bounds;
  BoundResult fastBounds;  // the same for --math=fast (wider charges for the fast forms)
  std::filesystem::path dir;
  std::vector<Job> runs;  // one per variant, in variants() order
};

// The program of `spec` after parse and sema alone (no inputs, reference or runs), computed once;
// null when it does not analyze (prepare() says why). For tests that pick programs before
// paying for their runs.
const Program* analyzedProgram(const ProgramSpec& spec);

// Prepares `spec` once (and runs every variant); later calls return the cached result. The texc
// runs get TEXC_POISON=1 unless the environment sets it: poisoned memory, the kernels run twice.
const PreparedProgram& prepare(const ProgramSpec& spec);

// Checks one variant's run of a prepared program: exit status, the files in the output
// directory, and every output against the reference. Returns the problems found (empty: pass).
std::vector<std::string> checkRun(const ProgramSpec& spec, const PreparedProgram& prep, size_t variantIndex);

// The command line of a job, quoted for a shell (printed so that a failure can be rerun).
std::string shellCommand(const std::vector<std::string>& argv);

// Keeps the temporary directory at exit (it is removed otherwise) so failures can be rerun.
void keepTemporaryFiles();

}  // namespace texc::e2e
