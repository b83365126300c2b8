#include "compiler/loops/SplitChains.h"

#include <algorithm>
#include <set>

#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// Rough latencies of texc's precise f32 functions (docs/vector-math.md), from their operation
// chains at 4 cycles per FMA or multiply and 13 per division.
int callLatency(Builtin b) {
  switch (b) {
    case Builtin::Exp: return 40;
    case Builtin::Log: return 50;
    case Builtin::Sigmoid: return 55;
    case Builtin::Tanh: return 60;
    case Builtin::Erf: return 70;
    case Builtin::Sin:
    case Builtin::Cos: return 60;
    case Builtin::Pow: return 100;
    case Builtin::Sqrt:
    case Builtin::Rsqrt: return 15;
    default: return 4;
  }
}

int binaryLatency(BinaryOp op) {
  switch (op) {
    case BinaryOp::Div: return 13;
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul: return 4;
    default: return 1;
  }
}

// The functions whose loops measured faster in phases (SplitChains.h has the figures).
bool splitsWell(Builtin b) { return b == Builtin::Exp || b == Builtin::Log || b == Builtin::Tanh || b == Builtin::Sin || b == Builtin::Cos; }

// Counts the transcendental calls of `e`: `calls`, and `others` of them not among those above.
void countTranscendentals(const Expr& e, int& calls, int& others) {
  forEachExprNode(e, [&](const Expr& n) {
    if (n.kind != ExprKind::Call || !isTranscendental(n.builtin)) return;
    ++calls;
    others += !splitsWell(n.builtin);
  });
}

}  // namespace

int chainLatency(const Expr& e) {
  int longest = 0;
  for (const Expr& a : e.args) longest = std::max(longest, chainLatency(a));
  switch (e.kind) {
    case ExprKind::Load: return 5;
    case ExprKind::Unary: return longest + 1;
    case ExprKind::Binary: return longest + binaryLatency(e.binaryOp);
    case ExprKind::Call: return longest + callLatency(e.builtin);
    default: return longest;
  }
}

int splitChains(LoopProgram& p, int vectorRegisters, int64_t block) {
  int marked = 0;
  if (vectorRegisters > kMaxSplitRegisters) return 0;
  for (Kernel& k : p.kernels)
    forEachInnermostLoop(k.body, [&](Loop& l) {
      if (!l.vectorize || l.extent < block) return;
      bool storesOnly = true;
      int calls = 0, others = 0;
      int chain = 0;
      std::set<int> stored, loaded;
      for (const Stmt& c : l.body) {
        const Store* st = c.getIf<Store>();
        if (!st) {
          storesOnly = false;
          break;
        }
        stored.insert(st->buffer);
        forEachLoad(st->value, [&](const Expr& load) { loaded.insert(load.buffer); });
        countTranscendentals(st->value, calls, others);
        chain = std::max(chain, chainLatency(st->value));
      }
      if (!storesOnly || calls == 0 || others > 0 || chain < kMinSplitChain) return;
      for (int b : stored)
        if (loaded.count(b)) return;
      l.phases = chain >= kThreePhaseChain ? 3 : 2;
      l.phaseBlock = block;
      ++marked;
    });
  return marked;
}

}  // namespace texc::loops
