// vectorize: marks a loop `vector` (an innermost one whose iterations the vectorizer should
// widen) or `scalar` (one it must not widen) (LoopTransforms.h).
#include <fmt/format.h>

#include "compiler/loops/Walk.h"
#include "compiler/loops/transforms/LoopTransforms.h"

namespace texc::loops {

namespace {

// Whether a loop inside `stmts` stores: then the loop holding them is not the innermost loop
// over the elements it writes. (Loops that only carry a reduction may sit inside a vector loop,
// as lowering makes them: the row sum's loop inside the loop over rows.)
bool holdsStoringLoop(const Block& stmts) {
  // Guards are looked through; any other statement ends the search down its branch.
  return !walk(stmts, [](const Stmt& s) {
    if (auto* l = s.getIf<Loop>())
      return anyStmt(l->body, [](const Stmt& b) { return b.is<Store>(); }) ? WalkAction::Stop : WalkAction::SkipNested;
    return s.is<Guard>() ? WalkAction::Advance : WalkAction::SkipNested;
  });
}

}  // namespace

std::string vectorizeLoop(Kernel& k, const std::string& var, bool on) {
  nest::Found f = nest::findLoop(k, var);
  if (!f.error.empty()) return f.error;
  if (std::string why = nest::checkTransformable(k, *f.loop); !why.empty()) return why;
  if (on && anyStmt(f.loop->body, [](const Stmt& s) { return s.is<Pack>() || s.is<Tile>(); }))
    return fmt::format("{} holds register tiles, which are vector code themselves; vectorise only loops without them", var);
  if (on && holdsStoringLoop(f.loop->body))
    return fmt::format("only the innermost loop around its stores can be vectorised, and {} holds a loop "
                       "that stores",
                       var);
  f.loop->vectorize = on;
  f.loop->scalar = !on;
  return "";
}

}  // namespace texc::loops
