#include "compiler/graph/Graph.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include <cstring>

#include "frontend/Sema.h"

namespace texc {

namespace {

bool isLeaf(const Value& v) {
  return v.kind == ValueKind::Const || v.kind == ValueKind::IndexValue || v.kind == ValueKind::Access;
}

const char* binaryName(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "add";
    case BinaryOp::Sub: return "sub";
    case BinaryOp::Mul: return "mul";
    case BinaryOp::Div: return "div";
    case BinaryOp::Mod: return "mod";
    case BinaryOp::Lt: return "lt";
    case BinaryOp::Le: return "le";
    case BinaryOp::Gt: return "gt";
    case BinaryOp::Ge: return "ge";
    case BinaryOp::Eq: return "eq";
    case BinaryOp::Ne: return "ne";
    case BinaryOp::And: return "and";
    case BinaryOp::Or: return "or";
  }
  return "?";
}

// The reciprocal of a leaf, `1 / s[i]` (reciprocal-of-sums): printed as an operand.
bool isReciprocalOfLeaf(const Value& v) {
  return v.kind == ValueKind::Binary && v.binaryOp == BinaryOp::Div && v.args[0].kind == ValueKind::Const && v.args[0].constant == 1 &&
         isLeaf(v.args[1]);
}

// True when every operand of the root is a leaf, a leaf's reciprocal or a boolean condition of
// select.
bool isSingleOp(const Value& v) {
  for (const Value& a : v.args)
    if (!isLeaf(a) && !a.isBool && !isReciprocalOfLeaf(a)) return false;
  return true;
}

bool isContraction(const Value& r) {
  const Value& body = r.args[0];
  if (body.kind == ValueKind::Access) return false;
  if (!(body.kind == ValueKind::Binary && body.binaryOp == BinaryOp::Mul)) return false;
  return body.args[0].kind == ValueKind::Access && body.args[1].kind == ValueKind::Access;
}

void keyIndex(std::string& k, const IndexExpr& ix) {
  k += fmt::format("({}:{}:{}", static_cast<int>(ix.kind), ix.constant, ix.var);
  for (const IndexExpr& o : ix.ops) keyIndex(k, o);
  k += ')';
}

// (see valueKey) A canonical text of the expression: variables by id, constants by their bits.
void keyValue(std::string& k, const Value& v) {
  uint64_t bits;
  std::memcpy(&bits, &v.constant, sizeof bits);
  k += fmt::format("({}:{}:{}:{}:{}:{}:{}:{}:{}:{}:{}", static_cast<int>(v.kind), bits, v.var, v.tensor, static_cast<int>(v.check),
                   v.ownerReduce, static_cast<int>(v.unaryOp), static_cast<int>(v.binaryOp), static_cast<int>(v.builtin),
                   static_cast<int>(v.reduceKind), v.reduceId);
  for (int rv : v.reduceVars) k += fmt::format(",r{}", rv);
  for (const IndexExpr& ix : v.indices) keyIndex(k, ix);
  for (const Value& a : v.args) keyValue(k, a);
  k += ')';
}

}  // namespace

namespace {

void canonicalIndex(const IndexExpr& ix, const std::map<int, int>& bound, std::string& k) {
  if (ix.kind == IndexExpr::Kind::Var) {
    auto it = bound.find(ix.var);
    k += it != bound.end() ? fmt::format("b{}", it->second) : fmt::format("v{}", ix.var);
    return;
  }
  k += fmt::format("({}:{}", static_cast<int>(ix.kind), ix.constant);
  for (const IndexExpr& o : ix.ops) canonicalIndex(o, bound, k);
  k += ')';
}

void canonicalValue(const Value& v, const Computation& c, std::map<int, int>& bound, std::string& k) {
  if (v.kind == ValueKind::Reduce)
    for (int rv : v.reduceVars) {
      int id = static_cast<int>(bound.size());
      bound[rv] = id;
      k += fmt::format("[b{}<{}]", id, c.vars[rv].extent);
    }
  uint64_t bits;
  std::memcpy(&bits, &v.constant, sizeof bits);
  k += fmt::format("({}:{}:{}:{}:{}:{}:{}:{}", static_cast<int>(v.kind), bits, v.tensor, static_cast<int>(v.check),
                   static_cast<int>(v.unaryOp), static_cast<int>(v.binaryOp), static_cast<int>(v.builtin), static_cast<int>(v.reduceKind));
  if (v.kind == ValueKind::IndexValue && v.indices.empty()) canonicalIndex(IndexExpr::makeVar(v.var), bound, k);
  for (const IndexExpr& ix : v.indices) canonicalIndex(ix, bound, k);
  for (const Value& a : v.args) canonicalValue(a, c, bound, k);
  k += ')';
}

}  // namespace

std::string canonicalKey(const Value& v, const Computation& c) {
  std::map<int, int> bound;
  std::string k;
  canonicalValue(v, c, bound, k);
  return k;
}

std::vector<LoopScope> lhsScopes(const Computation& c) {
  std::vector<LoopScope> out;
  for (int v = 0; v < c.numLhsVars; ++v) out.push_back({{v}, static_cast<double>(c.vars[v].extent)});
  return out;
}

size_t placementDepth(const std::vector<LoopScope>& scopes, const Value& v) {
  std::vector<int> free = freeVars(v);
  for (size_t s = scopes.size(); s-- > 0;)
    for (int x : scopes[s].vars)
      if (std::binary_search(free.begin(), free.end(), x)) return s + 1;
  return 0;
}

double tripsTo(const std::vector<LoopScope>& scopes, size_t depth) {
  double d = 1;
  for (size_t s = 0; s < depth; ++s) d *= scopes[s].trips;
  return d;
}

std::vector<LoopScope> scopesInside(const std::vector<LoopScope>& scopes, const Value& r, const Computation& c) {
  std::vector<LoopScope> inner(scopes.begin(), scopes.begin() + static_cast<std::ptrdiff_t>(placementDepth(scopes, r)));
  LoopScope own{r.reduceVars, 1};
  std::sort(own.vars.begin(), own.vars.end());
  for (int rv : r.reduceVars) own.trips *= static_cast<double>(c.vars[rv].extent);
  inner.push_back(std::move(own));
  return inner;
}

std::string valueKey(const Value& v) {
  std::string k;
  keyValue(k, v);
  return k;
}

std::string nodeOpName(const Computation& node) {
  const Value& v = node.body;
  if (node.online != OnlineForm::None) return "online-softmax";
  switch (v.kind) {
    case ValueKind::Const:
    case ValueKind::IndexValue: return "const";
    case ValueKind::Access: return "copy";
    case ValueKind::Reduce: return isContraction(v) ? fmt::format("contract.{}", spelling(v.reduceKind)) : spelling(v.reduceKind);
    default: break;
  }
  if (!isSingleOp(v)) return "fused";
  if (v.kind == ValueKind::Unary) return v.unaryOp == UnaryOp::Neg ? "neg" : "not";
  if (v.kind == ValueKind::Binary) return binaryName(v.binaryOp);
  return builtinName(v.builtin);
}

std::string printGraph(const Graph& g) {
  std::string out;
  auto typeText = [](const TensorInfo& t) {
    std::string s = dtypeName(t.dtype);
    if (t.shape.empty()) return s;
    s += "[";
    for (size_t i = 0; i < t.shape.size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape[i]);
    return s + "]";
  };
  for (int id : g.inputs) out += fmt::format("input {} : {}\n", g.tensors[id].name, typeText(g.tensors[id]));
  for (const Computation& c : g.computations) {
    const TensorInfo& t = g.tensors[c.tensor];
    std::string op = nodeOpName(c);
    std::string rhs;
    const Value& v = c.body;
    if (c.online != OnlineForm::None) {
      // the naive expression it computes, which lowering turns into one pass
      rhs = printValue(g, c, v, true);
    } else if (v.kind == ValueKind::Reduce) {
      // %m[i] = max j < 4096: x[i, j]
      for (size_t i = 0; i < v.reduceVars.size(); ++i) {
        const IndexVar& rv = c.vars[v.reduceVars[i]];
        rhs += fmt::format("{}{} < {}", i ? ", " : "", rv.name, rv.extent);
      }
      rhs += ": " + printValue(g, c, v.args[0], true);
    } else if (op == "fused" || op == "const" || op == "copy") {
      rhs = printValue(g, c, v, true);
    } else {
      for (size_t i = 0; i < v.args.size(); ++i) rhs += (i ? ", " : "") + printValue(g, c, v.args[i], true);
    }
    std::string lhs;
    for (int i = 0; i < c.numLhsVars; ++i) lhs += (i ? ", " : "") + c.vars[i].name;
    out += fmt::format("{}%{}{} = {} {} : {}{}\n", t.isOutput ? "output " : "", t.name, lhs.empty() ? "" : "[" + lhs + "]", op,
                       rhs, typeText(t), c.range.valid() ? fmt::format("    # line {}", c.range.begin.line) : "");
  }
  return out;
}

namespace {

bool isReduceOver1(const Value& v, ReduceKind k) { return v.kind == ValueKind::Reduce && v.reduceKind == k && v.reduceVars.size() == 1; }
bool isOp(const Value& v, BinaryOp op) { return v.kind == ValueKind::Binary && v.binaryOp == op && v.args.size() == 2; }
bool isFn(const Value& v, Builtin f) { return v.kind == ValueKind::Call && v.builtin == f && v.args.size() == 1; }

// exp(s - max(j': s')): a softmax's weight.
bool isSoftmaxWeight(const Value& v) {
  return isFn(v, Builtin::Exp) && isOp(v.args[0], BinaryOp::Sub) && isReduceOver1(v.args[0].args[1], ReduceKind::Max);
}
// sum(j: exp(s - max(j': s')) * w)
bool isWeightedSum(const Value& v) {
  return isReduceOver1(v, ReduceKind::Sum) && isOp(v.args[0], BinaryOp::Mul) && isSoftmaxWeight(v.args[0].args[0]);
}
// sum(j: exp(s - max(j': s')))
bool isRowSum(const Value& v) { return isReduceOver1(v, ReduceKind::Sum) && isSoftmaxWeight(v.args[0]); }

// The shapes OnlineForm (Program.h) names.
bool hasOnlineShape(const Computation& c) {
  const Value& b = c.body;
  switch (c.online) {
    case OnlineForm::WeightedAverage: return isOp(b, BinaryOp::Div) && isWeightedSum(b.args[0]) && isRowSum(b.args[1]);
    case OnlineForm::WeightedSum: return isWeightedSum(b);
    case OnlineForm::LogSumExp:
      return isOp(b, BinaryOp::Add) && isReduceOver1(b.args[0], ReduceKind::Max) && isFn(b.args[1], Builtin::Log) && isRowSum(b.args[1].args[0]);
    case OnlineForm::None: break;
  }
  return true;
}

}  // namespace

std::vector<std::string> verifyGraph(const Graph& g) {
  std::vector<std::string> problems;
  for (size_t ci = 0; ci < g.computations.size(); ++ci) {
    const Computation& c = g.computations[ci];
    auto fail = [&](const std::string& what) {
      problems.push_back(fmt::format("node %{}: {}", c.tensor >= 0 && c.tensor < static_cast<int>(g.tensors.size()) ? g.tensors[c.tensor].name : "?", what));
    };
    if (c.tensor < 0 || c.tensor >= static_cast<int>(g.tensors.size())) {
      fail("defines an unknown tensor");
      continue;
    }
    if (g.tensors[c.tensor].computation != static_cast<int>(ci)) fail("tensor does not point back at its node");
    if (c.online != OnlineForm::None && !hasOnlineShape(c)) fail("an online-softmax node whose body is not in its form's shape");
    if (c.numLhsVars != static_cast<int>(g.tensors[c.tensor].shape.size())) fail("domain rank differs from the tensor's rank");
    for (int i = 0; i < c.numLhsVars && i < static_cast<int>(c.vars.size()); ++i)
      if (c.vars[i].extent != g.tensors[c.tensor].shape[i]) fail(fmt::format("extent of {} differs from the tensor's shape", c.vars[i].name));
    forEachValue(c.body, [&](const Value& v) {
      if (v.kind == ValueKind::Access) {
        if (v.tensor < 0 || v.tensor >= static_cast<int>(g.tensors.size())) return fail("reads an unknown tensor");
        const TensorInfo& t = g.tensors[v.tensor];
        if (!t.isInput && t.computation >= static_cast<int>(ci)) fail(fmt::format("reads %{} before it is defined", t.name));
        if (v.indices.size() != t.shape.size()) fail(fmt::format("reads {} with the wrong number of indices", t.name));
        if (v.check == AccessCheck::Guarded && v.ownerReduce < 0) fail("guarded access outside a reduction");
      }
      if (v.kind == ValueKind::IndexValue && v.indices.empty() && (v.var < 0 || v.var >= static_cast<int>(c.vars.size()))) fail("unknown index variable");
      if (v.kind == ValueKind::Reduce && (v.reduceId < 0 || v.reduceId >= c.numReduces)) fail("reduction id out of range");
    });
  }
  for (int id : g.outputs)
    if (id < 0 || id >= static_cast<int>(g.tensors.size()) || !g.tensors[id].isOutput) problems.push_back("bad output list");
  return problems;
}

void compactGraph(Graph& g, const std::vector<bool>& keep) {
  std::vector<int> remap(g.tensors.size(), -1);
  Graph out;
  out.lets = std::move(g.lets);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    if (!keep[i] && !g.tensors[i].isInput && !g.tensors[i].isOutput) continue;
    remap[i] = static_cast<int>(out.tensors.size());
    out.tensors.push_back(std::move(g.tensors[i]));
  }
  for (int id : g.inputs) out.inputs.push_back(remap[id]);
  for (int id : g.outputs) out.outputs.push_back(remap[id]);
  for (Computation& c : g.computations) {
    if (remap[c.tensor] < 0) continue;
    c.tensor = remap[c.tensor];
    forEachValueMut(c.body, [&](Value& v) {
      if (v.kind == ValueKind::Access) v.tensor = remap[v.tensor];
    });
    out.tensors[c.tensor].computation = static_cast<int>(out.computations.size());
    out.computations.push_back(std::move(c));
  }
  g = std::move(out);
}

bool replaceUses(Graph& g, int from, int to) {
  bool any = false;
  for (Computation& c : g.computations)
    forEachValueMut(c.body, [&](Value& v) {
      if (v.kind == ValueKind::Access && v.tensor == from) {
        v.tensor = to;
        any = true;
      }
    });
  return any;
}

namespace {

class Inliner {
 public:
  Inliner(Computation& c, const Computation& p) : c_(c), p_(p) {}

  Value inlineAt(const Value& site) {
    // Producer variables: left-hand ones become the read's index expressions; reduction
    // variables are appended to the consumer; reduction ids are shifted past the consumer's.
    map_.assign(p_.vars.size(), IndexExpr{});
    for (int v = 0; v < p_.numLhsVars; ++v) map_[v] = site.indices[v];
    for (size_t v = p_.numLhsVars; v < p_.vars.size(); ++v) {
      IndexVar iv = p_.vars[v];
      iv.reduction += c_.numReduces;
      map_[v] = IndexExpr::makeVar(static_cast<int>(c_.vars.size()));
      c_.vars.push_back(std::move(iv));
    }
    reduceShift_ = c_.numReduces;
    c_.numReduces += p_.numReduces;
    siteOwner_ = site.ownerReduce;
    Value body = p_.body;
    rewrite(body);
    return body;
  }

 private:
  IndexExpr substitute(const IndexExpr& ix) const {
    if (ix.kind == IndexExpr::Kind::Var) {
      IndexExpr r = map_[ix.var];
      r.range = ix.range;
      return r;
    }
    IndexExpr r = ix;
    for (IndexExpr& o : r.ops) o = substitute(o);
    return r;
  }

  void rewrite(Value& v) {
    switch (v.kind) {
      case ValueKind::IndexValue: {
        IndexExpr e = v.indices.empty() ? substitute(IndexExpr::makeVar(v.var)) : substitute(v.indices[0]);
        v.indices.clear();
        if (e.kind == IndexExpr::Kind::Var) v.var = e.var;
        else v.indices.push_back(std::move(e));
        break;
      }
      case ValueKind::Access: {
        for (IndexExpr& ix : v.indices) ix = substitute(ix);
        v.ownerReduce = v.ownerReduce >= 0 ? v.ownerReduce + reduceShift_ : siteOwner_;
        v.indexRanges.clear();
        for (const IndexExpr& ix : v.indices) v.indexRanges.push_back(rangeOfIndex(ix, c_.vars));
        break;
      }
      case ValueKind::Reduce:
        v.reduceId += reduceShift_;
        for (int& rv : v.reduceVars) rv = map_[rv].var;
        break;
      default: break;
    }
    for (Value& a : v.args) rewrite(a);
  }

  Computation& c_;
  const Computation& p_;
  std::vector<IndexExpr> map_;
  int reduceShift_ = 0;
  int siteOwner_ = -1;
};

}  // namespace

const Value& onlineKeyReduce(const Computation& c) {
  return c.online == OnlineForm::WeightedSum ? c.body : c.body.args[0];
}
const Value& onlineScores(const Computation& c) {
  const Value& r = onlineKeyReduce(c);
  // weighted: sum(j: exp(s - m) * w); logsumexp: max(j: s)
  return c.online == OnlineForm::LogSumExp ? r.args[0] : r.args[0].args[0].args[0].args[0];
}
const Value* onlineWeight(const Computation& c) {
  return c.online == OnlineForm::LogSumExp ? nullptr : &onlineKeyReduce(c).args[0].args[1];
}

std::vector<int> onlineRowVars(const Computation& c) {
  const bool weighted = onlineWeight(c) != nullptr;
  const std::vector<int> scoreVars = freeVars(onlineScores(c));
  std::vector<int> rows;
  for (int v = 0; v < c.numLhsVars; ++v)
    if (!weighted || std::binary_search(scoreVars.begin(), scoreVars.end(), v)) rows.push_back(v);
  return rows;
}

bool hasOnlineNode(const Graph& g) {
  return std::any_of(g.computations.begin(), g.computations.end(), [](const Computation& c) { return c.online != OnlineForm::None; });
}

Value inlineProducer(Computation& consumer, const Computation& producer, const Value& site) {
  return Inliner(consumer, producer).inlineAt(site);
}

}  // namespace texc
