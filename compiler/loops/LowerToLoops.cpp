#include "compiler/loops/LowerToLoops.h"

#include "compiler/graph/Graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include "compiler/loops/Build.h"

namespace texc::loops {

namespace {

using namespace build;


// `v` as an integer index expression, when it is one: index variables used as values (below 2^24,
// where their float values compare as the integers do), integer constants, and sums, differences,
// negations and products by a constant of those.
std::optional<IndexExpr> asIndex(const Value& v, const Computation& c) {
  constexpr double kExact = 1 << 24;
  switch (v.kind) {
    case ValueKind::IndexValue: {
      IndexExpr e = v.indices.empty() ? IndexExpr::makeVar(v.var) : v.indices[0];
      Interval r = rangeOfIndex(e, c.vars);
      if (r.lo <= -kExact || r.hi >= kExact) return std::nullopt;
      return e;
    }
    case ValueKind::Const:
      if (v.constant != std::floor(v.constant) || std::abs(v.constant) >= kExact) return std::nullopt;
      return IndexExpr::makeConst(static_cast<int64_t>(v.constant));
    case ValueKind::Unary: {
      if (v.unaryOp != UnaryOp::Neg) return std::nullopt;
      std::optional<IndexExpr> a = asIndex(v.args[0], c);
      if (!a) return std::nullopt;
      IndexExpr e;
      e.kind = IndexExpr::Kind::Mul;
      e.constant = -1;
      e.ops = {*a};
      return e;
    }
    case ValueKind::Binary: {
      if (v.binaryOp != BinaryOp::Add && v.binaryOp != BinaryOp::Sub && v.binaryOp != BinaryOp::Mul) return std::nullopt;
      std::optional<IndexExpr> a = asIndex(v.args[0], c), b = asIndex(v.args[1], c);
      if (!a || !b) return std::nullopt;
      IndexExpr e;
      if (v.binaryOp == BinaryOp::Mul) {
        if (a->kind != IndexExpr::Kind::Const && b->kind != IndexExpr::Kind::Const) return std::nullopt;
        const bool aConst = a->kind == IndexExpr::Kind::Const;
        e.kind = IndexExpr::Kind::Mul;
        e.constant = aConst ? a->constant : b->constant;
        e.ops = {aConst ? *b : *a};
        return e;
      }
      e.kind = v.binaryOp == BinaryOp::Add ? IndexExpr::Kind::Add : IndexExpr::Kind::Sub;
      e.ops = {*a, *b};
      return e;
    }
    default: return std::nullopt;
  }
}

// `hi - lo` (minus one when strict) as a guard condition 0 <= x < extent, the extent one past its
// largest value: `lo <= hi` holds exactly when the condition does.
GuardCond nonNegative(IndexExpr hi, IndexExpr lo, bool strict, const Computation& c) {
  IndexExpr d;
  d.kind = IndexExpr::Kind::Sub;
  d.ops = {std::move(hi), std::move(lo)};
  if (strict) {
    IndexExpr s;
    s.kind = IndexExpr::Kind::Sub;
    s.ops = {std::move(d), IndexExpr::makeConst(1)};
    d = std::move(s);
  }
  Interval r = rangeOfIndex(d, c.vars);
  return {d, std::max<int64_t>(r.hi + 1, 1)};
}

// The conditions of a mask `select(COND, x, -inf)` whose COND is affine comparisons of index
// values joined by `&&` (j <= i; i - j < 128 && j <= i): where one fails the score is -inf, the
// key adds nothing to the running max, sum or weighted sum, and the one pass skips it. Empty when
// `scores` is no such mask.
std::vector<GuardCond> maskConditions(const Value& scores, const Computation& c) {
  if (scores.kind != ValueKind::Call || scores.builtin != Builtin::Select) return {};
  const Value& other = scores.args[2];
  if (other.kind != ValueKind::Const || other.constant != -HUGE_VAL) return {};
  std::vector<GuardCond> conds;
  std::function<bool(const Value&)> add = [&](const Value& cond) {
    if (cond.kind != ValueKind::Binary) return false;
    if (cond.binaryOp == BinaryOp::And) return add(cond.args[0]) && add(cond.args[1]);
    std::optional<IndexExpr> a = asIndex(cond.args[0], c), b = asIndex(cond.args[1], c);
    if (!a || !b) return false;
    switch (cond.binaryOp) {
      case BinaryOp::Le: conds.push_back(nonNegative(*b, *a, false, c)); return true;
      case BinaryOp::Lt: conds.push_back(nonNegative(*b, *a, true, c)); return true;
      case BinaryOp::Ge: conds.push_back(nonNegative(*a, *b, false, c)); return true;
      case BinaryOp::Gt: conds.push_back(nonNegative(*a, *b, true, c)); return true;
      default: return false;
    }
  };
  if (!add(scores.args[0])) return {};
  return conds;
}

// Statements are built in scopes: the kernel's top level, one per left-hand loop, and one per
// reduction term. A reduction is placed in the innermost scope that binds one of the variables
// it depends on, so it runs once per iteration of that loop and not once per element of the
// loops inside it: softmax's row max and row sum, fused into the normalisation, run once per
// row. Equal reductions placed in one scope share one accumulator.
class Lowering {
 public:
  Lowering(const Program& p, const Computation& c, Kernel& k) : p_(p), c_(c), k_(k) {}

  void run() {
    for (const IndexVar& v : c_.vars) k_.varNames.push_back(v.name);
    const TensorInfo& t = p_.tensors[c_.tensor];
    k_.computeType = computeDType(t.dtype);
    k_.outputBuffer = c_.tensor;
    if (c_.online != OnlineForm::None) return runOnline();

    // Scope 0 is the kernel's top level; scope v + 1 the body of the loop over left-hand v.
    scopes_.push_back(Scope{});
    for (int v = 0; v < c_.numLhsVars; ++v) scopes_.push_back(Scope{{v}, {}, {}});

    // The store at the innermost point of the left-hand nest.
    Store store;
    store.buffer = c_.tensor;
    for (int v = 0; v < c_.numLhsVars; ++v) store.index.push_back(IndexExpr::makeVar(v));
    store.value = lower(c_.body);
    scopes_.back().body.push_back(std::move(store));

    // Wrap in loops, innermost first: each loop goes after the reductions hoisted into its
    // parent. Extents of 1 still get a loop: trip counts are known constants, so LLVM folds
    // them away.
    for (int v = c_.numLhsVars - 1; v >= 0; --v) {
      Loop loop;
      loop.var = v;
      loop.extent = c_.vars[v].extent;
      loop.vectorize = v == c_.numLhsVars - 1;
      loop.parallel = v == 0;
      loop.body = std::move(scopes_.back().body);
      scopes_.pop_back();
      scopes_.back().body.push_back(std::move(loop));
    }
    if (c_.numLhsVars > 0) k_.parallelExtent = c_.vars[0].extent;
    k_.body = std::move(scopes_.back().body);
  }

 private:
  // An online-softmax node (passes/graph/OnlineSoftmax.cpp, docs/online-softmax.md): loops over
  // its rows, and in them one pass over the keys j with a running max m and sum l, and for a
  // weighted average the running weighted sum, kept in the output row o:
  //   s' = s;  m' = max(m, s');  a = m == -inf ? 0 : exp(m - m');  e = s' == -inf ? 0 : exp(s' - m')
  //   l = l * a + e;  o[c] = o[c] * a + e * w[c];  m = m'
  // then o[c] = o[c] / l (o[c] as it is when not normalised), or m + log(l) for logsumexp. The -inf tests keep a row whose first keys
  // are masked out from becoming NaN (exp(-inf - -inf)); a row masked out entirely ends as 0 / 0
  // (logsumexp: l = 0), NaN, as the naive form gives.
  void runOnline() {
    const Value* weight = onlineWeight(c_);
    const bool weighted = weight != nullptr;
    const Value& scores = onlineScores(c_);
    const int key = onlineKeyReduce(c_).reduceVars[0];
    const std::vector<int> rows = onlineRowVars(c_);
    std::vector<int> cols;
    for (int v = 0; v < c_.numLhsVars; ++v)
      if (!std::binary_search(rows.begin(), rows.end(), v)) cols.push_back(v);

    scopes_.push_back(Scope{});
    for (int v : rows) scopes_.push_back(Scope{{v}, {}, {}});
    const int m = k_.numAccs++, l = k_.numAccs++, sv = k_.numAccs++, mNew = k_.numAccs++, a = k_.numAccs++, e = k_.numAccs++;
    // Every accumulator starts in the row: the temporaries (s', m', a, e) too, so that the row
    // loop visibly carries none of them and stays parallel (LoopNest.h, parallelProblem).
    Block& rowBody = scopes_.back().body;
    rowBody.push_back(AccInit{m, ReduceKind::Max});
    for (int acc : {l, sv, mNew, a, e}) rowBody.push_back(AccInit{acc, ReduceKind::Sum});
    if (weighted) appendColumns(cols, [&] { return outputStore(constant(0)); });

    // The pass over the keys. A key that a mask of affine comparisons (causal: j <= i) sets to
    // -inf changes nothing, so the pass skips it: under a guard, the score is the unmasked value.
    std::vector<GuardCond> mask = maskConditions(scores, c_);
    scopes_.push_back(Scope{{key}, {}, {}});
    Expr score = lower(mask.empty() ? scores : scores.args[1]);
    Block& keyBody = scopes_.back().body;
    keyBody.push_back(AccSet{sv, std::move(score)});
    keyBody.push_back(AccSet{mNew, call(Builtin::Max, {accRead(m), accRead(sv)})});
    keyBody.push_back(AccSet{a, guardedExp(m, mNew)});
    keyBody.push_back(AccSet{e, guardedExp(sv, mNew)});
    keyBody.push_back(AccSet{l, binary(BinaryOp::Add, binary(BinaryOp::Mul, accRead(l), accRead(a)), accRead(e))});
    if (weighted) {
      appendColumns(cols, [&] {
        Expr rescaled = binary(BinaryOp::Mul, outputLoad(), accRead(a));
        return outputStore(binary(BinaryOp::Add, std::move(rescaled), binary(BinaryOp::Mul, accRead(e), lower(*weight))));
      });
    }
    scopes_.back().body.push_back(AccSet{m, accRead(mNew)});
    Loop keys;
    keys.var = key;
    keys.extent = c_.vars[key].extent;
    keys.body = std::move(scopes_.back().body);
    if (!mask.empty()) {
      Guard unmasked;
      unmasked.conds = std::move(mask);
      unmasked.body = std::move(keys.body);
      keys.body.clear();
      keys.body.push_back(std::move(unmasked));
    }
    scopes_.pop_back();
    scopes_.back().body.push_back(std::move(keys));

    if (c_.online == OnlineForm::WeightedAverage) {
      // O * (1 / l): the row sum's reciprocal once per row, as reciprocal-of-sums writes the
      // division of the unfused softmax (a graph pass, which this node's division never meets).
      appendColumns(cols, [&] { return outputStore(binary(BinaryOp::Mul, outputLoad(), binary(BinaryOp::Div, constant(1), accRead(l)))); });
    } else if (!weighted) {
      Expr lse = binary(BinaryOp::Add, accRead(m), call(Builtin::Log, {accRead(l)}));
      Expr empty = binary(BinaryOp::Eq, accRead(l), constant(0));
      scopes_.back().body.push_back(outputStore(call(Builtin::Select, {std::move(empty), constant(std::nan("")), std::move(lse)})));
    }

    // The row loops around it, the outermost parallel.
    for (size_t r = rows.size(); r-- > 0;) {
      Loop loop;
      loop.var = rows[r];
      loop.extent = c_.vars[rows[r]].extent;
      loop.parallel = r == 0;
      loop.body = std::move(scopes_.back().body);
      scopes_.pop_back();
      scopes_.back().body.push_back(std::move(loop));
    }
    if (!rows.empty()) k_.parallelExtent = c_.vars[rows[0]].extent;
    k_.body = std::move(scopes_.back().body);
    scopes_.pop_back();
  }

  // Appends to the current scope the loops over `cols` (the innermost vectorised) around the
  // statement `inner` builds inside them.
  void appendColumns(const std::vector<int>& cols, const std::function<Stmt()>& inner) {
    for (int v : cols) scopes_.push_back(Scope{{v}, {}, {}});
    // Built before the scope is named: lowering a reduction in it pushes scopes, which may move them.
    Stmt stmt = inner();
    scopes_.back().body.push_back(std::move(stmt));
    for (size_t i = cols.size(); i-- > 0;) {
      Loop loop;
      loop.var = cols[i];
      loop.extent = c_.vars[cols[i]].extent;
      loop.vectorize = i + 1 == cols.size();
      loop.body = std::move(scopes_.back().body);
      scopes_.pop_back();
      scopes_.back().body.push_back(std::move(loop));
    }
  }

  std::vector<IndexExpr> outputIndex() const {
    std::vector<IndexExpr> index;
    for (int v = 0; v < c_.numLhsVars; ++v) index.push_back(IndexExpr::makeVar(v));
    return index;
  }
  Stmt outputStore(Expr value) const { return Store{c_.tensor, outputIndex(), std::move(value)}; }
  Expr outputLoad() const {
    Expr e;
    e.kind = ExprKind::Load;
    e.buffer = c_.tensor;
    e.index = outputIndex();
    return e;
  }
  // x == -inf ? 0 : exp(x - m): the weight of x under the running max m.
  static Expr guardedExp(int x, int m) {
    Expr masked = binary(BinaryOp::Eq, accRead(x), constant(-HUGE_VAL));
    return call(Builtin::Select, {std::move(masked), constant(0), call(Builtin::Exp, {binary(BinaryOp::Sub, accRead(x), accRead(m))})});
  }

  struct Scope {
    std::vector<int> vars;                 // the variables it binds
    Block body;                            // its statements so far
    std::map<std::string, int> reductions;  // reductions placed here: key -> accumulator
  };

  Expr lower(const Value& v) {
    Expr e;
    e.isBool = v.isBool;
    switch (v.kind) {
      case ValueKind::Const:
        e.kind = ExprKind::Const;
        e.constant = v.constant;
        return e;
      case ValueKind::IndexValue:
        e.kind = ExprKind::VarValue;
        e.var = v.var;
        e.index = v.indices;  // fused programs may use an index expression as a value
        return e;
      case ValueKind::Access:
        e.kind = ExprKind::Load;
        e.buffer = v.tensor;
        e.index = v.indices;
        return e;
      case ValueKind::Unary:
        e.kind = ExprKind::Unary;
        e.unaryOp = v.unaryOp;
        break;
      case ValueKind::Binary:
        e.kind = ExprKind::Binary;
        e.binaryOp = v.binaryOp;
        break;
      case ValueKind::Call:
        e.kind = ExprKind::Call;
        e.builtin = v.builtin;
        break;
      case ValueKind::Reduce: return lowerReduce(v);
    }
    for (const Value& a : v.args) e.args.push_back(lower(a));
    return e;
  }

  // The innermost open scope binding one of `vars` (0, the top level, when none does).
  size_t placementOf(const std::vector<int>& vars) const {
    for (size_t s = scopes_.size(); s-- > 1;)
      for (int v : scopes_[s].vars)
        if (std::binary_search(vars.begin(), vars.end(), v)) return s;
    return 0;
  }

  Expr lowerReduce(const Value& v) {
    size_t home = placementOf(freeVars(v));
    std::string key = canonicalKey(v, c_);
    Expr read;
    read.kind = ExprKind::AccRead;
    if (auto it = scopes_[home].reductions.find(key); it != scopes_[home].reductions.end()) {
      read.acc = it->second;
      return read;
    }
    int acc = k_.numAccs++;
    read.acc = acc;

    // The term, built in a scope of its own (reductions nested in it that depend only on outer
    // variables are placed further out).
    scopes_.push_back(Scope{v.reduceVars, {}, {}});
    std::sort(scopes_.back().vars.begin(), scopes_.back().vars.end());
    AccUpdate update;
    update.acc = acc;
    update.reduce = v.reduceKind;
    update.value = lower(v.args[0]);
    Block term = std::move(scopes_.back().body);
    scopes_.pop_back();
    term.push_back(std::move(update));

    std::vector<GuardCond> conds;
    collectGuards(v.args[0], v.reduceId, conds);
    if (!conds.empty()) {
      Guard guard;
      guard.conds = std::move(conds);
      guard.body = std::move(term);
      term.clear();
      term.push_back(std::move(guard));
    }
    for (size_t i = v.reduceVars.size(); i-- > 0;) {
      Loop loop;
      loop.var = v.reduceVars[i];
      loop.extent = c_.vars[loop.var].extent;
      loop.body = std::move(term);
      term.clear();
      term.push_back(std::move(loop));
    }
    AccInit init;
    init.acc = acc;
    init.reduce = v.reduceKind;
    Block& dest = scopes_[home].body;
    dest.push_back(std::move(init));
    for (Stmt& s : term) dest.push_back(std::move(s));
    scopes_[home].reductions.emplace(std::move(key), acc);
    return read;
  }

  // The guarded accesses of reduction `reduceId` (not those of nested reductions): one condition
  // per index that the bounds analysis could not prove inside its dimension.
  void collectGuards(const Value& v, int reduceId, std::vector<GuardCond>& conds) {
    if (v.kind == ValueKind::Access && v.check == AccessCheck::Guarded && v.ownerReduce == reduceId) {
      const TensorInfo& t = p_.tensors[v.tensor];
      for (size_t d = 0; d < v.indices.size(); ++d) {
        const Interval& r = v.indexRanges[d];
        if (r.lo >= 0 && r.hi < t.shape[d]) continue;
        conds.push_back({v.indices[d], t.shape[d]});
      }
    }
    for (const Value& a : v.args) collectGuards(a, reduceId, conds);
  }

  const Program& p_;
  const Computation& c_;
  Kernel& k_;
  std::vector<Scope> scopes_;
};

}  // namespace

LoopProgram lowerToLoops(const Program& program) {
  LoopProgram lp;
  for (const TensorInfo& t : program.tensors) {
    Buffer b;
    b.name = t.name;
    b.dtype = t.dtype;
    b.shape = t.shape;
    b.kind = t.isInput ? BufferKind::Input : t.isOutput ? BufferKind::Output : BufferKind::Temp;
    lp.buffers.push_back(std::move(b));
  }
  for (const Computation& c : program.computations) {
    Kernel k;
    k.name = fmt::format("k{}_{}", lp.kernels.size(), program.tensors[c.tensor].name);
    Lowering(program, c, k).run();
    lp.kernels.push_back(std::move(k));
  }
  return lp;
}

}  // namespace texc::loops
