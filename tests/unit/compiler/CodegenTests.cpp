// The LLVM backend through the real pipeline: what the generated IR looks like.
#include <catch2/catch.hpp>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>

#include "compiler/loops/Schedule.h"
#include "compiler/passes/PassManager.h"
#include "compiler/passes/Pipeline.h"

namespace {

using namespace texc;

// Runs the pipeline on `source` up to `until` and returns the printed IR of that stage; `inspect`
// sees the state before it goes. The code is for `cpu` (haswell unless a test names another), so
// what these tests read does not change with the machine that runs them.
std::string compileTo(const std::string& source, Stage until, int optLevel = 3, FuseMode fuse = FuseMode::All, bool tile = true,
                      const std::string& schedule = "", const std::function<void(CompileState&)>& inspect = {},
                      const std::string& cpu = "haswell") {
  SourceFile file("t.tex", source);
  DiagnosticEngine diags(&file);
  CompileState state;
  state.file = &file;
  state.diags = &diags;
  state.options.optLevel = optLevel;
  state.options.fuse = fuse;
  state.options.tile = tile;
  state.options.cpu = cpu;
  REQUIRE(loops::parseScheduleText(schedule, state.options.schedule) == "");
  Instrumentation inst;
  inst.verifyEachPass = true;
  bool ok = runPipeline(state, buildPipeline(state.options, until), inst);
  INFO(diags.render());
  REQUIRE(ok);
  if (inspect) inspect(state);
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

TEST_CASE("a loop's vector and scalar marks reach LLVM as loop metadata", "[codegen][transforms]") {
  // Lowering marks the innermost left-hand loop `vector`: the vectorizer is told to widen it.
  std::string marked = compileTo(kGelu, Stage::LLVM, 0);
  CHECK(marked.find("!\"llvm.loop.vectorize.enable\", i1 true") != std::string::npos);
  // A schedule's `vectorize V off` marks it `scalar`: width 1, no interleaving, and at -O3 the
  // kernel has no vector arithmetic left (the default one does, above).
  auto withSchedule = [](const std::string& text, int optLevel) {
    return compileTo(kGelu, Stage::LLVM, optLevel, FuseMode::All, true, text);
  };
  std::string scalar0 = withSchedule("loops y: vectorize i1 off\n", 0);
  CHECK(scalar0.find("!\"llvm.loop.vectorize.width\", i32 1") != std::string::npos);
  CHECK(scalar0.find("!\"llvm.loop.interleave.count\", i32 1") != std::string::npos);
  CHECK(scalar0.find("llvm.loop.vectorize.enable") == std::string::npos);
  CHECK(hasVectorFloats(compileTo(kGelu, Stage::LLVM)));
  CHECK_FALSE(hasVectorFloats(withSchedule("loops y: vectorize i1 off\n", 3)));
}

TEST_CASE("codegen-llvm's context drops LLVM's 'loop not vectorized' warnings and passes on the rest", "[codegen]") {
  // Every loop marked `vector` carries llvm.loop.vectorize.enable, and LLVM warns, without a
  // location, about each it (or a copy of it) did not widen: noise about a request the user never
  // wrote. Other diagnostics keep LLVM's own printing (the handler declines them).
  compileTo(kGelu, Stage::LLVM, 0, FuseMode::All, true, "", [](CompileState& s) {
    REQUIRE(s.llvmContext);
    REQUIRE(s.llvmModule);
    std::unique_ptr<llvm::DiagnosticHandler> handler = s.llvmContext->getDiagnosticHandler();
    REQUIRE(handler);
    llvm::Function& kernel = *s.llvmModule->begin();
    llvm::DiagnosticInfoOptimizationFailure missed(kernel, llvm::DiagnosticLocation(), "loop not vectorized");
    CHECK(handler->handleDiagnostics(missed));
    llvm::DiagnosticInfoUnsupported other(kernel, "something else", llvm::DiagnosticLocation(), llvm::DS_Warning);
    CHECK_FALSE(handler->handleDiagnostics(other));
    s.llvmContext->setDiagnosticHandler(std::move(handler));
  });
}

TEST_CASE("a loop variable's value converts to float through 32-bit lanes", "[codegen]") {
  // A causal mask compares j with i as numbers. AVX2 converts 8 i32 lanes in one instruction
  // but i64 lanes one by one, so a variable whose loop extent fits 32 bits goes through i32; on
  // AVX-512 the same holds at 16 lanes.
  const std::string program = "input X : f32[64, 1000]\noutput Y[i, j] = select(j <= i, X[i, j], 0) + j\n";
  std::string avx2 = compileTo(program, Stage::LLVM, 3, FuseMode::All, true, "", {}, "haswell");
  CHECK(avx2.find("itofp <8 x i32>") != std::string::npos);
  CHECK(avx2.find("itofp <8 x i64>") == std::string::npos);
  std::string avx512 = compileTo(program, Stage::LLVM, 3, FuseMode::All, true, "", {}, "skylake-avx512");
  CHECK(avx512.find("itofp <16 x i32>") != std::string::npos);
  CHECK(avx512.find("itofp <16 x i64>") == std::string::npos);
  CHECK(avx512.find("itofp <8 x i64>") == std::string::npos);
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

TEST_CASE("a sum reduction vectorizes in its fixed lanes, without reassociation", "[codegen]") {
  // sum-lanes: 64 lanes, each adding its terms in order; LLVM widens them to the target's
  // vectors, and no update may be regrouped (loops/SumLanes.h).
  for (const char* cpu : {"haswell", "skylake-avx512"}) {
    INFO(cpu);
    std::string ll = compileTo(R"(
input x : f32[64, 1024]
output s[i] = sum(j: x[i, j])
)",
                               Stage::LLVM, 3, FuseMode::All, true, "", {}, cpu);
    CHECK(hasVectorFloats(ll));
    CHECK(ll.find("reassoc") == std::string::npos);
  }
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

namespace {

// A chain where t2 is written in place over t1 (same shape, read only at the stored index), and
// the same IR with --no-plan. Returns the printed LLVM module at `optLevel`.
std::string inPlaceChain(int optLevel, bool plan) {
  SourceFile file("t.tex", R"(
input x : f32[64, 1000]
t1 = x * 3
t2 = t1 * t1 + 1
output y = t2 - x
)");
  DiagnosticEngine diags(&file);
  CompileState state;
  state.file = &file;
  state.diags = &diags;
  state.options.optLevel = optLevel;
  state.options.fuse = FuseMode::None;
  state.options.planMemory = plan;
  Instrumentation inst;
  inst.verifyEachPass = true;
  bool ok = runPipeline(state, buildPipeline(state.options, Stage::LLVM), inst);
  INFO(diags.render());
  REQUIRE(ok);
  if (plan) {
    REQUIRE(state.memoryPlan);
    const loops::LoopProgram& lp = *state.loops;
    int inPlaceKernels = 0;
    for (size_t k = 0; k < lp.kernels.size(); ++k) inPlaceKernels += state.memoryPlan->inPlaceInputOf(lp, static_cast<int>(k)) >= 0;
    CHECK(inPlaceKernels >= 1);
  }
  return printStage(state, Stage::LLVM);
}

// The text of the kernel entry `name` (`define void @texc_NAME(...)` to the closing brace).
std::string kernelText(const std::string& ll, const std::string& name) {
  size_t start = ll.find("define void @texc_" + name + "(");
  REQUIRE(start != std::string::npos);
  return ll.substr(start, ll.find("\n}\n", start) - start);
}

}  // namespace

TEST_CASE("a kernel that writes in place reads through its output pointer and still vectorizes", "[codegen][memplan]") {
  // At -O0 the body is not inlined: the in-place input's parameter is never used in its body,
  // and every buffer stays noalias.
  std::string o0 = inPlaceChain(0, true);
  size_t body = o0.find("define internal void @texc_k");
  REQUIRE(body != std::string::npos);
  CHECK(o0.find("ptr nocapture") == std::string::npos);  // nothing lost its noalias
  // At -O3 the in-place kernels vectorize with no run-time overlap check, as without the plan.
  std::string planned = inPlaceChain(3, true), unplanned = inPlaceChain(3, false);
  for (const std::string& ll : {planned, unplanned}) {
    CHECK(hasVectorFloats(ll));
    CHECK(ll.find("vector.memcheck") == std::string::npos);
    CHECK(ll.find("found.conflict") == std::string::npos);
  }
  // The kernels of the in-place chain have vector loops in both.
  for (const char* k : {"k1_t2.1", "k2_t2"}) {
    INFO(k);
    CHECK(hasVectorFloats(kernelText(planned, k)));
  }
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
