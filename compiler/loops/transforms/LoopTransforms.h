// Loop-IR transformations, one per file, each a free function over one kernel that either
// rewrites it and returns "" or leaves it unchanged and returns why it cannot (a message for the
// user, who named the loops). Loops are named by their variable as the printer shows it
// (`i1`, `i1.o`); a name must denote exactly one loop of the kernel.
//
// Every transformation keeps the kernel valid for verifyLoopProgram and keeps the marks the
// backends read consistent: at most one parallel loop, at the kernel's top level, whose extent
// is Kernel::parallelExtent (the runtime splits that range across threads and calls the kernel
// once per chunk); `vector` only on the innermost loop around a store. docs/scheduling.md ("Loop transformations")
// has the rules and the schedule-file syntax that applies them (pass schedule-loops).
//
// register_block turns a contraction's two output loops into loops over register tiles (a Tile
// statement, as the tile pass makes), and pack adds Pack statements for such a tile. The other
// transformations apply to the loops around pack and tile statements too (the block loops the
// tile pass makes), within the rule of nest::checkTransformable.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/loops/Contraction.h"
#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// SplitLoop.cpp. `for v < E` becomes
//   for v.o < ceil(E / f) { for v.i < f { if v.o * f + v.i < E { body[v := v.o * f + v.i] } } }
// without the guard when f divides E. v.o keeps v's parallel mark (and the kernel's parallel
// extent becomes ceil(E / f)), v.i its vector mark. f >= 1.
std::string splitLoop(Kernel& k, const std::string& var, int64_t factor);

// ReorderLoops.cpp. `vars` name the loops of one perfect nest (each loop's body is exactly the
// next loop, or a guard around it), in their new order, outermost first. A guard moves to just
// inside the innermost loop whose variable it reads. Marks stay with positions: the new
// outermost loop is parallel when the old one was, the new innermost vectorised when the old one
// was. Legal when no iteration of the nest reads what another one writes:
//   - every store inside the nest indexes with every variable of the nest (distinct iterations
//     write distinct elements),
//   - a buffer stored inside the nest is loaded there only at the stored index,
//   - an accumulator updated inside the nest is either set inside the innermost body (each
//     iteration has its own) or only updated, never read, inside the nest (a reduction over the
//     nest, whose order the language lets an optimisation change).
std::string reorderLoops(Kernel& k, const std::vector<std::string>& vars);

// UnrollLoop.cpp. factor > 1: `for v < E` becomes `for v < E / f` whose body is the old body
// f times, with v := v * f + u for u = 0..f-1, followed by the E % f remaining iterations as
// straight-line copies (v := constant). factor 0: full unroll, only for E <= kMaxFullUnroll: the
// loop is replaced by E copies. A parallel loop unrolls only by a factor that divides E (the
// tail would run in every thread's chunk); fully unrolled, the kernel runs on one thread.
constexpr int64_t kMaxFullUnroll = 64;
constexpr int64_t kMaxUnrollFactor = 64;
std::string unrollLoop(Kernel& k, const std::string& var, int64_t factor);

// ParallelizeLoop.cpp. Makes `var` the kernel's parallel loop (clearing the mark elsewhere):
// it must be at the kernel's top level, the kernel must store nothing outside it, it must carry
// no accumulator across its iterations, and every store inside it must index with it. An empty `var` makes the kernel run on one thread.
std::string parallelizeLoop(Kernel& k, const std::string& var);

// VectorizeLoop.cpp. Sets (on) or clears `var`'s vector mark; set only on the innermost loop
// around the stores it holds (loops inside it may only carry reductions, as lowering makes them).
std::string vectorizeLoop(Kernel& k, const std::string& var, bool on);

// RegisterBlock.cpp. The loops `rowLoop` (i) and `colLoop` (j), directly nested in either order,
// around a contraction (Contraction.h: `acc = 0; for k { acc += A * B }; store`, A not reading
// j, B reading j and not i, both f32) become
//   for i_t < ceil(M / mr) { for j_t < ceil(N / nr) { tile mr x nr at (mr * i_t, nr * j_t) } }
// in the nest's order: the mr x nr block of the output is summed in mr * nr / W vector
// registers over all of k, then the epilogue (the store) runs for the block's elements inside
// the extents (a tile past M or N reads clamped rows and masked columns). The outer tile loop
// keeps the parallel mark; the vector mark goes (the tile is vector code). f32 kernels only.
constexpr int64_t kMaxTileRows = 16;
constexpr int64_t kMaxTileColumns = 64;
std::string registerBlock(const LoopProgram& p, Kernel& k, const std::string& rowLoop, const std::string& colLoop, int64_t mr,
                          int64_t nr);
// The Tile statement of `c` with mr x nr accumulators, its bases and scratch left to the caller.
Stmt registerTile(const Contraction& c, int64_t mr, int64_t nr);

// PackOperand.cpp. For the kernel's one register tile (whole k, no k blocks): copy A (the row
// operand) or B (the column operand) into a scratch block first in the body of `atLoop` (empty:
// before the whole nest, once per call), and make the tile read it there. The block is what the
// tile reads during one iteration of `atLoop`: one tile's rows (columns) when no tile loop of
// that operand lies inside it, or all the tiles of the one tile loop inside it, laid out in
// panels of mr rows (nr columns), each panel's k values consecutive. Refused when that is not
// one loop stepping by whole tiles, when the operand reads the variable of a loop between the
// pack and the tile (a batch loop: pack inside it), when a guard lies in between, or when the
// operand is packed already. A block larger than the stack's share goes on the heap (code
// generation decides).
enum class PackedOperand : uint8_t { A, B };
std::string packOperand(Kernel& k, PackedOperand operand, const std::string& atLoop);
// The Pack statements of `tile`'s operands: B's columns [colBase, +cols) in micro-panels of
// `panel` columns (0: one panel), A's rows [rowBase, +rows) in panels of the tile's rows, over
// the tile's k window, or all of k with `allOfK`.
Stmt columnPack(const Stmt& tile, int scratch, IndexExpr colBase, int64_t cols, int64_t panel);
Stmt rowPack(const Stmt& tile, int scratch, IndexExpr rowBase, int64_t rows, bool allOfK);

// Shared by the transformations (LoopNest.cpp). Substituting, counting and searching
// statements are the core's: Substitute.h and Walk.h.
namespace nest {

// The loop statement over the variable printed as `name`, or an error: no such loop, or several.
// Loops inside a tile's epilogue are not found (the tile binds their surroundings).
struct Found {
  Stmt* stmt = nullptr;   // the statement, a Loop
  Loop* loop = nullptr;   // the same, as its kind
  Block* parent = nullptr;  // the statement list holding it
  size_t position = 0;      // its index in *parent
  bool topLevel = false;    // parent is the kernel's body
  std::string error;
};
Found findLoop(Kernel& k, const std::string& name);

// "" when `loop` may be transformed; otherwise why not. The rule for kernels holding pack and
// tile statements (from the tile pass or register_block): their loops are transformed like any
// other's, since substitute rewrites those statements' bases and every transformation keeps the
// order of the statements within one iteration (a pack still runs before the tiles it feeds).
// What stays illegal, and who refuses it:
//   - a loop over a variable a tile or pack binds (the statement runs that variable itself):
//     here; a loop inside a tile's epilogue (it runs per element of the tile): findLoop does not
//     find it;
//   - moving a loop across a pack it feeds: a reordered nest is perfect, so packs lie only in
//     its innermost body and move with the tiles that read them; the scratch such a pack fills
//     must not be read after the nest (which iteration runs last changes): reorderLoops;
//   - iterations that write the same tile, for parallel and reorder: a store in a tile's epilogue
//     writes an element that depends on the variables of the tile's bases (writesWith);
//   - a vector mark on a loop holding a pack or tile (the tile is vector code itself):
//     vectorizeLoop;
//   - register_block on a kernel already tiled, pack anywhere but around the kernel's one tile:
//     their own checks.
std::string checkTransformable(const Kernel& k, const Loop& loop);

// Whether the element `store` writes depends on loop variable `var`: its index reads `var`, or,
// for a store in a tile's epilogue (`enclosing` holds the statements around it), reads the
// tile's row (column) variable while the tile's row (column) base reads `var`.
bool writesWith(const Store& store, const std::vector<const Stmt*>& enclosing, int var);

// Why `loop` (a top-level loop of `k`) cannot be the parallel loop, or "": a store outside it
// (every thread's call would run it), an accumulator carried across its iterations (updated
// inside, set outside), or a store inside it whose index does not use its variable (two threads
// would write the same element).
std::string parallelProblem(const Kernel& k, const Loop& loop);

// Adds a variable named `name` (made unique with a numeric suffix if taken); returns its id.
int addVar(Kernel& k, const std::string& name);

// The kernel's parallel extent from its marks: the extent of its top-level parallel loop, 0
// when it has none.
void refreshParallelExtent(Kernel& k);

}  // namespace nest

}  // namespace texc::loops
