// printLoopProgram: the loop IR as indented text (`texc compile --emit loops`).
#include <fmt/format.h>

#include <cmath>

#include "compiler/loops/LoopIR.h"

namespace texc::loops {

namespace {

struct Printer {
  const LoopProgram& p;
  const Kernel& k;
  std::string out;

  std::string index(const IndexExpr& ix) const {
    switch (ix.kind) {
      case IndexExpr::Kind::Const: return std::to_string(ix.constant);
      case IndexExpr::Kind::Var: return k.varNames[ix.var];
      case IndexExpr::Kind::Add: return fmt::format("({} + {})", index(ix.ops[0]), index(ix.ops[1]));
      case IndexExpr::Kind::Sub: return fmt::format("({} - {})", index(ix.ops[0]), index(ix.ops[1]));
      case IndexExpr::Kind::Mul: return fmt::format("{} * {}", ix.constant, index(ix.ops[0]));
      case IndexExpr::Kind::FloorDiv: return fmt::format("({} / {})", index(ix.ops[0]), ix.constant);
      case IndexExpr::Kind::Mod: return fmt::format("({} % {})", index(ix.ops[0]), ix.constant);
    }
    return "?";
  }

  std::string access(int buffer, const std::vector<IndexExpr>& idx) const {
    std::string s = p.buffers[buffer].name;
    if (idx.empty()) return s;
    s += "[";
    for (size_t i = 0; i < idx.size(); ++i) s += (i ? ", " : "") + index(idx[i]);
    return s + "]";
  }

  std::string expr(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::Const:
        if (std::isinf(e.constant)) return e.constant > 0 ? "inf" : "-inf";
        return fmt::format("{}", e.constant);
      case ExprKind::VarValue: return fmt::format("float({})", e.index.empty() ? k.varNames[e.var] : index(e.index[0]));
      case ExprKind::Load: return access(e.buffer, e.index);
      case ExprKind::AccRead: return fmt::format("acc{}", e.acc);
      case ExprKind::Unary: return fmt::format("({}{})", spelling(e.unaryOp), expr(e.args[0]));
      case ExprKind::Binary: return fmt::format("({} {} {})", expr(e.args[0]), spelling(e.binaryOp), expr(e.args[1]));
      case ExprKind::Call: {
        std::string s = std::string(builtinName(e.builtin)) + "(";
        for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + expr(e.args[i]);
        return s + ")";
      }
    }
    return "?";
  }

  static const char* identity(ReduceKind r) {
    switch (r) {
      case ReduceKind::Sum: return "0";
      case ReduceKind::Prod: return "1";
      case ReduceKind::Max: return "-inf";
      case ReduceKind::Min: return "inf";
    }
    return "?";
  }

  void stmt(const Stmt& s, int depth) {
    std::string pad(2 * depth, ' ');
    switch (s.kind) {
      case StmtKind::Loop:
        out += fmt::format("{}for {} < {}{}{}\n", pad, k.varNames[s.var], s.extent, s.parallel ? " parallel" : "",
                           s.vectorize ? " vector" : s.scalar ? " scalar" : "");
        for (const Stmt& b : s.body) stmt(b, depth + 1);
        break;
      case StmtKind::Store: out += fmt::format("{}{} = {}\n", pad, access(s.buffer, s.index), expr(s.value)); break;
      case StmtKind::AccInit: out += fmt::format("{}acc{} = {}  # {}\n", pad, s.acc, identity(s.reduce), spelling(s.reduce)); break;
      case StmtKind::AccUpdate:
        if (s.reduce == ReduceKind::Sum) out += fmt::format("{}acc{} += {}\n", pad, s.acc, expr(s.value));
        else if (s.reduce == ReduceKind::Prod) out += fmt::format("{}acc{} *= {}\n", pad, s.acc, expr(s.value));
        else out += fmt::format("{}acc{} = {}(acc{}, {})\n", pad, s.acc, spelling(s.reduce), s.acc, expr(s.value));
        break;
      case StmtKind::Guard: {
        std::string conds;
        for (size_t i = 0; i < s.conds.size(); ++i)
          conds += fmt::format("{}0 <= {} < {}", i ? " && " : "", index(s.conds[i].index), s.conds[i].extent);
        out += fmt::format("{}if {}  # otherwise the term is skipped\n", pad, conds);
        for (const Stmt& b : s.body) stmt(b, depth + 1);
        break;
      }
      case StmtKind::Pack: {
        std::string window = kWindow(s);
        if (s.rowVar >= 0) {
          out += fmt::format("{}pack s{}[{} < {} in panels of {}][{}] = {}  # {} = {}, clamped below {}\n", pad, s.scratch,
                             k.varNames[s.rowVar], s.rows, s.cols, window, expr(s.value), k.varNames[s.rowVar],
                             range(s.rowBase, s.rows), s.rowExtent);
          break;
        }
        std::string padding;
        for (size_t i = 0; i < s.conds.size(); ++i)
          padding += fmt::format("{}0 <= {} < {}", i ? " && " : "", index(s.conds[i].index), s.conds[i].extent);
        out += fmt::format("{}pack s{}[{}][{} < {}{}] = {}{}  # {} = {}, 0 past {}{}\n", pad, s.scratch, window,
                           k.varNames[s.colVar], s.cols, s.rows > 0 && s.rows < s.cols ? fmt::format(" in panels of {}", s.rows) : "",
                           padding.empty() ? "" : "if " + padding + " then ", expr(s.value), k.varNames[s.colVar],
                           range(s.colBase, s.cols), s.colExtent, padding.empty() ? "" : ", 0 where padded");
        break;
      }
      case StmtKind::Tile: {
        std::string rhs = s.scratch >= 0 ? fmt::format("s{}[{}][{}{}]", s.scratch, k.varNames[s.var], offset(s.blockCol),
                                                       k.varNames[s.colVar])
                                         : expr(s.value.args[1]);
        std::string lhs = s.rowScratch >= 0 ? fmt::format("s{}[{}{}][{}{}]", s.rowScratch, offset(s.blockRow), k.varNames[s.rowVar],
                                                          k.varNames[s.var], s.rowPackWhole ? " of all" : "")
                                            : expr(s.value.args[0]);
        out += fmt::format("{}tile {}x{}: {} = {} + 0..{} (< {}), {} = {} + 0..{} (< {})\n", pad, s.rows, s.cols,
                           k.varNames[s.rowVar], index(s.rowBase), s.rows - 1, s.rowExtent, k.varNames[s.colVar],
                           index(s.colBase), s.cols - 1, s.colExtent);
        std::string start;
        if (s.kBlock > 0 && !s.body.empty() && s.body[0].kind == StmtKind::Store)
          start = fmt::format("({} > 0 ? {} : 0) + ", index(s.kBase), access(s.body[0].buffer, s.body[0].index));
        out += fmt::format("{}  acc{} = {}sum({}) {} * {}  # {}x{} accumulators in registers\n", pad, s.acc, start, kWindow(s),
                           lhs, rhs, s.rows, s.cols);
        if (s.kBlock > 0) out += fmt::format("{}  # after the last k block only; before it the partial sum is stored instead\n", pad);
        for (const Stmt& b : s.body) stmt(b, depth + 1);
        break;
      }
    }
  }

  // "base + " before a variable, nothing when the base is 0.
  std::string offset(const IndexExpr& base) const {
    return base.kind == IndexExpr::Kind::Const && base.constant == 0 ? "" : index(base) + " + ";
  }

  // The n values from `base`: "base + 0..n-1", or "0..n-1" from 0.
  std::string range(const IndexExpr& base, int64_t n) const { return fmt::format("{}0..{}", offset(base), n - 1); }

  std::string kWindow(const Stmt& s) const {
    if (s.kBlock == 0) return fmt::format("{} < {}", k.varNames[s.var], s.extent);
    return fmt::format("{} in [{}, +{}) < {}", k.varNames[s.var], index(s.kBase), s.kBlock, s.extent);
  }
};

const char* kindName(BufferKind k) { return k == BufferKind::Input ? "input" : k == BufferKind::Output ? "output" : "temp"; }

}  // namespace

std::string printLoopProgram(const LoopProgram& p) {
  std::string out;
  for (const Buffer& b : p.buffers) {
    std::string shape;
    for (size_t i = 0; i < b.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(b.shape[i]);
    out += fmt::format("buffer {} : {}[{}] {}\n", b.name, dtypeName(b.dtype), shape, kindName(b.kind));
  }
  for (const Kernel& k : p.kernels) {
    Printer pr{p, k, {}};
    for (const Stmt& s : k.body) pr.stmt(s, 1);
    std::string scratch;
    for (size_t i = 0; i < k.scratchSizes.size(); ++i) scratch += fmt::format(", scratch s{}[{}]", i, k.scratchSizes[i]);
    out += fmt::format("\nkernel {} ({}{}{})\n{}{}", k.name, dtypeName(k.computeType),
                       k.parallelExtent > 0 ? fmt::format(", parallel over {}", k.parallelExtent) : "", scratch,
                       k.schedule.empty() ? "" : "  # schedule: " + k.schedule + "\n", pr.out);
  }
  return out;
}

namespace {

struct Verifier {
  const LoopProgram& p;
  const Kernel& k;
  std::vector<std::string>& problems;
  std::vector<bool> bound;

  void fail(const std::string& what) { problems.push_back(fmt::format("kernel {}: {}", k.name, what)); }

  void index(const IndexExpr& ix) {
    if (ix.kind == IndexExpr::Kind::Var) {
      if (ix.var < 0 || ix.var >= static_cast<int>(bound.size())) fail(fmt::format("index uses unknown variable {}", ix.var));
      else if (!bound[ix.var]) fail(fmt::format("variable {} used outside its loop", k.varNames[ix.var]));
    }
    if ((ix.kind == IndexExpr::Kind::FloorDiv || ix.kind == IndexExpr::Kind::Mod) && ix.constant <= 0)
      fail("floor division or modulo by a non-positive constant");
    for (const IndexExpr& o : ix.ops) index(o);
  }

  void access(int buffer, const std::vector<IndexExpr>& idx) {
    if (buffer < 0 || buffer >= static_cast<int>(p.buffers.size())) return fail(fmt::format("unknown buffer {}", buffer));
    if (idx.size() != p.buffers[buffer].shape.size())
      fail(fmt::format("buffer {} has rank {} but is indexed with {}", p.buffers[buffer].name, p.buffers[buffer].shape.size(), idx.size()));
    for (const IndexExpr& ix : idx) index(ix);
  }

  void expr(const Expr& e) {
    if (e.kind == ExprKind::Load) access(e.buffer, e.index);
    if (e.kind == ExprKind::VarValue && !e.index.empty()) index(e.index[0]);
    else if (e.kind == ExprKind::VarValue && (e.var < 0 || e.var >= static_cast<int>(bound.size()) || !bound[e.var]))
      fail("variable value used outside its loop");
    if (e.kind == ExprKind::AccRead && (e.acc < 0 || e.acc >= k.numAccs)) fail(fmt::format("unknown accumulator {}", e.acc));
    for (const Expr& a : e.args) expr(a);
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Loop:
        if (s.var < 0 || s.var >= static_cast<int>(bound.size())) return fail("loop over an unknown variable");
        if (bound[s.var]) fail(fmt::format("variable {} bound twice", k.varNames[s.var]));
        if (s.extent <= 0) fail(fmt::format("loop {} has extent {}", k.varNames[s.var], s.extent));
        bound[s.var] = true;
        for (const Stmt& b : s.body) stmt(b);
        bound[s.var] = false;
        break;
      case StmtKind::Store:
        access(s.buffer, s.index);
        if (s.buffer >= 0 && s.buffer < static_cast<int>(p.buffers.size()) && p.buffers[s.buffer].kind == BufferKind::Input)
          fail(fmt::format("store to input buffer {}", p.buffers[s.buffer].name));
        expr(s.value);
        break;
      case StmtKind::AccInit:
      case StmtKind::AccUpdate:
        if (s.acc < 0 || s.acc >= k.numAccs) fail(fmt::format("unknown accumulator {}", s.acc));
        if (s.kind == StmtKind::AccUpdate) expr(s.value);
        break;
      case StmtKind::Guard:
        if (s.conds.empty()) fail("guard without conditions");
        for (const GuardCond& c : s.conds) index(c.index);
        for (const Stmt& b : s.body) stmt(b);
        break;
      case StmtKind::Pack:
      case StmtKind::Tile: block(s); break;
    }
  }

  bool freeVar(int v) {
    if (v < 0 || v >= static_cast<int>(bound.size())) return fail(fmt::format("unknown variable {}", v)), false;
    if (bound[v]) return fail(fmt::format("variable {} bound twice", k.varNames[v])), false;
    return true;
  }

  bool scratchOk(int id, int64_t need, const char* what) {
    if (id < 0 || id >= static_cast<int>(k.scratchSizes.size())) return fail(fmt::format("{} uses unknown scratch s{}", what, id)), false;
    if (k.scratchSizes[id] < need) return fail(fmt::format("scratch s{} is too small", id)), false;
    return true;
  }

  // Pack and Tile bind the reduction variable and their row and/or column variables.
  void block(const Stmt& s) {
    bool tile = s.kind == StmtKind::Tile;
    bool hasRows = tile || s.rowVar >= 0;
    bool hasCols = tile || s.rowVar < 0;
    const char* what = tile ? "tile" : "pack";
    if (hasCols) index(s.colBase);
    if (hasRows) index(s.rowBase);
    if (s.kBlock > 0) index(s.kBase);
    if (tile && (s.kBlock > 0 || s.rowScratch >= 0)) index(s.blockRow);
    if (!freeVar(s.var) || (hasCols && !freeVar(s.colVar)) || (hasRows && !freeVar(s.rowVar))) return;
    if (s.extent <= 0 || s.cols <= 0 || s.kBlock < 0 || (hasCols && s.colExtent <= 0) || (hasRows && (s.rows <= 0 || s.rowExtent <= 0)))
      return fail(fmt::format("{} with an empty extent", what));
    int64_t window = s.kBlock > 0 ? s.kBlock : s.extent;
    if (!tile && hasRows && s.rows % s.cols != 0) fail("row pack whose rows are not whole panels");
    if (!tile && !hasRows && s.rows > 0 && s.cols % s.rows != 0) fail("column pack whose columns are not whole panels");
    if (!tile) scratchOk(s.scratch, window * (hasRows ? s.rows : s.cols), what);
    if (tile && s.scratch >= 0) {
      index(s.blockCol);
      scratchOk(s.scratch, window * s.cols, what);
    }
    if (tile && s.rowScratch >= 0) scratchOk(s.rowScratch, (s.rowPackWhole ? s.extent : window) * s.rows, what);
    if (!tile && hasRows && !s.conds.empty()) fail("row pack with padding conditions");
    if (tile && (s.value.kind != ExprKind::Binary || s.value.binaryOp != BinaryOp::Mul))
      fail("tile value is not a product of a row and a column operand");
    if (tile && (s.acc < 0 || s.acc >= k.numAccs)) fail(fmt::format("unknown accumulator {}", s.acc));
    if (tile && s.kBlock > 0 && (s.body.empty() || s.body[0].kind != StmtKind::Store))
      fail("k-blocked tile whose first epilogue statement is not the store that keeps its partial sums");
    bound[s.var] = true;
    if (hasCols) bound[s.colVar] = true;
    if (hasRows) bound[s.rowVar] = true;
    expr(s.value);
    for (const GuardCond& c : s.conds) index(c.index);
    bound[s.var] = false;
    for (const Stmt& b : s.body) stmt(b);
    if (hasCols) bound[s.colVar] = false;
    if (hasRows) bound[s.rowVar] = false;
  }
};

// The runtime calls a kernel once per chunk of [0, parallelExtent), and the code generator runs
// the top-level parallel loop over that chunk: so there is at most one parallel loop, at the top
// level, and parallelExtent is its extent (0 without one). A loop is told to LLVM as widened or
// as scalar, not both.
void checkLoopMarks(const Kernel& k, const std::vector<Stmt>& stmts, bool topLevel, int64_t& found, int& count,
                        std::vector<std::string>& problems) {
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Loop && s.vectorize && s.scalar)
      problems.push_back(fmt::format("kernel {}: loop {} is marked both vector and scalar", k.name,
                                     s.var >= 0 && s.var < static_cast<int>(k.varNames.size()) ? k.varNames[s.var] : "?"));
    if (s.kind == StmtKind::Loop && s.parallel) {
      if (!topLevel) problems.push_back(fmt::format("kernel {}: parallel loop {} below the kernel's top level", k.name,
                                                    s.var >= 0 && s.var < static_cast<int>(k.varNames.size()) ? k.varNames[s.var] : "?"));
      else if (++count == 1) found = s.extent;
    }
    if (s.kind == StmtKind::Loop || s.kind == StmtKind::Guard) checkLoopMarks(k, s.body, false, found, count, problems);
  }
}

}  // namespace

std::vector<std::string> verifyLoopProgram(const LoopProgram& p) {
  std::vector<std::string> problems;
  for (const Kernel& k : p.kernels) {
    Verifier v{p, k, problems, std::vector<bool>(k.varNames.size(), false)};
    for (const Stmt& s : k.body) v.stmt(s);
    int64_t extent = 0;
    int count = 0;
    checkLoopMarks(k, k.body, true, extent, count, problems);
    if (count > 1) problems.push_back(fmt::format("kernel {}: {} parallel loops", k.name, count));
    if (k.parallelExtent != extent)
      problems.push_back(fmt::format("kernel {}: parallel over {}, but its parallel loop has extent {}", k.name, k.parallelExtent, extent));
  }
  return problems;
}

}  // namespace texc::loops
