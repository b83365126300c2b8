// libFuzzer target over the whole front end: lexer, parser, sema and the printers.
//
// Any input must give diagnostics or a program, never a crash, a hang, a leak or undefined
// behaviour (the build adds ASan and UBSan). Besides not crashing, two properties are checked:
//   - a program is produced exactly when the engine holds no error;
//   - printModule round-trips: reparsing the printed module gives an equal module (the printer
//     parenthesises every operation, so deep trees may only fail with NestingTooDeep).
// Run it with scripts/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc {
namespace {

[[noreturn]] void violated(const char* what, const std::string& detail) {
  std::fprintf(stderr, "frontend_fuzzer: property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void checkRoundTrip(const Module& module) {
  std::string printed = printModule(module);
  SourceFile again("<printed>", printed);
  DiagnosticEngine diags(&again);
  Module reparsed = parse(again, diags);
  if (!diags.hasErrors()) {
    if (!equalModules(module, reparsed)) violated("printModule output reparses to a different module", printed);
    return;
  }
  for (const Diagnostic& d : diags.diagnostics())
    if (d.id != DiagId::NestingTooDeep && d.id != DiagId::TooManyErrors)
      violated("printModule output does not parse", diags.render() + "--- printed:\n" + printed);
}

void runOne(const uint8_t* data, size_t size) {
  SourceFile file("fuzz.tex", std::string(reinterpret_cast<const char*>(data), size));
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  checkRoundTrip(module);
  // The printers are run for their side effects on the sanitizers; the text is kept alive in
  // `sink` so the calls are not optimised away.
  static volatile size_t sink = 0;
  if (!diags.hasErrors()) {
    std::optional<Program> program = analyze(module, diags);
    if (program.has_value() == diags.hasErrors())
      violated("analyze returned a program together with errors (or none without one)", diags.render());
    if (program) sink = sink + printProgram(*program).size();
  }
  sink = sink + diags.render(false).size() + diags.render(true).size();
}

}  // namespace
}  // namespace texc

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  texc::runOne(data, size);
  return 0;
}
