#include "LoopInterpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "compiler/reference/Reference.h"

namespace texc::passtest {

namespace {

using loops::Buffer;
using loops::Expr;
using loops::ExprKind;
using loops::GuardCond;
using loops::Kernel;
using loops::LoopProgram;
using loops::Stmt;
using loops::StmtKind;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Failure {
  std::string what;
};

// The arena of a planned run: one double per byte, and where each planned buffer starts (-1:
// not in the arena).
struct Arena {
  std::vector<double> slots;
  std::vector<int64_t> offsets;
};

class KernelRun {
 public:
  KernelRun(const LoopProgram& p, const Kernel& k, std::vector<std::vector<double>>& buffers, Arena* arena)
      : p_(p), k_(k), buffers_(buffers), arena_(arena), vars_(k.varNames.size(), 0), accs_(k.numAccs, kNaN), accSet_(k.numAccs, false) {
    for (int64_t n : k.scratchSizes) scratch_.emplace_back(static_cast<size_t>(n), kNaN);
  }

  void run() {
    for (const Stmt& s : k_.body) exec(s);
  }

 private:
  size_t offset(int buffer, const std::vector<IndexExpr>& index) const {
    const Buffer& b = p_.buffers[buffer];
    size_t off = 0;
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t i = evalIndex(index[d], vars_);
      if (i < 0 || i >= b.shape[d])
        throw Failure{fmt::format("kernel {}: index {} of {} is {}, outside [0, {})", k_.name, d, b.name, i, b.shape[d])};
      off = off * static_cast<size_t>(b.shape[d]) + static_cast<size_t>(i);
    }
    return off;
  }

  void exec(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Loop:
        for (int64_t v = 0; v < s.extent; ++v) {
          vars_[s.var] = v;
          for (const Stmt& b : s.body) exec(b);
        }
        break;
      case StmtKind::Store: store(s.buffer, offset(s.buffer, s.index), eval(s.value)); break;
      case StmtKind::AccInit:
        accs_[s.acc] = reductionIdentity(s.reduce);
        accSet_[s.acc] = true;
        break;
      case StmtKind::AccUpdate: {
        if (!accSet_[s.acc]) throw Failure{fmt::format("kernel {}: acc{} updated before it is set", k_.name, s.acc)};
        double x = eval(s.value);
        double& a = accs_[s.acc];
        a = reductionCombine(s.reduce, a, x);
        break;
      }
      case StmtKind::Guard: {
        for (const GuardCond& c : s.conds) {
          int64_t i = evalIndex(c.index, vars_);
          if (i < 0 || i >= c.extent) return;
        }
        for (const Stmt& b : s.body) exec(b);
        break;
      }
      case StmtKind::Pack: s.rowVar >= 0 ? packRows(s) : packColumns(s); break;
      case StmtKind::Tile: tile(s); break;
    }
  }

  double& scratch(int id, int64_t at) {
    std::vector<double>& s = scratch_.at(static_cast<size_t>(id));
    if (at < 0 || at >= static_cast<int64_t>(s.size()))
      throw Failure{fmt::format("kernel {}: element {} of scratch s{} is outside [0, {})", k_.name, at, id, s.size())};
    return s[static_cast<size_t>(at)];
  }

  struct Window {
    int64_t start, end, length;
  };
  Window window(const Stmt& s) const {
    if (s.kBlock == 0) return {0, s.extent, s.extent};
    int64_t start = evalIndex(s.kBase, vars_);
    return {start, std::min(start + s.kBlock, s.extent), s.kBlock};
  }

  void packColumns(const Stmt& s) {
    int64_t j0 = evalIndex(s.colBase, vars_);
    Window w = window(s);
    int64_t p = s.rows > 0 ? s.rows : s.cols;
    for (int64_t k = w.start; k < w.end; ++k)
      for (int64_t c = 0; c < s.cols; ++c) {
        vars_[s.var] = k;
        vars_[s.colVar] = j0 + c;
        bool padded = false;
        for (const GuardCond& g : s.conds) {
          int64_t i = evalIndex(g.index, vars_);
          padded = padded || i < 0 || i >= g.extent;
        }
        scratch(s.scratch, (c / p) * p * w.length + (k - w.start) * p + c % p) = j0 + c < s.colExtent && !padded ? eval(s.value) : 0.0;
      }
  }

  void packRows(const Stmt& s) {
    int64_t i0 = evalIndex(s.rowBase, vars_);
    Window w = window(s);
    for (int64_t r = 0; r < s.rows; ++r)
      for (int64_t k = w.start; k < w.end; ++k) {
        vars_[s.var] = k;
        vars_[s.rowVar] = std::min(i0 + r, s.rowExtent - 1);
        scratch(s.scratch, (r / s.cols) * s.cols * w.length + (k - w.start) * s.cols + r % s.cols) = eval(s.value);
      }
  }

  // The tile element by element, in the order the IR defines (docs/ir.md).
  void tile(const Stmt& s) {
    int64_t i0 = evalIndex(s.rowBase, vars_);
    int64_t j0 = evalIndex(s.colBase, vars_);
    Window w = window(s);
    int64_t blockRow = s.kBlock > 0 || s.rowScratch >= 0 ? evalIndex(s.blockRow, vars_) : 0;
    int64_t blockCol = s.scratch >= 0 ? evalIndex(s.blockCol, vars_) : 0;
    for (int64_t r = 0; r < s.rows && i0 + r < s.rowExtent; ++r)
      for (int64_t c = 0; c < s.cols && j0 + c < s.colExtent; ++c) {
        vars_[s.rowVar] = i0 + r;
        vars_[s.colVar] = j0 + c;
        // Partial sums of earlier k blocks are in the element the first epilogue store writes.
        double* partial = s.kBlock > 0 ? &buffers_[s.body.at(0).buffer][offset(s.body[0].buffer, s.body[0].index)] : nullptr;
        double acc = partial && w.start > 0 ? *partial : 0.0;
        for (int64_t k = w.start; k < w.end; ++k) {
          vars_[s.var] = k;
          double a = !(s.rowScratch >= 0)  ? eval(s.value.args[0])
                     : s.rowPackWhole      ? scratch(s.rowScratch, blockRow * s.extent + k * s.rows + r)
                                           : scratch(s.rowScratch, blockRow * w.length + (k - w.start) * s.rows + r);
          double b = s.scratch >= 0 ? scratch(s.scratch, blockCol * w.length + (k - w.start) * s.cols + c) : eval(s.value.args[1]);
          acc += a * b;
        }
        if (partial && w.end < s.extent) {
          *partial = acc;
          continue;
        }
        accs_[s.acc] = acc;
        accSet_[s.acc] = true;
        for (const Stmt& b : s.body) exec(b);
      }
  }

  double call(const Expr& e) {
    if (e.builtin == Builtin::Select) return eval(e.args[0]) != 0 ? eval(e.args[1]) : eval(e.args[2]);
    double a = eval(e.args[0]);
    return applyBuiltin(e.builtin, a, e.args.size() > 1 ? eval(e.args[1]) : 0);
  }

  double binary(const Expr& e) {
    double a = eval(e.args[0]);
    double b = eval(e.args[1]);
    switch (e.binaryOp) {
      case BinaryOp::Add: return a + b;
      case BinaryOp::Sub: return a - b;
      case BinaryOp::Mul: return a * b;
      case BinaryOp::Div: return a / b;
      case BinaryOp::Lt: return a < b;
      case BinaryOp::Le: return a <= b;
      case BinaryOp::Gt: return a > b;
      case BinaryOp::Ge: return a >= b;
      case BinaryOp::Eq: return a == b;
      case BinaryOp::Ne: return a != b;
      case BinaryOp::And: return a != 0 && b != 0;
      case BinaryOp::Or: return a != 0 || b != 0;
      case BinaryOp::Mod: break;
    }
    throw Failure{fmt::format("kernel {}: '%' in a value", k_.name)};
  }

  double eval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Const: return e.constant;
      case ExprKind::VarValue: return static_cast<double>(e.index.empty() ? vars_[e.var] : evalIndex(e.index[0], vars_));
      case ExprKind::Load: return load(e.buffer, offset(e.buffer, e.index));
      case ExprKind::AccRead:
        if (!accSet_[e.acc]) throw Failure{fmt::format("kernel {}: acc{} read before it is set", k_.name, e.acc)};
        return accs_[e.acc];
      case ExprKind::Unary: {
        double a = eval(e.args[0]);
        return e.unaryOp == UnaryOp::Neg ? -a : (a == 0 ? 1.0 : 0.0);
      }
      case ExprKind::Binary: return binary(e);
      case ExprKind::Call: return call(e);
    }
    throw Failure{"unknown expression"};
  }

  bool inArena(int buffer) const { return arena_ && arena_->offsets[buffer] >= 0; }
  size_t slot(int buffer, size_t element) const {
    return static_cast<size_t>(arena_->offsets[buffer]) + element * static_cast<size_t>(dtypeBytes(p_.buffers[buffer].dtype));
  }

  void store(int buffer, size_t element, double v) {
    if (!inArena(buffer)) {
      buffers_[buffer][element] = v;
      return;
    }
    size_t s = slot(buffer, element);
    for (int b = 0; b < dtypeBytes(p_.buffers[buffer].dtype); ++b) arena_->slots.at(s + b) = v;
  }

  double load(int buffer, size_t element) const {
    if (!inArena(buffer)) return buffers_[buffer][element];
    size_t s = slot(buffer, element);
    double v = arena_->slots.at(s);
    for (int b = 1; b < dtypeBytes(p_.buffers[buffer].dtype); ++b)
      if (std::memcmp(&arena_->slots.at(s + b), &v, sizeof v) != 0)
        throw Failure{fmt::format("kernel {}: element {} of {} was partly overwritten", k_.name, element, p_.buffers[buffer].name)};
    return v;
  }

  const LoopProgram& p_;
  const Kernel& k_;
  std::vector<std::vector<double>>& buffers_;
  Arena* arena_;
  std::vector<int64_t> vars_;
  std::vector<double> accs_;
  std::vector<bool> accSet_;
  std::vector<std::vector<double>> scratch_;
};

}  // namespace

namespace {

std::string interpret(const loops::LoopProgram& p, std::vector<std::vector<double>>& buffers, Arena* arena) {
  if (buffers.size() != p.buffers.size()) return "wrong number of buffers";
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    size_t n = static_cast<size_t>(p.buffers[b].numElements());
    if (p.buffers[b].kind == loops::BufferKind::Input) {
      if (buffers[b].size() != n) return fmt::format("input {} has {} elements, expected {}", p.buffers[b].name, buffers[b].size(), n);
    } else {
      // Written before read in a valid program; NaN makes a read of an unwritten element show.
      buffers[b].assign(n, kNaN);
    }
  }
  try {
    for (const loops::Kernel& k : p.kernels) KernelRun(p, k, buffers, arena).run();
  } catch (const Failure& f) {
    return f.what;
  }
  return "";
}

}  // namespace

std::string interpretLoops(const loops::LoopProgram& p, std::vector<std::vector<double>>& buffers) {
  return interpret(p, buffers, nullptr);
}

std::string interpretLoops(const loops::LoopProgram& p, std::vector<std::vector<double>>& buffers, const loops::MemoryPlan& plan) {
  Arena arena;
  arena.slots.assign(static_cast<size_t>(plan.arenaBytes), kNaN);
  arena.offsets.assign(p.buffers.size(), -1);
  for (const loops::PlannedTemp& t : plan.temps) arena.offsets[t.buffer] = t.offset;
  return interpret(p, buffers, &arena);
}

}  // namespace texc::passtest
