// The LLVM backend through the real pipeline: what the generated IR looks like.
#include <catch2/catch.hpp>

#include "compiler/passes/PassManager.h"
#include "compiler/passes/Pipeline.h"

namespace {

using namespace texc;

// Runs the pipeline on `source` up to `until` and returns the printed IR of that stage.
std::string compileTo(const std::string& source, Stage until, int optLevel = 3, FuseMode fuse = FuseMode::All, bool tile = true) {
  SourceFile file("t.tex", source);
  DiagnosticEngine diags(&file);
  CompileState state;
  state.file = &file;
  state.diags = &diags;
  state.options.optLevel = optLevel;
  state.options.fuse = fuse;
  state.options.tile = tile;
  Instrumentation inst;
  inst.verifyEachPass = true;
  bool ok = runPipeline(state, buildPipeline(until), inst);
  INFO(diags.render());
  REQUIRE(ok);
  return printStage(state, until);
}

const char* kGelu = R"(
let N = 64; let D = 256
input x : f32[N, D]
input b : f32[D]
h = x + b
output y = 0.5 * h * (1 + tanh(0.7978845608 * (h + 0.044715 * h * h * h)))
)";

bool hasVectorFloats(const std::string& ll) {
  return ll.find("<16 x float>") != std::string::npos || ll.find("<8 x float>") != std::string::npos;
}

}  // namespace

TEST_CASE("an elementwise program vectorizes, tanh included", "[codegen]") {
  std::string ll = compileTo(kGelu, Stage::LLVM);
  CHECK(hasVectorFloats(ll));
  // Scalar libm tanh would block vectorization (20x slower than bandwidth).
  CHECK(ll.find("@tanhf") == std::string::npos);
  CHECK(ll.find("@tanh(") == std::string::npos);
}

TEST_CASE("at -O0 math calls libm and the code stays scalar", "[codegen]") {
  std::string ll = compileTo(kGelu, Stage::LLVM, 0);
  CHECK(ll.find("@tanhf") != std::string::npos);
  CHECK_FALSE(hasVectorFloats(ll));
}

TEST_CASE("buffers are noalias, aligned and dereferenceable", "[codegen]") {
  std::string ll = compileTo(kGelu, Stage::LLVM, 0);
  CHECK(ll.find("noalias") != std::string::npos);
  CHECK(ll.find("align 64") != std::string::npos);
  CHECK(ll.find("dereferenceable(65536)") != std::string::npos);  // x: 64 * 256 floats
}

TEST_CASE("a sum reduction vectorizes with reassociation", "[codegen]") {
  std::string ll = compileTo(R"(
input x : f32[64, 1024]
output s[i] = sum(j: x[i, j])
)",
                             Stage::LLVM);
  CHECK(hasVectorFloats(ll));
  CHECK(ll.find("reassoc") != std::string::npos);
}

TEST_CASE("one fused kernel by default, one per operator with --fuse=none", "[codegen]") {
  auto countKernels = [](const std::string& loops) {
    size_t n = 0;
    for (size_t p = loops.find("\nkernel "); p != std::string::npos; p = loops.find("\nkernel ", p + 1)) ++n;
    return n;
  };
  CHECK(countKernels(compileTo(kGelu, Stage::Loops)) == 1);
  // h = add; y: 0.5*h, 0.044715*h, *h, *h, h+, 0.79*, tanh, 1+, * => 9 operators.
  CHECK(countKernels(compileTo(kGelu, Stage::Loops, 3, FuseMode::None)) == 10);
}

TEST_CASE("padding becomes a guard that skips the term", "[codegen]") {
  std::string loops = compileTo(R"(
input x : f32[16]
input w : f32[3]
output y[i < 16] = sum(r: x[i + r - 1] * w[r])
)",
                                Stage::Loops);
  CHECK(loops.find("if 0 <= ((i + r) - 1) < 16") != std::string::npos);
}

// The tile pass's micro-kernel is explicit vector IR: broadcasts of A, vector loads of the packed
// B panel, llvm.fmuladd on vector accumulators; masked loads read the columns past a ragged edge
// when B is not packed. Without the pass the same program has none of it.
TEST_CASE("a tiled matmul is a vector micro-kernel of fused multiply-adds", "[codegen][tile]") {
  const char* matmul = "input A : f32[37, 53]\ninput B : f32[53, 29]\noutput C[i, j] = sum(k: A[i, k] * B[k, j])\n";
  std::string tiled = compileTo(matmul, Stage::LLVM, 0);
  CHECK(tiled.find("@llvm.fmuladd.v") != std::string::npos);
  CHECK(tiled.find("tile.c") != std::string::npos);       // the spilled tile the epilogue reads
  CHECK(tiled.find("@llvm.masked.load") != std::string::npos);  // the zero-padded last B panel
  std::string plain = compileTo(matmul, Stage::LLVM, 0, FuseMode::All, false);
  CHECK(plain.find("@llvm.fmuladd") == std::string::npos);
  CHECK(plain.find("tile.c") == std::string::npos);
}
