// online-softmax: a weighted sum over the softmax of scores, or a logsumexp, becomes one node that
// lowering computes in one pass over the keys (docs/online-softmax.md).
//
// The pattern, whatever statements it is written in:
//   m = max(j: s)      p = exp(s - m)      l = sum(j: p)      o = sum(j: p * w) / l
// or, for logsumexp, m + log(sum(j: exp(s - m))). The pass follows the reads of the weighted sum
// (or of the logsumexp) back through the nodes that define p, l and m, inlining them, and checks
// that the max, the exponentials and the sums run over the same index and the same scores. The
// node it leaves behind holds the naive expression in one fixed shape (OnlineForm, Program.h),
// so every later reader (the printers, the cost model) still sees what it computes; the nodes of
// m, p and l are then unread, and dce removes them. Tensors as large as the scores (the N x N
// ones this rewrite exists to avoid storing: S = Q K^T, a mask computed from indices) are
// inlined into the scores; smaller ones (Q, K, V) are read as they are.
//
// Every candidate gets a decision line: rewritten, with what it folds in, or not, and why.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "compiler/passes/Pass.h"

namespace texc {

namespace {

bool isCall(const Value& v, Builtin b) { return v.kind == ValueKind::Call && v.builtin == b; }
bool isBinary(const Value& v, BinaryOp op) { return v.kind == ValueKind::Binary && v.binaryOp == op; }
bool isReduce(const Value& v, ReduceKind k) { return v.kind == ValueKind::Reduce && v.reduceKind == k && v.reduceVars.size() == 1; }

Value makeBinary(BinaryOp op, Value a, Value b) {
  Value v;
  v.kind = ValueKind::Binary;
  v.binaryOp = op;
  v.range = a.range;
  v.args.push_back(std::move(a));
  v.args.push_back(std::move(b));
  return v;
}

// A Reduce over `var` with `body`, to compare by canonicalKey (ids play no part in the key).
Value makeReduce(ReduceKind kind, int var, Value body) {
  Value v;
  v.kind = ValueKind::Reduce;
  v.reduceKind = kind;
  v.reduceVars = {var};
  v.args.push_back(std::move(body));
  return v;
}

// One match attempt on a copy of a node. Producers are inlined into the copy as the pattern
// needs to look inside them; `allowOutputs` lets it inline outputs too, which is how a refusal
// learns that the pattern is there and only an output is in the way.
struct Matcher {
  Matcher(const Graph& graph, const Computation& node, bool outputs = false) : g(graph), c(node), allowOutputs(outputs) {}

  const Graph& g;
  Computation c;
  bool allowOutputs = false;
  std::string reason;              // set when the pattern is there but cannot be rewritten
  std::vector<std::string> folded;  // the tensors inlined, in order
  std::string blockingOutput;      // the first output the pattern had to look inside

  // Replaces a read of a computed tensor by its producer's expression, repeatedly; false when
  // `v` still reads a tensor (an input, an output when those are not allowed, a guarded read).
  bool resolve(Value& v) {
    while (v.kind == ValueKind::Access) {
      const TensorInfo& t = g.tensors[v.tensor];
      if (t.computation < 0 || v.check != AccessCheck::InBounds) return false;
      if (t.isOutput) {
        if (blockingOutput.empty()) blockingOutput = t.name;
        if (!allowOutputs) return false;
      }
      if (std::find(folded.begin(), folded.end(), t.name) == folded.end()) folded.push_back(t.name);
      Value inlined = inlineProducer(c, g.computations[t.computation], v);
      inlined.range = v.range;
      v = std::move(inlined);
    }
    return true;
  }

  // `e` is exp(s - max(j': s')): returns the max (resolved in place) and leaves s in e.args[0].args[0].
  Value* softmaxFactor(Value& e) {
    if (!resolve(e) || !isCall(e, Builtin::Exp) || !resolve(e.args[0]) || !isBinary(e.args[0], BinaryOp::Sub)) return nullptr;
    Value& m = e.args[0].args[1];
    if (!resolve(m) || !isReduce(m, ReduceKind::Max)) return nullptr;
    return &m;
  }

  std::string varName(int v) const { return c.vars[v].name; }

  // Whether `v`, resolved on a copy of the node, has `shape` (which may resolve further on the
  // copy): resolving the real node would inline what it reads even where the shape fails.
  bool looksLike(const Value& v, const std::function<bool(Matcher&, Value&)>& shape) {
    Matcher peek(g, c, allowOutputs);
    Value probe = v;
    bool ok = peek.resolve(probe) && shape(peek, probe);
    if (blockingOutput.empty()) blockingOutput = peek.blockingOutput;
    return ok;
  }

  // exp(s - max(...)), or that divided by something (the weights normalised first).
  bool looksLikeSoftmax(const Value& v) {
    return looksLike(v, [](Matcher& peek, Value& x) {
      Value& e = isBinary(x, BinaryOp::Div) ? x.args[0] : x;
      return peek.softmaxFactor(e) != nullptr;
    });
  }

  // Whether max `m` is the max over `j` of the scores `s` the exponential subtracts it from; sets
  // the reason when it is not.
  bool sameScores(const Value& m, const Value& s, int j) {
    if (canonicalKey(m, c) == canonicalKey(makeReduce(ReduceKind::Max, j, s), c)) return true;
    int mj = m.reduceVars[0];
    if (c.vars[mj].extent != c.vars[j].extent || c.vars[mj].name != c.vars[j].name)
      reason = fmt::format("the max is over {} ({} values), the sum over {} ({} values)", varName(mj), c.vars[mj].extent, varName(j),
                           c.vars[j].extent);
    else
      reason = "the exponent subtracts the max of other scores than its own";
    return false;
  }

  // l is sum(j'': exp(s'' - m'')) with the same terms as sum(j: exp(s - m)).
  bool isRowSum(Value& l, const Value& expFactor, int j) {
    if (!resolve(l) || !isReduce(l, ReduceKind::Sum)) return false;
    if (!softmaxFactor(l.args[0])) return false;
    return canonicalKey(l, c) == canonicalKey(makeReduce(ReduceKind::Sum, j, expFactor), c);
  }

  // The weighted average: sum(j: p * w) / l, or sum(j: p / l * w) (the weights normalised first).
  // On success the body is in the WeightedAverage shape.
  bool weighted() {
    Value& body = c.body;
    if (!resolve(body)) return false;
    Value* sum = nullptr;
    Value* divisor = nullptr;
    if (isBinary(body, BinaryOp::Div)) {
      sum = &body.args[0];
      divisor = &body.args[1];
    } else {
      sum = &body;
    }
    if (!resolve(*sum) || !isReduce(*sum, ReduceKind::Sum)) return false;
    int j = sum->reduceVars[0];
    Value& term = sum->args[0];
    if (!resolve(term) || !isBinary(term, BinaryOp::Mul)) return false;
    // Which factor is the softmax's: p, or p / l when the weights were normalised first.
    for (int side = 0; side < 2; ++side) {
      Value& f = term.args[side];
      Value& w = term.args[1 - side];
      // Look on a copy first: resolving the other factor would inline it (V's projection).
      if (!looksLikeSoftmax(f)) continue;
      if (!resolve(f)) continue;
      Value* ownDivisor = nullptr;
      Value* exp = &f;
      if (isBinary(f, BinaryOp::Div) && !divisor) {
        ownDivisor = &f.args[1];
        exp = &f.args[0];
      }
      Value* m = softmaxFactor(*exp);
      if (!m) continue;
      const Value& s = exp->args[0].args[0];
      if (!sameScores(*m, s, j)) return false;
      Value* l = divisor ? divisor : ownDivisor;
      if (!l) {
        // Not normalised: exp(s - m) with the final max m is what the one pass leaves.
        sum->args[0] = makeBinary(BinaryOp::Mul, std::move(*exp), std::move(w));
        c.online = OnlineForm::WeightedSum;
        return true;
      }
      if (!isRowSum(*l, *exp, j)) {
        if (reason.empty()) reason = "the weighted sum is divided by something other than the sum of the same exponentials";
        return false;
      }
      // The WeightedAverage shape: sum(j: exp(...) * w) / l.
      Value expFactor = std::move(*exp);
      Value weight = std::move(w);
      Value rowSum = std::move(*l);
      Value newSum = makeReduce(ReduceKind::Sum, j, makeBinary(BinaryOp::Mul, std::move(expFactor), std::move(weight)));
      newSum.reduceId = sum->reduceId;
      newSum.range = sum->range;
      c.body = makeBinary(BinaryOp::Div, std::move(newSum), std::move(rowSum));
      c.online = OnlineForm::WeightedAverage;
      return true;
    }
    return false;
  }

  // logsumexp: max(j: s) + log(sum(j': exp(s' - max(...)))), either order of the addition.
  bool logSumExp() {
    Value& body = c.body;
    if (!resolve(body) || !isBinary(body, BinaryOp::Add)) return false;
    for (int side = 0; side < 2; ++side) {
      Value& m = body.args[side];
      Value& lg = body.args[1 - side];
      if (!looksLike(m, [](Matcher&, Value& x) { return isReduce(x, ReduceKind::Max); })) continue;
      if (!looksLike(lg, [](Matcher&, Value& x) { return isCall(x, Builtin::Log); })) continue;
      if (!resolve(m) || !resolve(lg) || !resolve(lg.args[0]) || !isReduce(lg.args[0], ReduceKind::Sum)) continue;
      Value& l = lg.args[0];
      int j = l.reduceVars[0];
      Value* m2 = softmaxFactor(l.args[0]);
      if (!m2) continue;
      const Value& s = l.args[0].args[0].args[0];
      if (!sameScores(*m2, s, j)) return false;
      if (!sameScores(m, s, j)) {
        reason = "the max added back is not the max the exponent subtracts";
        return false;
      }
      Value max = std::move(m);
      Value log = std::move(lg);
      c.body = makeBinary(BinaryOp::Add, std::move(max), std::move(log));
      c.online = OnlineForm::LogSumExp;
      return true;
    }
    return false;
  }
};

// Inlines, anywhere in the node, the reads of computed tensors (not outputs) that have at least as
// many elements as the scores over all rows: those are what the one pass must not store.
void inlineScoreSized(const Graph& g, Computation& c, std::vector<std::string>& folded) {
  std::vector<int> free = freeVars(onlineScores(c));
  double scoreElements = 1;
  for (int v : free) scoreElements *= static_cast<double>(c.vars[v].extent);
  for (bool again = true; again;) {
    again = false;
    std::vector<Value*> sites;
    forEachValueMut(c.body, [&](Value& v) {
      if (v.kind != ValueKind::Access) return;
      const TensorInfo& t = g.tensors[v.tensor];
      if (t.computation < 0 || t.isOutput || v.check != AccessCheck::InBounds) return;
      if (static_cast<double>(t.numElements()) < scoreElements) return;
      sites.push_back(&v);
    });
    for (Value* site : sites) {
      const TensorInfo& t = g.tensors[site->tensor];
      if (std::find(folded.begin(), folded.end(), t.name) == folded.end()) folded.push_back(t.name);
      Value inlined = inlineProducer(c, g.computations[t.computation], *site);
      inlined.range = site->range;
      *site = std::move(inlined);
      again = true;
    }
  }
}

bool anyGuarded(const Value& v) {
  bool found = false;
  forEachValue(v, [&](const Value& x) { found |= x.kind == ValueKind::Access && x.check == AccessCheck::Guarded; });
  return found;
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Whether the one pass pays on the CPU. It costs a second exponential per score (the rescaling)
// and, untiled, a running max that chains every key, so its loop stays scalar. That pays where the
// scores are a contraction (recomputed or stored N x N otherwise), or where each weight has
// columns of its own (attention's d, which tile-online-softmax blocks). Otherwise max, then exp,
// both vectorised, win: the second pass finds the row in cache (logsumexp of 4096 x 4096 on Zen 4,
// 1 thread: 130 ms in one pass, 7.1 ms in two).
bool worthOnePassOnCpu(const Computation& c) {
  bool contraction = false;
  forEachValue(onlineScores(c), [&](const Value& v) { contraction |= v.kind == ValueKind::Reduce; });
  if (contraction) return true;
  const std::vector<int> scoreVars = freeVars(onlineScores(c));
  for (int v = 0; v < c.numLhsVars; ++v)
    if (!std::binary_search(scoreVars.begin(), scoreVars.end(), v)) return true;  // a column
  return false;
}

// The one pass, as the decision line states it (m: running max, l: running sum, o: weighted sum).
const char* recurrence(OnlineForm f) {
  switch (f) {
    case OnlineForm::WeightedAverage:
      return "per key: m' = max(m, s), a = exp(m - m'), e = exp(s - m'), l = l*a + e, o = o*a + e*w, m = m'; then o / l";
    case OnlineForm::WeightedSum: return "per key: m' = max(m, s), a = exp(m - m'), e = exp(s - m'), o = o*a + e*w, m = m'";
    case OnlineForm::LogSumExp: return "per key: m' = max(m, s), l = l*exp(m - m') + exp(s - m'), m = m'; then m + log(l)";
    case OnlineForm::None: break;
  }
  return "";
}

}  // namespace

bool runOnlineSoftmax(CompileState& s) {
  Graph& g = *s.graph;
  s.onlineSoftmaxDecisions.clear();
  bool changed = false;
  struct Decision {
    std::string node;
    std::string reason;  // empty: rewritten
    std::string line;
  };
  std::vector<Decision> decisions;  // last node first
  std::set<std::string> foldedAnywhere;
  // Last node first, so that a pattern is taken whole (attention's O = O.1 / l before its
  // unnormalised part O.1); a node folded into a rewritten one is left for dce.
  for (size_t ci = g.computations.size(); ci-- > 0;) {
    const Computation& node = g.computations[ci];
    const TensorInfo& t = g.tensors[node.tensor];
    if (node.online != OnlineForm::None || (foldedAnywhere.count(t.name) && !t.isOutput)) continue;
    // The weighted sum first; a node that is no weighted sum may be a logsumexp.
    auto attempt = [&](bool allowOutputs) {
      auto m = std::make_unique<Matcher>(g, node, allowOutputs);
      if (m->weighted() || !m->reason.empty()) return m;
      std::string blocking = m->blockingOutput;
      m = std::make_unique<Matcher>(g, node, allowOutputs);
      m->logSumExp();
      if (m->blockingOutput.empty()) m->blockingOutput = blocking;
      return m;
    };
    std::unique_ptr<Matcher> strict = attempt(false);
    std::string reason = strict->reason;
    if (strict->c.online == OnlineForm::None && reason.empty() && !strict->blockingOutput.empty()) {
      // Would it match if the outputs it met could be inlined? Then they are what is in the way.
      std::unique_ptr<Matcher> lenient = attempt(true);
      if (lenient->c.online != OnlineForm::None)
        reason = fmt::format("{} is also an output: it is stored anyway, and the one pass would not produce it", lenient->blockingOutput);
    }
    Computation c = std::move(strict->c);
    std::vector<std::string> folded = std::move(strict->folded);
    if (c.online != OnlineForm::None) {
      inlineScoreSized(g, c, folded);
      if (anyGuarded(c.body)) reason = "a read may fall outside its tensor and skip its term";
      else if (c.online != OnlineForm::LogSumExp && computeDType(t.dtype) != t.dtype)
        reason = fmt::format("it is stored as {}, and the running weighted sum is kept in the output at full precision", dtypeName(t.dtype));
      // The program rounds an f16/bf16 tensor where it stores it; the one pass computes the
      // scores and the weights against a running max, so it could not round them there. A max
      // needs no rounding of its own: it is one of the values it ranges over.
      if (reason.empty() && s.options.target == Target::Cpu && !worthOnePassOnCpu(c))
        reason = "on the CPU, cheap scores (no contraction) with one result per row are faster in two passes: the one pass "
                 "takes two exponentials per score and a running max through every key, which does not vectorise, "
                 "while the second pass reads the row from cache";
      for (const std::string& name : folded) {
        if (!reason.empty()) break;
        for (const Computation& f : g.computations) {
          const TensorInfo& ft = g.tensors[f.tensor];
          if (ft.name != name || computeDType(ft.dtype) == ft.dtype || isReduce(f.body, ReduceKind::Max)) continue;
          reason = fmt::format("{} is stored as {}, and the one pass, against a running max, could not round it where the program stores it",
                               name, dtypeName(ft.dtype));
          break;
        }
      }
    }
    if (c.online == OnlineForm::None || !reason.empty()) {
      if (!reason.empty()) decisions.push_back({t.name, reason, fmt::format("{}: not rewritten: {}", t.name, reason)});
      continue;
    }
    const IndexVar& key = c.vars[onlineKeyReduce(c).reduceVars[0]];
    decisions.push_back({t.name, "", fmt::format("{}: rewritten: one pass over {} ({} keys) keeps a running max and sum; {}; folds in {}",
                                                 t.name, key.name, key.extent, recurrence(c.online), joined(folded))});
    foldedAnywhere.insert(folded.begin(), folded.end());
    g.computations[ci] = std::move(c);
    changed = true;
  }
  // A part of a pattern rewritten whole (attention's unnormalised P V) needs no line of its own,
  // nor does a part of a statement (O.1 of O) refused for the reason the statement was.
  std::map<std::string, std::string> refusedFor;  // node -> reason
  for (const Decision& d : decisions)
    if (!d.reason.empty()) refusedFor[d.node] = d.reason;
  for (const Decision& d : decisions) {
    if (!d.reason.empty()) {
      if (foldedAnywhere.count(d.node)) continue;
      size_t dot = d.node.rfind('.');
      auto whole = dot == std::string::npos ? refusedFor.end() : refusedFor.find(d.node.substr(0, dot));
      if (whole != refusedFor.end() && whole->second == d.reason) continue;
    }
    s.onlineSoftmaxDecisions.push_back(d.line);
  }
  std::reverse(s.onlineSoftmaxDecisions.begin(), s.onlineSoftmaxDecisions.end());  // program order
  return changed;
}

}  // namespace texc
