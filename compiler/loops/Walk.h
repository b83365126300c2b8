// The loop IR's walker and mutator: the one place that knows which statements nest others and
// which fields of a statement hold index expressions and values. Passes and backends traverse
// the IR through these instead of recursing over Stmt kinds themselves (docs/ir.md, "Walking
// and rewriting").
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

// What a walk does after visiting a statement.
enum class WalkAction : uint8_t {
  Advance,     // go on, into the statements nested in this one
  SkipNested,  // go on, but not into this statement's nested statements
  Stop,        // end the walk
};

// Visits every statement under `block` in pre-order: a statement before the statements nested
// in it (a Loop's or Guard's body, a Tile's epilogue). Returns false when a visit stopped it.
bool walk(const Block& block, const std::function<WalkAction(const Stmt&)>& visit);
bool walk(Block& block, const std::function<WalkAction(Stmt&)>& visit);

// Visits every statement under `block`, pre-order, with the statements that enclose it
// (outermost first).
void walkWithEnclosing(const Block& block,
                       const std::function<WalkAction(const Stmt&, const std::vector<const Stmt*>&)>& visit);
void walkWithEnclosing(Block& block, const std::function<WalkAction(Stmt&, const std::vector<Stmt*>&)>& visit);

// Calls `f` for every statement under `block`, pre-order.
void forEachStmt(const Block& block, const std::function<void(const Stmt&)>& f);
void forEachStmt(Block& block, const std::function<void(Stmt&)>& f);

// What store `st` of `p` has to round to its buffer's dtype: its value, or, when the value is
// already rounded to the buffer's f16/bf16 (fusion's round node), the value inside that round,
// whose rounding by the store gives the same bits. Backends round once instead of twice.
const Expr& valueToRound(const LoopProgram& p, const Store& st);

// Calls `f` for every innermost loop under `block` (a loop that holds no loop), outside tiles:
// the loops LLVM's vectorizer sees as they are.
void forEachInnermostLoop(Block& block, const std::function<void(Loop&)>& f);

// Whether some statement under `block` satisfies `pred`.
bool anyStmt(const Block& block, const std::function<bool(const Stmt&)>& pred);

// Statements under `block`, counted at every depth.
int64_t countStmts(const Block& block);

// The mutator. Rebuilds `block` bottom-up: `f` sees each statement after the statements nested
// in it were rewritten, and returns what to put in its place (any number of statements), or
// nullopt to keep it (with whatever `f` changed in place).
void rewrite(Block& block, const std::function<std::optional<Block>(Stmt&)>& f);

// Every index expression statement `s` holds itself, nested statements excluded: a Store's
// index, the indices of the loads (and index values) in its value, guard and padding
// conditions, a Pack's base and k base, a Tile's bases, k base and block offsets.
void forEachIndexOf(Stmt& s, const std::function<void(IndexExpr&)>& f);
void forEachIndexOf(const Stmt& s, const std::function<void(const IndexExpr&)>& f);

// The part of forEachIndexOf that a Pack or Tile evaluates outside its own bindings: a Pack's
// base and k base, a Tile's bases, k base and block offsets (nothing for other kinds).
void forEachOuterIndex(Stmt& s, const std::function<void(IndexExpr&)>& f);

// The value expression statement `s` holds (Store, AccUpdate, AccSet, Pack, Tile), or null.
Expr* valueOf(Stmt& s);
const Expr* valueOf(const Stmt& s);

// Every node of `e`, pre-order.
void forEachExprNode(const Expr& e, const std::function<void(const Expr&)>& f);
void forEachExprNode(Expr& e, const std::function<void(Expr&)>& f);

// Every index expression `e` holds (its loads' indices, its index values), at any depth.
void forEachIndexIn(Expr& e, const std::function<void(IndexExpr&)>& f);
void forEachIndexIn(const Expr& e, const std::function<void(const IndexExpr&)>& f);

// Calls `f` for every Load in `e`.
void forEachLoad(const Expr& e, const std::function<void(const Expr&)>& f);

// Calls `load` for every Load and `store` for every Store statement under `body`: the operands a
// Pack or Tile reads (through `value`), and a Tile's epilogue, included.
void forEachAccess(const Block& body, const std::function<void(const Expr&)>& load,
                   const std::function<void(const Store&)>& store);

// The loop variables a statement binds for what it holds: a Loop's variable (its body), a
// Tile's row, column and k variables (its value and epilogue), a Pack's variable and k (its
// value and padding). Its bases are evaluated outside those bindings.
std::vector<int> boundVars(const Stmt& s);

// Whether `e` loads from `buffer` (at any depth).
bool loadsFrom(const Expr& e, int buffer);

// Whether `e` calls a transcendental function (exp, log, tanh, sigmoid, erf, sin, cos, pow): a
// long chain of dependent arithmetic per element (stream-stores, interleave-loops).
bool callsTranscendental(const Expr& e);
// Whether `b` is one of those functions.
bool isTranscendental(Builtin b);

}  // namespace texc::loops
