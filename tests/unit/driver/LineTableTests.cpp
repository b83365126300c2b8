// The loop IR's line table (PipelineOptions::lineTable, run --profile): each statement's line in
// the listing, the DWARF line table the code generator attaches, the JIT reading it back, and
// the code it leaves as it was.
#include <catch2/catch.hpp>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/backend/llvm/CpuExecutable.h"
#include "compiler/backend/llvm/LLVMTarget.h"
#include "compiler/driver/Frontend.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/Walk.h"
#include "tests/unit/driver/DriverTestUtil.h"

namespace texc::drivertest {
namespace {

const char* kLinesSoftmax = R"(let R = 64; let D = 256
input x : f32[R, D]
m[i] = max(j: x[i, j])
e[i, j] = exp(x[i, j] - m[i])
s[i] = sum(j: e[i, j])
output y[i, j] = e[i, j] / s[i]
)";

const char* kLinesMatmul = R"(let N = 96
input A : f32[N, N]
input B : f32[N, N]
output C[i, j] = sum(k: A[i, k] * B[k, j])
)";

std::unique_ptr<Compilation> compile(const std::string& text, bool lineTable, const std::string& cpu = "haswell") {
  CompileRequest request;
  request.path = "lines.tex";
  request.sourceText = text;
  request.options.cpu = cpu;
  request.options.threads = 1;
  request.options.lineTable = lineTable;
  request.until = Stage::LLVM;
  std::unique_ptr<Compilation> c = compileProgram(request);
  REQUIRE(c->ok);
  return c;
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The instructions of an assembly listing: its lines that start with a tab and a mnemonic,
// without the debug directives (.loc, .file, .cfi_*) and the sections they add.
std::vector<std::string> instructions(const std::string& assembly) {
  std::vector<std::string> out;
  for (const std::string& line : linesOf(assembly)) {
    if (line.size() < 2 || line[0] != '\t' || line[1] == '.') continue;
    out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("the listing gives every statement its line, the one it is printed on", "[driver][lines]") {
  std::unique_ptr<Compilation> c = compile(kLinesSoftmax, false);
  std::map<const loops::Stmt*, int> lines;
  const std::string text = loops::printLoopProgram(*c->state.loops, &lines);
  CHECK(text == loops::printLoopProgram(*c->state.loops));  // the same listing either way
  const std::vector<std::string> listing = linesOf(text);
  int statements = 0;
  for (const loops::Kernel& k : c->state.loops->kernels)
    loops::forEachStmt(k.body, [&](const loops::Stmt& s) {
      ++statements;
      REQUIRE(lines.count(&s));
      const int line = lines.at(&s);
      REQUIRE(line >= 1);
      REQUIRE(static_cast<size_t>(line) <= listing.size());
      const std::string& printed = listing[static_cast<size_t>(line) - 1];
      INFO(printed);
      if (s.is<loops::Loop>()) CHECK(printed.find("for ") != std::string::npos);
      if (s.is<loops::AccUpdate>()) CHECK(printed.find("acc") != std::string::npos);
      if (s.is<loops::Store>()) CHECK(printed.find(" = ") != std::string::npos);
    });
  CHECK(statements == static_cast<int>(lines.size()));
}

TEST_CASE("a tile's line is its k loop's", "[driver][lines]") {
  std::unique_ptr<Compilation> c = compile(kLinesMatmul, false);
  std::map<const loops::Stmt*, int> lines;
  const std::vector<std::string> listing = linesOf(loops::printLoopProgram(*c->state.loops, &lines));
  int tiles = 0;
  for (const loops::Kernel& k : c->state.loops->kernels)
    loops::forEachStmt(k.body, [&](const loops::Stmt& s) {
      if (!s.is<loops::Tile>()) return;
      ++tiles;
      const std::string& printed = listing[static_cast<size_t>(lines.at(&s)) - 1];
      INFO(printed);
      CHECK(printed.find("= ") != std::string::npos);
      CHECK(printed.find("sum(k") != std::string::npos);
    });
  CHECK(tiles > 0);
}

TEST_CASE("the line table leaves the code as it was", "[driver][lines]") {
  for (const char* cpu : {"haswell", "skylake-avx512"})
    for (const char* program : {kLinesSoftmax, kLinesMatmul}) {
      INFO(cpu << "\n" << program);
      std::unique_ptr<Compilation> plain = compile(program, false, cpu);
      std::unique_ptr<Compilation> lined = compile(program, true, cpu);
      auto tm = createTargetMachine(cpuTarget(cpu), 3);
      const std::string plainAsm = emitAssembly(*plain->state.llvmModule, *tm);
      const std::string linedAsm = emitAssembly(*lined->state.llvmModule, *tm);
      CHECK(plainAsm.find(".loc") == std::string::npos);
      CHECK(linedAsm.find(".loc") != std::string::npos);
      const std::vector<std::string> a = instructions(plainAsm), b = instructions(linedAsm);
      CHECK(a.size() > 20);
      CHECK(a == b);
    }
}

TEST_CASE("the JIT reads the line table back: the code's rows name the kernel's statements", "[driver][lines]") {
  std::unique_ptr<Compilation> c = compile(kLinesSoftmax, true, "host");
  std::map<const loops::Stmt*, int> lines;
  const std::vector<std::string> listing = linesOf(loops::printLoopProgram(*c->state.loops, &lines));
  std::set<int> statementLines;
  for (const auto& [stmt, line] : lines) statementLines.insert(line);
  auto exe = CpuExecutable::load(std::move(c->state.llvmContext), std::move(c->state.llvmModule), *c->state.loops, 3, cpuTarget("host"));
  bool sawKernel = false, sawExp = false;
  for (const JitFunction& f : exe->jitFunctions()) {
    if (f.name.rfind("texc_", 0) != 0) continue;
    sawKernel = true;
    REQUIRE_FALSE(f.lines.empty());
    CHECK(std::is_sorted(f.lines.begin(), f.lines.end(), [](const LineRow& a, const LineRow& b) { return a.start < b.start; }));
    for (const LineRow& row : f.lines) {
      CHECK(row.start >= f.start);
      CHECK(row.start < f.start + f.size);
      if (row.line == 0) continue;
      CHECK(statementLines.count(row.line));
      if (listing[static_cast<size_t>(row.line) - 1].find("exp") != std::string::npos) sawExp = true;
    }
  }
  CHECK(sawKernel);
  CHECK(sawExp);
}

TEST_CASE("without a line table, the JIT lists no rows", "[driver][lines]") {
  std::unique_ptr<Compilation> c = compile(kLinesSoftmax, false, "host");
  auto exe = CpuExecutable::load(std::move(c->state.llvmContext), std::move(c->state.llvmModule), *c->state.loops, 3, cpuTarget("host"));
  bool sawKernel = false;
  for (const JitFunction& f : exe->jitFunctions()) {
    sawKernel = sawKernel || f.name.rfind("texc_", 0) == 0;
    CHECK(f.lines.empty());
  }
  CHECK(sawKernel);
}

}  // namespace texc::drivertest
