// The memory planner on hand-built loop programs (reuse, best fit, in place allowed and refused,
// alignment, the verifier), and its printed form for gelu unfused (a golden).
#include <catch2/catch.hpp>

#include "LoopInterpreter.h"
#include "PassTestSupport.h"
#include "compiler/loops/MemoryPlan.h"
#include "compiler/passes/Pipeline.h"

namespace texc::passtest {
namespace {

using loops::Buffer;
using loops::BufferKind;
using loops::Expr;
using loops::ExprKind;
using loops::Kernel;
using loops::LoopProgram;
using loops::MemoryPlan;
using loops::PlannedTemp;
using loops::mayWriteInPlace;
using loops::planMemory;
using loops::printMemoryPlan;
using loops::verifyMemoryPlan;

// Builds loop programs of elementwise kernels, one per call, run in the order they are added.
struct ProgramBuilder {
  LoopProgram p;

  int buffer(const std::string& name, BufferKind kind, std::vector<int64_t> shape, DType dtype = DType::F32) {
    Buffer b;
    b.name = name;
    b.kind = kind;
    b.shape = std::move(shape);
    b.dtype = dtype;
    p.buffers.push_back(b);
    return static_cast<int>(p.buffers.size()) - 1;
  }

  static std::vector<IndexExpr> identity(size_t rank) {
    std::vector<IndexExpr> ix;
    for (size_t d = 0; d < rank; ++d) ix.push_back(IndexExpr::makeVar(static_cast<int>(d)));
    return ix;
  }

  static Expr load(int buffer, std::vector<IndexExpr> index) {
    Expr e;
    e.kind = ExprKind::Load;
    e.buffer = buffer;
    e.index = std::move(index);
    return e;
  }

  // out[i, ...] = the sum of the given loads.
  void kernel(int out, std::vector<Expr> loads) {
    Kernel k;
    k.name = "k" + std::to_string(p.kernels.size()) + "_" + p.buffers[out].name;
    k.outputBuffer = out;
    k.computeType = p.buffers[out].dtype == DType::F64 ? DType::F64 : DType::F32;
    size_t rank = p.buffers[out].shape.size();
    for (size_t d = 0; d < rank; ++d) k.varNames.push_back("i" + std::to_string(d));
    Expr value = loads[0];
    for (size_t i = 1; i < loads.size(); ++i) {
      Expr sum;
      sum.kind = ExprKind::Binary;
      sum.binaryOp = BinaryOp::Add;
      sum.args = {value, loads[i]};
      value = sum;
    }
    loops::Store store;
    store.buffer = out;
    store.index = identity(rank);
    store.value = value;
    loops::Block body = {store};
    for (size_t d = rank; d-- > 0;) {
      loops::Loop loop;
      loop.var = static_cast<int>(d);
      loop.extent = p.buffers[out].shape[d];
      loop.parallel = d == 0;
      loop.vectorize = d + 1 == rank;
      loop.body = body;
      body = {loop};
    }
    k.body = body;
    if (rank > 0) k.parallelExtent = p.buffers[out].shape[0];
    p.kernels.push_back(k);
  }

  // out = in_1 + in_2 + ..., each read at the index being stored.
  void elementwise(int out, const std::vector<int>& ins) {
    std::vector<Expr> loads;
    for (int b : ins) loads.push_back(load(b, identity(p.buffers[b].shape.size())));
    kernel(out, loads);
  }
};

const PlannedTemp& placed(const MemoryPlan& plan, int buffer) {
  const PlannedTemp* t = plan.find(buffer);
  REQUIRE(t != nullptr);
  return *t;
}

TEST_CASE("memory plan: a chain reuses dead blocks, inputs and outputs stay out of the arena", "[passes][memplan]") {
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {100});
  int t1 = b.buffer("t1", BufferKind::Temp, {100});
  int t2 = b.buffer("t2", BufferKind::Temp, {100});
  int t3 = b.buffer("t3", BufferKind::Temp, {100});
  int y = b.buffer("y", BufferKind::Output, {100});
  b.elementwise(t1, {x});      // k0
  b.elementwise(t2, {t1, x});  // k1: t1 dies here, but x is an input: no in place over x
  // k2: t1 dies here, read at another index than the one stored: no in place either.
  b.kernel(t3, {ProgramBuilder::load(t2, {IndexExpr::makeConst(0)}), ProgramBuilder::load(t1, {IndexExpr::makeConst(1)})});
  b.elementwise(y, {t3, t2});  // k3
  MemoryPlan plan = planMemory(b.p);
  CHECK(verifyMemoryPlan(b.p, plan).empty());
  REQUIRE(plan.temps.size() == 3);
  CHECK(plan.find(x) == nullptr);
  CHECK(plan.find(y) == nullptr);
  CHECK(placed(plan, t1).defKernel == 0);
  CHECK(placed(plan, t1).lastKernel == 2);
  CHECK(placed(plan, t2).lastKernel == 3);
  // t1, t2 and t3 are all live during k2: three blocks, no reuse.
  CHECK(plan.maxLive == 3);
  CHECK(plan.blockBytes.size() == 3);
  CHECK(plan.arenaBytes == 3 * 448);  // 400 bytes rounded up to 448
  CHECK(plan.naiveBytes == plan.arenaBytes);
}

TEST_CASE("memory plan: a dead temp's block is taken over, not a fresh one", "[passes][memplan]") {
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {16});
  int a = b.buffer("a", BufferKind::Temp, {16});
  int c = b.buffer("c", BufferKind::Temp, {16});
  int d = b.buffer("d", BufferKind::Temp, {16});
  int y = b.buffer("y", BufferKind::Output, {16});
  b.elementwise(a, {x});     // k0
  b.elementwise(c, {x});     // k1
  // k2 reads a at a shifted index (no in place), a dies; k3 writes d after a is dead.
  b.kernel(y, {ProgramBuilder::load(a, {IndexExpr::makeConst(3)}), ProgramBuilder::load(c, ProgramBuilder::identity(1))});
  b.elementwise(d, {y});
  MemoryPlan plan = planMemory(b.p);
  CHECK(verifyMemoryPlan(b.p, plan).empty());
  CHECK(placed(plan, d).reusedFrom == a);
  CHECK_FALSE(placed(plan, d).inPlace);
  CHECK(placed(plan, d).offset == placed(plan, a).offset);
  CHECK(plan.blockBytes.size() == 2);
}

TEST_CASE("memory plan: best fit picks the smallest free block that is large enough", "[passes][memplan]") {
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {1});
  int big = b.buffer("big", BufferKind::Temp, {1024});    // 4096 bytes
  int small = b.buffer("small", BufferKind::Temp, {256});  // 1024 bytes
  int mid = b.buffer("mid", BufferKind::Temp, {200});      // 800 bytes: fits small's block
  int huge = b.buffer("huge", BufferKind::Temp, {2048});   // 8192 bytes: fits neither
  int y = b.buffer("y", BufferKind::Output, {1});
  int z = b.buffer("z", BufferKind::Output, {1});
  auto at0 = [](int buf) { return ProgramBuilder::load(buf, {IndexExpr::makeConst(0)}); };
  b.kernel(big, {at0(x)});                   // k0
  b.kernel(small, {at0(x)});                 // k1
  b.kernel(y, {at0(big), at0(small)});       // k2: both die
  b.kernel(mid, {at0(y)});                   // k3: takes small's block, not big's
  b.kernel(huge, {at0(mid)});                // k4: no free block fits; big's (the largest) grows
  b.kernel(z, {at0(huge), at0(mid)});        // k5
  MemoryPlan plan = planMemory(b.p);
  CHECK(verifyMemoryPlan(b.p, plan).empty());
  CHECK(placed(plan, mid).reusedFrom == small);
  CHECK(placed(plan, mid).block == placed(plan, small).block);
  CHECK(placed(plan, huge).reusedFrom == big);
  CHECK(plan.blockBytes[placed(plan, huge).block] == 8192);
  CHECK(plan.blockBytes.size() == 2);
  CHECK(plan.arenaBytes == 8192 + 1024);
  CHECK(plan.naiveBytes == 4096 + 1024 + 832 + 8192);
}

TEST_CASE("memory plan: offsets are multiples of 64 whatever the sizes", "[passes][memplan]") {
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {3});
  int t1 = b.buffer("t1", BufferKind::Temp, {3});                // 12 bytes
  int t2 = b.buffer("t2", BufferKind::Temp, {5}, DType::F16);   // 10 bytes
  int t3 = b.buffer("t3", BufferKind::Temp, {}, DType::F64);     // 8 bytes, rank 0
  int y = b.buffer("y", BufferKind::Output, {3});
  auto at0 = [](int buf) { return ProgramBuilder::load(buf, {IndexExpr::makeConst(0)}); };
  b.elementwise(t1, {x});
  b.kernel(t2, {at0(x)});
  b.kernel(t3, {at0(x)});
  Expr t3read = ProgramBuilder::load(t3, {});
  b.kernel(y, {ProgramBuilder::load(t1, ProgramBuilder::identity(1)), at0(t2), t3read});
  MemoryPlan plan = planMemory(b.p);
  CHECK(verifyMemoryPlan(b.p, plan).empty());
  REQUIRE(plan.temps.size() == 3);
  for (const PlannedTemp& t : plan.temps) CHECK(t.offset % 64 == 0);
  CHECK(plan.arenaBytes == 3 * 64);
  CHECK(placed(plan, t3).bytes == 8);
}

TEST_CASE("memory plan: in place when an elementwise kernel's input dies there", "[passes][memplan]") {
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {4, 8});
  int t1 = b.buffer("t1", BufferKind::Temp, {4, 8});
  int t2 = b.buffer("t2", BufferKind::Temp, {4, 8});
  int y = b.buffer("y", BufferKind::Output, {4, 8});
  b.elementwise(t1, {x});
  b.elementwise(t2, {t1, t1});  // read twice, both at the stored index
  b.elementwise(y, {t2});
  MemoryPlan plan = planMemory(b.p);
  CHECK(verifyMemoryPlan(b.p, plan).empty());
  CHECK(placed(plan, t2).inPlace);
  CHECK(placed(plan, t2).reusedFrom == t1);
  CHECK(placed(plan, t2).offset == placed(plan, t1).offset);
  CHECK(plan.blockBytes.size() == 1);
  CHECK(plan.maxLive == 2);
  CHECK(plan.maxLiveSharing == 1);
  CHECK(plan.inPlaceInputOf(b.p, 1) == t1);
  CHECK(plan.inPlaceInputOf(b.p, 0) == -1);
}

TEST_CASE("memory plan: in place is refused when it could change a result", "[passes][memplan]") {
  // Each case: t1 is written by k0 and read by k1, which writes t2. In place is wrong or not
  // allowed in each, so t2 must get a block of its own.
  struct Case {
    const char* what;
    std::vector<int64_t> t2Shape;
    DType t2Dtype;
    bool t1ReadLater;
    bool shiftedRead;
    bool t1IsOutput;
  };
  const Case cases[] = {
      {"the input is read at another index", {8}, DType::F32, false, true, false},
      {"the shapes differ", {2, 4}, DType::F32, false, false, false},
      {"the dtypes differ", {8}, DType::F64, false, false, false},
      {"the input is still read later", {8}, DType::F32, true, false, false},
      {"the input is a program output", {8}, DType::F32, false, false, true},
  };
  for (const Case& c : cases) {
    SECTION(c.what) {
      ProgramBuilder b;
      int x = b.buffer("x", BufferKind::Input, {8});
      int t1 = b.buffer("t1", c.t1IsOutput ? BufferKind::Output : BufferKind::Temp, {8});
      int t2 = b.buffer("t2", BufferKind::Temp, c.t2Shape, c.t2Dtype);
      int y = b.buffer("y", BufferKind::Output, {8});
      b.elementwise(t1, {x});
      std::vector<IndexExpr> read = ProgramBuilder::identity(1);
      if (c.shiftedRead) read[0] = IndexExpr::makeConst(7);
      if (c.t2Shape.size() == 2) read = {IndexExpr::makeVar(0)};
      b.kernel(t2, {ProgramBuilder::load(t1, read)});
      std::vector<Expr> last = {ProgramBuilder::load(t2, {IndexExpr::makeConst(0)})};
      if (c.t2Shape.size() == 2) last[0].index.push_back(IndexExpr::makeConst(0));
      if (c.t1ReadLater) last.push_back(ProgramBuilder::load(t1, ProgramBuilder::identity(1)));
      b.kernel(y, last);
      MemoryPlan plan = planMemory(b.p);
      CHECK(verifyMemoryPlan(b.p, plan).empty());
      CHECK_FALSE(placed(plan, t2).inPlace);
      // The reading rule alone refuses the first three; liveness and kinds refuse the others.
      bool readingAllows = mayWriteInPlace(b.p, 1, t1);
      CHECK(readingAllows == (c.t1ReadLater || c.t1IsOutput));
      if (!c.t1IsOutput) CHECK(placed(plan, t2).offset != placed(plan, t1).offset);
    }
  }
}

TEST_CASE("memory plan: a kernel with a reduction never writes in place", "[passes][memplan]") {
  // acc-free rule: out[i] = t[i] + sum(j: ...) reads t at the stored index, but the planner only
  // writes elementwise kernels in place.
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {8});
  int t1 = b.buffer("t1", BufferKind::Temp, {8});
  int t2 = b.buffer("t2", BufferKind::Temp, {8});
  int y = b.buffer("y", BufferKind::Output, {8});
  b.elementwise(t1, {x});
  b.elementwise(t2, {t1});
  b.p.kernels[1].numAccs = 1;  // as if it accumulated something
  b.elementwise(y, {t2});
  CHECK_FALSE(mayWriteInPlace(b.p, 1, t1));
  b.p.kernels[1].numAccs = 0;
  CHECK(mayWriteInPlace(b.p, 1, t1));
}

TEST_CASE("memory plan: the verifier reports overlaps, misalignment and outputs in the arena", "[passes][memplan]") {
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {16});
  int t1 = b.buffer("t1", BufferKind::Temp, {16});
  int t2 = b.buffer("t2", BufferKind::Temp, {16});
  int y = b.buffer("y", BufferKind::Output, {16});
  b.elementwise(t1, {x});
  b.elementwise(t2, {x});
  b.elementwise(y, {t1, t2});
  MemoryPlan good = planMemory(b.p);
  REQUIRE(verifyMemoryPlan(b.p, good).empty());
  auto problems = [&](MemoryPlan plan) {
    std::string all;
    for (const std::string& s : verifyMemoryPlan(b.p, plan)) all += s + "\n";
    return all;
  };
  MemoryPlan shared = good;
  shared.temps[1].offset = shared.temps[0].offset;
  CHECK_THAT(problems(shared), Catch::Contains("%t1 (k0..k2, bytes [0, 64)) and %t2 (k1..k2, bytes [0, 64)) are live at once and share memory"));
  MemoryPlan misaligned = good;
  misaligned.temps[1].offset = 32;
  CHECK_THAT(problems(misaligned), Catch::Contains("%t2: offset 32 is not a multiple of 64"));
  MemoryPlan withOutput = good;
  withOutput.temps[1].buffer = y;
  CHECK_THAT(problems(withOutput), Catch::Contains("%y is a program input or output but lies in the arena"));
  CHECK_THAT(problems(withOutput), Catch::Contains("%t2 is written by k1 but has no place in the plan"));
  MemoryPlan outside = good;
  outside.arenaBytes = 64;
  CHECK_THAT(problems(outside), Catch::Contains("lie outside the arena of 64"));
  MemoryPlan badInPlace = good;
  badInPlace.temps[1].inPlace = true;
  badInPlace.temps[1].reusedFrom = t1;
  CHECK_THAT(problems(badInPlace), Catch::Contains("%t2 is written in place where that is not allowed"));
}

TEST_CASE("memory plan: the interpreter's arena catches temps that share bytes while live", "[passes][memplan]") {
  // The property test relies on this: a wrong plan must change a result or fail a load.
  ProgramBuilder b;
  int x = b.buffer("x", BufferKind::Input, {16});
  int t1 = b.buffer("t1", BufferKind::Temp, {16});
  int t2 = b.buffer("t2", BufferKind::Temp, {16});
  int y = b.buffer("y", BufferKind::Output, {16});
  b.elementwise(t1, {x});
  b.elementwise(t2, {x, x});
  b.elementwise(y, {t1, t2});
  MemoryPlan plan = planMemory(b.p);
  std::vector<std::vector<double>> buffers(b.p.buffers.size());
  for (int i = 0; i < 16; ++i) buffers[x].push_back(i);
  REQUIRE(interpretLoops(b.p, buffers, plan) == "");
  CHECK(buffers[y][5] == 15);
  plan.temps[1].offset = plan.temps[0].offset;  // t2 overwrites t1 while t1 is live
  REQUIRE(interpretLoops(b.p, buffers, plan) == "");
  CHECK(buffers[y][5] == 20);
  plan.temps[1].offset = plan.temps[0].offset + 2;  // part of each element: the load fails
  CHECK_THAT(interpretLoops(b.p, buffers, plan), Catch::Contains("was partly overwritten"));
}

TEST_CASE("memory plan: golden print of gelu unfused, blocks equal the most temps live at once", "[passes][memplan][golden]") {
  TestProgram program = fileProgram(sourceRoot() / "examples" / "gelu.tex");
  program.options.overrides = {{"N", 4}, {"D", 8}};
  program.options.fuse = FuseMode::None;
  std::unique_ptr<Session> s = startSession(program);
  REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Plan), Instrumentation{}));
  REQUIRE(s->state().memoryPlan);
  const MemoryPlan& plan = *s->state().memoryPlan;
  CHECK(verifyMemoryPlan(*s->state().loops, plan).empty());
  CHECK(static_cast<int>(plan.blockBytes.size()) == plan.maxLiveSharing);
  CHECK(plan.temps.size() == 10);
  // The figures of docs/memory-planning.md: 4 temps live at once (3 counting the in-place pair
  // as one), 3 blocks; without in-place writes, 4 blocks.
  CHECK(plan.maxLive == 4);
  CHECK(plan.maxLiveSharing == 3);
  CHECK(plan.blockBytes.size() == 3);
  MemoryPlan noInPlace = planMemory(*s->state().loops, loops::PlanOptions{false});
  CHECK(noInPlace.blockBytes.size() == 4);
  CHECK(verifyMemoryPlan(*s->state().loops, noInPlace).empty());
  checkGolden(sourceRoot() / "tests" / "golden" / "plan" / "gelu.unfused.expected",
              printStage(s->state(), Stage::Plan));
}

TEST_CASE("memory plan: --no-plan records no plan and prints so", "[passes][memplan]") {
  TestProgram program = fileProgram(sourceRoot() / "examples" / "gelu.tex");
  program.options.overrides = {{"N", 4}, {"D", 8}};
  program.options.fuse = FuseMode::None;
  std::unique_ptr<Session> s = startSession(program);
  s->state().options.planMemory = false;
  REQUIRE(s->runThroughPassManager(buildPipeline(s->state().options, Stage::Plan), Instrumentation{}));
  CHECK_FALSE(s->state().memoryPlan.has_value());
  CHECK(printStage(s->state(), Stage::Plan) == "(no memory plan: --no-plan, one buffer per intermediate)\n");
}

}  // namespace
}  // namespace texc::passtest
