// printLoopProgram: the loop IR as indented text (`texc compile --emit loops`).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "compiler/loops/InterleaveLoops.h"
#include "compiler/loops/LoopIR.h"
#include "compiler/loops/NonPositiveExp.h"
#include "compiler/loops/PairBf16Lanes.h"
#include "compiler/loops/SumLanes.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

struct Printer {
  const LoopProgram& p;
  const Kernel& k;
  std::string out;
  std::map<const Stmt*, int>* lines = nullptr;  // each statement's line in `out`, 0-based, when asked
  // The lines of `out` counted so far, and how much of it they cover (counted once, as it grows).
  int linesSeen = 0;
  size_t seenUpTo = 0;

  int currentLine() {
    linesSeen += static_cast<int>(std::count(out.begin() + static_cast<std::ptrdiff_t>(seenUpTo), out.end(), '\n'));
    seenUpTo = out.size();
    return linesSeen;
  }

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
        // exp[<=0]: an exp whose argument was proved <= 0 (nonpositive-exp).
        std::string s = std::string(builtinName(e.builtin)) + (e.nonPositiveArg ? "[<=0](" : "(");
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
    // A tile's own line is its bounds; its k loop, where the time goes, is the line after.
    if (lines) (*lines)[&s] = currentLine() + (s.is<Tile>() ? 1 : 0);
    switch (s.kind()) {
      case StmtKind::Loop: {
        const Loop& l = s.as<Loop>();
        std::string prefetch;
        for (const Prefetch& f : l.prefetch)
          prefetch += fmt::format("{} {} +{} B", prefetch.empty() ? "  # prefetch" : ",", p.buffers[f.buffer].name, f.bytes);
        const std::string interleave = fmt::format("{}{}{}{}", l.interleave > 0 ? fmt::format(" interleave {}", l.interleave) : "", l.pairs ? " bf16 pairs" : "",
                                                   l.sumLanes > 0 ? fmt::format(" sum lanes {}", l.sumLanes) : "",
                                                   l.phases > 1 ? fmt::format(" in {} phases of {}", l.phases, l.phaseBlock) : "");
        out += fmt::format("{}for {} < {}{}{}{}{}{}{}\n", pad, k.varNames[l.var], l.extent, l.parallel ? " parallel" : "",
                           l.vectorize ? " vector" : l.scalar ? " scalar" : "", interleave, l.gpu == GpuLoop::None ? "" : " ", gpuLoopName(l.gpu),
                           prefetch);
        block(l.body, depth + 1);
        break;
      }
      case StmtKind::Store: {
        const Store& st = s.as<Store>();
        out += fmt::format("{}{}{} = {}\n", pad, st.streaming ? "stream " : "", access(st.buffer, st.index), expr(st.value));
        break;
      }
      case StmtKind::AccInit: {
        const AccInit& a = s.as<AccInit>();
        out += fmt::format("{}acc{} = {}  # {}\n", pad, a.acc, identity(a.reduce), spelling(a.reduce));
        break;
      }
      case StmtKind::AccUpdate: {
        const AccUpdate& u = s.as<AccUpdate>();
        if (u.reduce == ReduceKind::Sum) out += fmt::format("{}acc{} += {}\n", pad, u.acc, expr(u.value));
        else if (u.reduce == ReduceKind::Prod) out += fmt::format("{}acc{} *= {}\n", pad, u.acc, expr(u.value));
        else out += fmt::format("{}acc{} = {}(acc{}, {})\n", pad, u.acc, spelling(u.reduce), u.acc, expr(u.value));
        break;
      }
      case StmtKind::Guard: {
        const Guard& g = s.as<Guard>();
        out += fmt::format("{}if {}  # otherwise {} skipped\n", pad, conds(g.conds), g.skips.empty() ? "the term is" : g.skips);
        block(g.body, depth + 1);
        break;
      }
      case StmtKind::Pack: pack(s.as<Pack>(), pad); break;
      case StmtKind::Tile: tile(s.as<Tile>(), pad, depth); break;
      case StmtKind::AccSet: {
        const AccSet& a = s.as<AccSet>();
        out += fmt::format("{}acc{} := {}\n", pad, a.acc, expr(a.value));
        break;
      }
    }
  }

  void block(const Block& b, int depth) {
    for (const Stmt& s : b) stmt(s, depth);
  }

  std::string conds(const std::vector<GuardCond>& cs) const {
    std::string out;
    for (size_t i = 0; i < cs.size(); ++i)
      out += cs[i].extent == kNoUpperBound ? fmt::format("{}0 <= {}", i ? " && " : "", index(cs[i].index))
                                           : fmt::format("{}0 <= {} < {}", i ? " && " : "", index(cs[i].index), cs[i].extent);
    return out;
  }

  void pack(const Pack& pk, const std::string& pad) {
    std::string window = kWindow(pk.k);
    if (pk.side == PackSide::Rows) {
      out += fmt::format("{}pack s{}[{} < {} in panels of {}][{}] = {}  # {} = {}, clamped below {}{}\n", pad, pk.scratch,
                         k.varNames[pk.var], pk.count, pk.panel, window, expr(pk.value), k.varNames[pk.var],
                         range(pk.base, pk.count), pk.extent, pairNote(pk));
      return;
    }
    std::string padding = conds(pk.padding);
    out += fmt::format("{}pack s{}[{}][{} < {}{}] = {}{}  # {} = {}, 0 past {}{}{}\n", pad, pk.scratch, window,
                       k.varNames[pk.var], pk.count, pk.panel > 0 && pk.panel < pk.count ? fmt::format(" in panels of {}", pk.panel) : "",
                       padding.empty() ? "" : "if " + padding + " then ", expr(pk.value), k.varNames[pk.var],
                       range(pk.base, pk.count), pk.extent, padding.empty() ? "" : ", 0 where padded",
                       pairNote(pk));
  }

  static std::string pairNote(const Pack& pk) {
    if (!pk.bf16Pairs) return "";
    return pk.amx ? "; bf16 pairs along k, in AMX tiles of 16 pairs (zeros past the window)" : "; bf16 pairs along k";
  }

  void tile(const Tile& t, const std::string& pad, int depth) {
    std::string rhs = t.colScratch >= 0 ? fmt::format("s{}[{}][{}{}]", t.colScratch, k.varNames[t.k.var], offset(t.blockCol),
                                                      k.varNames[t.colVar])
                                        : expr(t.value.args[1]);
    if (!t.colPadding.empty()) rhs = "(if " + conds(t.colPadding) + " then " + rhs + ")";
    std::string lhs = t.rowScratch >= 0 ? fmt::format("s{}[{}{}][{}{}]", t.rowScratch, offset(t.blockRow), k.varNames[t.rowVar],
                                                      k.varNames[t.k.var], t.rowPackWhole ? " of all" : "")
                                        : expr(t.value.args[0]);
    out += fmt::format("{}tile {}x{}: {} = {} + 0..{} (< {}), {} = {} + 0..{} (< {})\n", pad, t.rows, t.cols,
                       k.varNames[t.rowVar], index(t.rowBase), t.rows - 1, t.rowExtent, k.varNames[t.colVar],
                       index(t.colBase), t.cols - 1, t.colExtent);
    std::string start;
    const Store* partial = t.epilogue.empty() ? nullptr : t.epilogue[0].getIf<Store>();
    const std::string sums = t.sumScratch >= 0 ? fmt::format("s{}[{}{}][{}{}]", t.sumScratch, offset(t.sumRow), k.varNames[t.rowVar],
                                                             offset(t.sumCol), k.varNames[t.colVar])
                                               : partial ? access(partial->buffer, partial->index) : "";
    if (t.k.block > 0 && !t.perWindow && partial) start = fmt::format("({} > 0 ? {} : 0) + ", index(t.k.base), sums);
    out += fmt::format("{}  acc{} = {}sum({}) {} * {}  # {}x{} accumulators in registers{}{}{}\n", pad, t.acc, start, kWindow(t.k),
                       lhs, rhs, t.rows, t.cols, t.kUnroll > 1 ? fmt::format(", k unrolled {}x", t.kUnroll) : "",
                       t.amx         ? "; AMX: 16x16 f32 tiles, 32 k steps per tdpbf16ps"
                       : t.bf16Pairs ? "; bf16 pairs: two k steps per vdpbf16ps"
                                     : "",
                       t.edgeRows > 0 ? fmt::format("; the edge's tile multiplies {} row{} only", t.edgeRows, t.edgeRows > 1 ? "s" : "") : "");
    if (t.k.block > 0 && t.perWindow) out += fmt::format("{}  # this window's sum alone; the epilogue after every window\n", pad);
    else if (t.k.block > 0 && t.sumScratch >= 0)
      out += fmt::format("{}  # after the last k block only; before it the partial sum is stored in s{} (f32) instead\n", pad, t.sumScratch);
    else if (t.k.block > 0) out += fmt::format("{}  # after the last k block only; before it the partial sum is stored instead\n", pad);
    block(t.epilogue, depth + 1);
  }

  // "base + " before a variable, nothing when the base is 0.
  std::string offset(const IndexExpr& base) const {
    return base.kind == IndexExpr::Kind::Const && base.constant == 0 ? "" : index(base) + " + ";
  }

  // The n values from `base`: "base + 0..n-1", or "0..n-1" from 0.
  std::string range(const IndexExpr& base, int64_t n) const { return fmt::format("{}0..{}", offset(base), n - 1); }

  std::string kWindow(const KWindow& w) const {
    if (w.block == 0) return fmt::format("{} < {}", k.varNames[w.var], w.extent);
    return fmt::format("{} in [{}, +{}) < {}", k.varNames[w.var], index(w.base), w.block, w.extent);
  }
};

const char* kindName(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Output: return "output";
    case BufferKind::Temp: return "temp";
    case BufferKind::Local: return "local";
  }
  return "?";
}

}  // namespace

std::string printLoopProgram(const LoopProgram& p, std::map<const Stmt*, int>* lines) {
  std::string out;
  for (const Buffer& b : p.buffers) {
    std::string shape;
    for (size_t i = 0; i < b.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(b.shape[i]);
    out += fmt::format("buffer {} : {}[{}] {}\n", b.name, dtypeName(b.dtype), shape, kindName(b.kind));
  }
  for (const Kernel& k : p.kernels) {
    std::map<const Stmt*, int> kernelLines;
    Printer pr{p, k, {}, lines ? &kernelLines : nullptr};
    pr.block(k.body, 1);
    std::string scratch;
    for (size_t i = 0; i < k.scratchSizes.size(); ++i) scratch += fmt::format(", scratch s{}[{}]", i, k.scratchSizes[i]);
    std::string gpu;
    for (const std::string& line : gpuMappingLines(p, k)) gpu += "  # gpu: " + line + "\n";
    out += fmt::format("\nkernel {} ({}{}{})\n{}{}{}", k.name, dtypeName(k.computeType),
                       k.parallelExtent > 0 ? fmt::format(", parallel over {}", k.parallelExtent) : "", scratch,
                       k.schedule.empty() ? "" : "  # schedule: " + k.schedule + "\n",
                       k.streaming.empty() ? "" : "  # stores: " + k.streaming + "\n", gpu);
    const int first = static_cast<int>(std::count(out.begin(), out.end(), '\n')) + 1;  // the body's first line, 1-based
    if (lines)
      for (const auto& [stmt, line] : kernelLines) (*lines)[stmt] = first + line;
    out += pr.out;
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
    forEachExprNode(e, [&](const Expr& n) {
      if (n.kind == ExprKind::Load) access(n.buffer, n.index);
      if (n.kind == ExprKind::VarValue && !n.index.empty()) index(n.index[0]);
      else if (n.kind == ExprKind::VarValue && (n.var < 0 || n.var >= static_cast<int>(bound.size()) || !bound[n.var]))
        fail("variable value used outside its loop");
      if (n.kind == ExprKind::AccRead && (n.acc < 0 || n.acc >= k.numAccs)) fail(fmt::format("unknown accumulator {}", n.acc));
    });
  }

  void acc(int a) {
    if (a < 0 || a >= k.numAccs) fail(fmt::format("unknown accumulator {}", a));
  }

  // Recurses itself rather than through the walker: which variables are bound changes with the
  // nesting, and a tile's k is bound for its value but not for its epilogue.
  void stmt(const Stmt& s) {
    switch (s.kind()) {
      case StmtKind::Loop: {
        const Loop& l = s.as<Loop>();
        if (l.var < 0 || l.var >= static_cast<int>(bound.size())) return fail("loop over an unknown variable");
        if (bound[l.var]) fail(fmt::format("variable {} bound twice", k.varNames[l.var]));
        if (l.extent <= 0) fail(fmt::format("loop {} has extent {}", k.varNames[l.var], l.extent));
        bound[l.var] = true;
        block(l.body);
        bound[l.var] = false;
        break;
      }
      case StmtKind::Store: {
        const Store& st = s.as<Store>();
        access(st.buffer, st.index);
        if (st.buffer >= 0 && st.buffer < static_cast<int>(p.buffers.size()) && p.buffers[st.buffer].kind == BufferKind::Input)
          fail(fmt::format("store to input buffer {}", p.buffers[st.buffer].name));
        expr(st.value);
        break;
      }
      case StmtKind::AccInit: acc(s.as<AccInit>().acc); break;
      case StmtKind::AccUpdate:
        acc(s.as<AccUpdate>().acc);
        expr(s.as<AccUpdate>().value);
        break;
      case StmtKind::Guard: {
        const Guard& g = s.as<Guard>();
        if (g.conds.empty()) fail("guard without conditions");
        for (const GuardCond& c : g.conds) index(c.index);
        block(g.body);
        break;
      }
      case StmtKind::Pack: pack(s.as<Pack>()); break;
      case StmtKind::Tile: tile(s.as<Tile>()); break;
      case StmtKind::AccSet:
        acc(s.as<AccSet>().acc);
        expr(s.as<AccSet>().value);
        break;
    }
  }

  void block(const Block& b) {
    for (const Stmt& s : b) stmt(s);
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

  // A pack binds k and its row or column variable; its bases are read outside them.
  void pack(const Pack& pk) {
    bool rows = pk.side == PackSide::Rows;
    index(pk.base);
    if (pk.k.block > 0) index(pk.k.base);
    if (!freeVar(pk.k.var) || !freeVar(pk.var)) return;
    if (pk.k.extent <= 0 || pk.count <= 0 || pk.k.block < 0 || pk.extent <= 0 || (rows && pk.panel <= 0))
      return fail("pack with an empty extent");
    if (rows && pk.count % pk.panel != 0) fail("row pack whose rows are not whole panels");
    if (!rows && pk.panel > 0 && pk.count % pk.panel != 0) fail("column pack whose columns are not whole panels");
    scratchOk(pk.scratch, (pk.bf16Pairs ? packedPairs(pk.k.length(), pk.amx) : pk.k.length()) * pk.count, "pack");
    if (pk.amx && (!pk.bf16Pairs || pk.count % 16 != 0 || (rows && pk.panel % 16 != 0))) fail("AMX pack not of bf16 pairs in whole tiles");
    if (rows && !pk.padding.empty()) fail("row pack with padding conditions");
    bound[pk.k.var] = true;
    bound[pk.var] = true;
    expr(pk.value);
    for (const GuardCond& c : pk.padding) index(c.index);
    bound[pk.k.var] = false;
    bound[pk.var] = false;
  }

  // A tile binds k, its row and its column variable; its epilogue runs outside k.
  void tile(const Tile& t) {
    index(t.colBase);
    index(t.rowBase);
    if (t.k.block > 0) index(t.k.base);
    if (t.k.block > 0 || t.rowScratch >= 0) index(t.blockRow);
    if (!freeVar(t.k.var) || !freeVar(t.colVar) || !freeVar(t.rowVar)) return;
    if (t.k.extent <= 0 || t.cols <= 0 || t.k.block < 0 || t.colExtent <= 0 || t.rows <= 0 || t.rowExtent <= 0)
      return fail("tile with an empty extent");
    int64_t window = t.bf16Pairs ? packedPairs(t.k.length(), t.amx) : t.k.length();
    if (t.bf16Pairs && (t.colScratch < 0 || t.rowScratch < 0)) fail("bf16-pair tile without both packs");
    if (t.amx && t.rowPackWhole && t.k.block % 32 != 0) fail("AMX tile over a whole-k row pack with k blocks that are not whole tiles");
    if (t.amx && (!t.bf16Pairs || t.perWindow || t.rows % 16 != 0 || t.cols % 16 != 0 || (t.rows / 16) * (t.cols / 16) > 4 ||
                  t.rows / 16 > 2 || t.cols / 16 > 2))
      fail("AMX tile that is not a block of at most 2 x 2 tiles of 16 x 16 from bf16-pair packs");
    if (t.colScratch >= 0 && !t.colPadding.empty()) fail("tile with a column pack and padding conditions of its own");
    if (t.edgeRows < 0 || t.edgeRows >= t.rows || (t.amx && t.edgeRows > 0)) fail("tile edge rows outside 0..rows-1, or with AMX");
    if (t.colScratch >= 0) {
      index(t.blockCol);
      scratchOk(t.colScratch, window * t.cols, "tile");
    }
    if (t.rowScratch >= 0)
      scratchOk(t.rowScratch, (t.rowPackWhole ? (t.bf16Pairs ? packedPairs(t.k.extent, t.amx) : t.k.extent) : window) * t.rows, "tile");
    if (t.sumScratch >= 0) {
      index(t.sumRow);
      index(t.sumCol);
      if (t.k.block <= 0 || t.perWindow || t.sumStride < t.cols) fail("tile partial-sum scratch without k blocks, or narrower than the tile");
      scratchOk(t.sumScratch, t.sumStride * t.rows, "tile");
    }
    if (t.value.kind != ExprKind::Binary || t.value.binaryOp != BinaryOp::Mul)
      fail("tile value is not a product of a row and a column operand");
    acc(t.acc);
    if (t.perWindow && t.k.block <= 0) fail("per-window tile without a k window");
    if (t.k.block > 0 && !t.perWindow && (t.epilogue.empty() || !t.epilogue[0].is<Store>()))
      fail("k-blocked tile whose first epilogue statement is not the store that keeps its partial sums");
    bound[t.k.var] = true;
    bound[t.colVar] = true;
    bound[t.rowVar] = true;
    expr(t.value);
    for (const GuardCond& c : t.colPadding) index(c.index);
    bound[t.k.var] = false;
    block(t.epilogue);
    bound[t.colVar] = false;
    bound[t.rowVar] = false;
  }
};

// The runtime calls a kernel once per chunk of [0, parallelExtent), and the code generator runs
// the top-level parallel loop over that chunk: so there is at most one parallel loop, at the top
// level, and parallelExtent is its extent (0 without one). A loop is told to LLVM as widened or
// as scalar, not both. Loops in a tile's epilogue are not checked here.
void checkLoopMarks(const LoopProgram& p, const Kernel& k, int64_t& found, int& count, std::vector<std::string>& problems) {
  auto name = [&](int v) { return v >= 0 && v < static_cast<int>(k.varNames.size()) ? k.varNames[v] : "?"; };
  walkWithEnclosing(k.body, [&](const Stmt& s, const std::vector<const Stmt*>& enclosing) {
    if (s.is<Tile>()) return WalkAction::SkipNested;
    const Loop* l = s.getIf<Loop>();
    if (l && l->vectorize && l->scalar)
      problems.push_back(fmt::format("kernel {}: loop {} is marked both vector and scalar", k.name, name(l->var)));
    if (l && l->interleave != 0 && (!l->vectorize || l->interleave < 1))
      problems.push_back(fmt::format("kernel {}: loop {} interleaves {} vectors but is not a vector loop", k.name, name(l->var), l->interleave));
    if (l && l->phases != 0 && (l->phases < 2 || l->phaseBlock < 1 || !l->vectorize || l->sumLanes != 0))
      problems.push_back(fmt::format("kernel {}: loop {} runs in {} phases of {}, but phases need a vector loop without sum lanes, at least 2 of them and a block", k.name, name(l->var), l->phases, l->phaseBlock));
    std::string noLanes;
    if (l && l->sumLanes != 0 && !canKeepSumLanes(*l, &noLanes))
      problems.push_back(fmt::format("kernel {}: loop {} keeps {} sum lanes, but {}", k.name, name(l->var), l->sumLanes, noLanes));
    if (l && (l->sumLanes < 0 || l->sumLanes > (l->pairs ? l->extent / 2 : l->extent)))
      problems.push_back(fmt::format("kernel {}: loop {} keeps {} sum lanes for {} terms", k.name, name(l->var), l->sumLanes, l->pairs ? l->extent / 2 : l->extent));
    else if (l && l->sumLanes != 0 && l->sumLanes != sumLaneGroup(k.computeType) && l->sumLanes != kInterleaveVectors * sumLaneGroup(k.computeType))
      problems.push_back(fmt::format("kernel {}: loop {} keeps {} sum lanes, not 1 or {} groups of {}", k.name, name(l->var), l->sumLanes,
                                     kInterleaveVectors, sumLaneGroup(k.computeType)));
    std::string unpairable;
    if (l && l->pairs && !canPairBf16Lanes(p, *l, &unpairable))
      problems.push_back(fmt::format("kernel {}: loop {} runs over bf16 pairs, but it has {}", k.name, name(l->var), unpairable));
    if (l && l->parallel) {
      if (!enclosing.empty()) problems.push_back(fmt::format("kernel {}: parallel loop {} below the kernel's top level", k.name, name(l->var)));
      else if (++count == 1) found = l->extent;
    }
    return WalkAction::Advance;
  });
}

}  // namespace

// Local buffers come after the program's tensors (the runtime's table holds only those), and
// each belongs to one kernel.
static void checkLocalBuffers(const LoopProgram& p, std::vector<std::string>& problems) {
  bool localSeen = false;
  for (const Buffer& b : p.buffers) {
    if (localSeen && b.kind != BufferKind::Local) problems.push_back(fmt::format("buffer {} comes after a local buffer", b.name));
    localSeen = localSeen || b.kind == BufferKind::Local;
  }
  std::vector<int> owner(p.buffers.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    forEachAccess(
        p.kernels[k].body,
        [&](const Expr& e) {
          if (e.buffer < 0 || e.buffer >= static_cast<int>(p.buffers.size()) || p.buffers[e.buffer].kind != BufferKind::Local) return;
          if (owner[e.buffer] >= 0 && owner[e.buffer] != static_cast<int>(k))
            problems.push_back(fmt::format("local buffer {} is used by two kernels", p.buffers[e.buffer].name));
          owner[e.buffer] = static_cast<int>(k);
        },
        [&](const Store& s) {
          if (s.buffer < 0 || s.buffer >= static_cast<int>(p.buffers.size()) || p.buffers[s.buffer].kind != BufferKind::Local) return;
          if (owner[s.buffer] >= 0 && owner[s.buffer] != static_cast<int>(k))
            problems.push_back(fmt::format("local buffer {} is used by two kernels", p.buffers[s.buffer].name));
          owner[s.buffer] = static_cast<int>(k);
        });
  }
}

// Every exp marked exp[<=0] still satisfies nonpositive-exp's rule (a later pass could have
// moved the max loop away from it).
static void checkNonPositiveExps(const LoopProgram& p, std::vector<std::string>& problems) {
  std::vector<const Expr*> allowed = nonPositiveExps(p);
  for (const Kernel& k : p.kernels)
    forEachStmt(k.body, [&](const Stmt& s) {
      if (const Expr* v = valueOf(s))
        forEachExprNode(*v, [&](const Expr& e) {
          if (e.nonPositiveArg && std::find(allowed.begin(), allowed.end(), &e) == allowed.end())
            problems.push_back(fmt::format("kernel {}: an exp is marked exp[<=0], but its argument is not x - max(x) "
                                           "over an earlier loop of the same block", k.name));
        });
    });
}

std::vector<std::string> verifyLoopProgram(const LoopProgram& p) {
  std::vector<std::string> problems;
  checkLocalBuffers(p, problems);
  checkNonPositiveExps(p, problems);
  for (const Kernel& k : p.kernels) {
    Verifier v{p, k, problems, std::vector<bool>(k.varNames.size(), false)};
    v.block(k.body);
    int64_t extent = 0;
    int count = 0;
    checkLoopMarks(p, k, extent, count, problems);
    for (std::string& problem : verifyGpuMapping(p, k)) problems.push_back(std::move(problem));
    if (count > 1) problems.push_back(fmt::format("kernel {}: {} parallel loops", k.name, count));
    if (k.parallelExtent != extent)
      problems.push_back(fmt::format("kernel {}: parallel over {}, but its parallel loop has extent {}", k.name, k.parallelExtent, extent));
  }
  return problems;
}

}  // namespace texc::loops
