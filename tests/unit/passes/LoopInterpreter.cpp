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
using loops::Loop;
using loops::Store;
using loops::AccInit;
using loops::AccUpdate;
using loops::Guard;
using loops::Pack;
using loops::PackSide;
using loops::Tile;
using loops::KWindow;

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
    // Twice the elements: a bf16-pair pack holds two values per element (scratchHalf).
    for (int64_t n : k.scratchSizes) scratch_.emplace_back(static_cast<size_t>(2 * n), kNaN);
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
    switch (s.kind()) {
      case StmtKind::Loop: {
        const Loop& l = s.as<Loop>();
        for (int64_t v = 0; v < l.extent; ++v) {
          vars_[l.var] = v;
          for (const Stmt& b : l.body) exec(b);
        }
        break;
      }
      case StmtKind::Store: {
        const Store& st = s.as<Store>();
        store(st.buffer, offset(st.buffer, st.index), eval(st.value));
        break;
      }
      case StmtKind::AccInit: {
        const AccInit& a = s.as<AccInit>();
        accs_[a.acc] = reductionIdentity(a.reduce);
        accSet_[a.acc] = true;
        break;
      }
      case StmtKind::AccUpdate: {
        const AccUpdate& u = s.as<AccUpdate>();
        if (!accSet_[u.acc]) throw Failure{fmt::format("kernel {}: acc{} updated before it is set", k_.name, u.acc)};
        double x = eval(u.value);
        double& a = accs_[u.acc];
        a = reductionCombine(u.reduce, a, x);
        break;
      }
      case StmtKind::Guard: {
        const Guard& g = s.as<Guard>();
        for (const GuardCond& c : g.conds) {
          int64_t i = evalIndex(c.index, vars_);
          if (i < 0 || i >= c.extent) return;
        }
        for (const Stmt& b : g.body) exec(b);
        break;
      }
      case StmtKind::Pack: {
        const Pack& pk = s.as<Pack>();
        pk.side == PackSide::Rows ? packRows(pk) : packColumns(pk);
        break;
      }
      case StmtKind::Tile: tile(s.as<Tile>()); break;
      case StmtKind::AccSet: {
        const loops::AccSet& a = s.as<loops::AccSet>();
        double x = eval(a.value);  // may read the accumulator itself, which must be set by then
        accs_[a.acc] = x;
        accSet_[a.acc] = true;
        break;
      }
    }
  }

  double& scratch(int id, int64_t at) {
    std::vector<double>& s = scratch_.at(static_cast<size_t>(id));
    const int64_t n = static_cast<int64_t>(s.size()) / 2;
    if (at < 0 || at >= n) throw Failure{fmt::format("kernel {}: element {} of scratch s{} is outside [0, {})", k_.name, at, id, n)};
    return s[static_cast<size_t>(at)];
  }
  // Half `half` (0: the even k step, 1: the odd) of element `at` of a bf16-pair scratch.
  double& scratchHalf(int id, int64_t at, int64_t half) {
    scratch(id, at);  // the bounds check
    return scratch_[static_cast<size_t>(id)][static_cast<size_t>(2 * at + half)];
  }

  struct Window {
    int64_t start, end, length;
  };
  Window window(const KWindow& k) const {
    if (k.block == 0) return {0, k.extent, k.extent};
    int64_t start = evalIndex(k.base, vars_);
    return {start, std::min(start + k.block, k.extent), k.block};
  }

  void packColumns(const Pack& pk) {
    int64_t j0 = evalIndex(pk.base, vars_);
    Window w = window(pk.k);
    int64_t p = pk.panel > 0 ? pk.panel : pk.count;
    for (int64_t k = w.start; k < w.end; ++k)
      for (int64_t c = 0; c < pk.count; ++c) {
        vars_[pk.k.var] = k;
        vars_[pk.var] = j0 + c;
        bool padded = false;
        for (const GuardCond& g : pk.padding) {
          int64_t i = evalIndex(g.index, vars_);
          padded = padded || i < 0 || i >= g.extent;
        }
        const double v = j0 + c < pk.extent && !padded ? eval(pk.value) : 0.0;
        if (pk.bf16Pairs) {
          const int64_t q = (k - w.start) / 2, pairs = loops::packedPairs(w.length, pk.amx);
          scratchHalf(pk.scratch, (c / p) * p * pairs + q * p + c % p, (k - w.start) % 2) = v;
          // An odd window's last pair ends in +0.
          if (k + 1 == w.end && (k - w.start) % 2 == 0) scratchHalf(pk.scratch, (c / p) * p * pairs + q * p + c % p, 1) = 0.0;
          continue;
        }
        scratch(pk.scratch, (c / p) * p * w.length + (k - w.start) * p + c % p) = v;
      }
  }

  void packRows(const Pack& pk) {
    int64_t i0 = evalIndex(pk.base, vars_);
    Window w = window(pk.k);
    for (int64_t r = 0; r < pk.count; ++r)
      for (int64_t k = w.start; k < w.end; ++k) {
        vars_[pk.k.var] = k;
        vars_[pk.var] = std::min(i0 + r, pk.extent - 1);
        if (pk.bf16Pairs) {
          const int64_t q = (k - w.start) / 2, pairs = loops::packedPairs(w.length, pk.amx);
          // AMX: each group of 16 pairs of a panel is an A tile, a row's 16 pairs side by side.
          const int64_t at = pk.amx ? (r / pk.panel) * pk.panel * pairs + (q / 16) * pk.panel * 16 + (r % pk.panel) * 16 + q % 16
                                    : (r / pk.panel) * pk.panel * pairs + q * pk.panel + r % pk.panel;
          scratchHalf(pk.scratch, at, (k - w.start) % 2) = eval(pk.value);
          if (k + 1 == w.end && (k - w.start) % 2 == 0) scratchHalf(pk.scratch, at, 1) = 0.0;
          continue;
        }
        scratch(pk.scratch, (r / pk.panel) * pk.panel * w.length + (k - w.start) * pk.panel + r % pk.panel) = eval(pk.value);
      }
  }

  // The tile element by element, in the order the IR defines (docs/ir.md).
  void tile(const Tile& t) {
    int64_t i0 = evalIndex(t.rowBase, vars_);
    int64_t j0 = evalIndex(t.colBase, vars_);
    Window w = window(t.k);
    int64_t blockRow = t.k.block > 0 || t.rowScratch >= 0 ? evalIndex(t.blockRow, vars_) : 0;
    int64_t blockCol = t.colScratch >= 0 ? evalIndex(t.blockCol, vars_) : 0;
    for (int64_t r = 0; r < t.rows && i0 + r < t.rowExtent; ++r)
      for (int64_t c = 0; c < t.cols && j0 + c < t.colExtent; ++c) {
        vars_[t.rowVar] = i0 + r;
        vars_[t.colVar] = j0 + c;
        // Partial sums of earlier k blocks are in the element the first epilogue store writes.
        const Store* first = t.k.block > 0 && !t.perWindow ? &t.epilogue.at(0).as<Store>() : nullptr;
        // ... or, beside a low-precision output, in the tile's f32 scratch.
        double* partial = !first              ? nullptr
                          : t.sumScratch >= 0 ? &scratch(t.sumScratch, (evalIndex(t.sumRow, vars_) + r) * t.sumStride +
                                                                           evalIndex(t.sumCol, vars_) + c)
                                              : &buffers_[first->buffer][offset(first->buffer, first->index)];
        double acc = partial && w.start > 0 ? *partial : 0.0;
        for (int64_t k = w.start; k < w.end && t.bf16Pairs; k += 2) {
          // Pairs: both products of a pair, the even k step's first (the odd one may be the +0 pad).
          const int64_t q = (k - w.start) / 2, pairs = loops::packedPairs(w.length, t.amx);
          // A row pack of all of k holds its pairs from k = 0 (windows start even).
          const int64_t whole = loops::packedPairs(t.k.extent, t.amx);
          const int64_t rowAt = t.rowPackWhole && t.amx ? blockRow * whole + (k / 32) * t.rows * 16 + r * 16 + (k / 2) % 16
                                : t.rowPackWhole        ? blockRow * whole + k / 2 * t.rows + r
                                : t.amx                 ? blockRow * pairs + (q / 16) * t.rows * 16 + r * 16 + q % 16
                                                        : blockRow * pairs + q * t.rows + r;
          for (int64_t h = 0; h < 2; ++h)
            acc += scratchHalf(t.rowScratch, rowAt, h) * scratchHalf(t.colScratch, blockCol * pairs + q * t.cols + c, h);
        }
        for (int64_t k = w.start; k < w.end && !t.bf16Pairs; ++k) {
          vars_[t.k.var] = k;
          double a = !(t.rowScratch >= 0)  ? eval(t.value.args[0])
                     : t.rowPackWhole      ? scratch(t.rowScratch, blockRow * t.k.extent + k * t.rows + r)
                                           : scratch(t.rowScratch, blockRow * w.length + (k - w.start) * t.rows + r);
          bool padded = false;
          for (const GuardCond& g : t.colPadding) {
            const int64_t i = evalIndex(g.index, vars_);
            padded = padded || i < 0 || i >= g.extent;
          }
          double b = t.colScratch >= 0 ? scratch(t.colScratch, blockCol * w.length + (k - w.start) * t.cols + c)
                     : padded          ? 0.0
                                       : eval(t.value.args[1]);
          acc += a * b;
        }
        if (partial && w.end < t.k.extent) {
          *partial = acc;
          continue;
        }
        accs_[t.acc] = acc;
        accSet_[t.acc] = true;
        for (const Stmt& b : t.epilogue) exec(b);
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
