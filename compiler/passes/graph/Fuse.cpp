// fuse: producer-into-consumer fusion on the dataflow graph.
//
// A producer node is fused by substituting its expression for every read of it, with its index
// variables replaced by the reader's index expressions (so a consumer may read it at a mapped
// index: pool reads conv at 2*y + dy). A reduction in the producer moves with it and becomes an
// accumulator inside the consumer's loops: matmul + bias + gelu, conv + scale/bias + max pool
// become one kernel, and the fused tensors are never allocated.
//
// Cost rule. The recomputation factor of a producer P is the number of times its elements are
// computed after fusion divided by its number of elements: for each distinct read of P (reads
// with the same index expressions in one consumer count once; LLVM computes them once), the
// size of the iteration domain around the read, divided by |P|. P is fused when
//   - it is not an output (an output is written anyway), nor read by a node computed in a wider
//     type than its own (an f32 or f16/bf16 producer read by an f64 node: its f32 arithmetic would
//     be redone in f64, not the unfused program's bits), and every read is proven in bounds
//     (a read that may fall outside skips its term; the check needs P's own index), and
//   - P is elementwise and the factor is at most 2 (softmax's exp feeds both the sum and the
//     normalisation: computed twice, never stored), or
//   - P contains a reduction and the factor is at most 1 (each result computed once) and
//     --fuse=all (--fuse=elementwise keeps every reduction a kernel of its own), and
//   - with tiling on (no --no-tile; on the CUDA target map-gpu tiles), P is not a contraction (a sum of products of
//     two f32 elements) read only inside reductions of its readers, nor an elementwise node on
//     top of one (scale/bias) read only that way: the tile pass tiles a contraction with a pointwise
//     epilogue only, so conv + scale/bias + max pool becomes a tiled conv kernel with the
//     scale/bias epilogue and a plain pool kernel instead of one untiled nest.
//   - neither it nor a reader is an online-softmax node (OnlineSoftmax.cpp), whose one pass over
//     the keys lowering builds as it is.
// Producers are considered last first. Every decision is recorded with its reason (printed
// after the pass and by texc explain).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "compiler/passes/Pass.h"

namespace texc {

namespace {

bool hasReduce(const Value& v) {
  bool found = false;
  forEachValue(v, [&](const Value& x) { found |= x.kind == ValueKind::Reduce; });
  return found;
}

// Whether a sum of products is convolution-like: several reduction variables, or an operand
// indexed by more than a bare variable (y + r - 1). --conv=direct leaves those untiled.
bool convolutionLike(const Value& sum) {
  if (sum.reduceVars.size() > 1) return true;
  for (const Value& a : sum.args[0].args)
    for (const IndexExpr& ix : a.indices)
      if (ix.kind != IndexExpr::Kind::Var) return true;
  return false;
}

// A sum of products of two f32, f16 or bf16 tensor elements: what the tile pass turns into a
// tiled kernel (matmul, convolution), when it stays a kernel whose result is stored.
// `convTiled`: false under --conv=direct, where convolution-like ones stay untiled.
bool isTileableContraction(const Value& body, DType dtype, bool convTiled) {
  if (dtype == DType::F64) return false;
  bool found = false;
  forEachValue(body, [&](const Value& x) {
    if (x.kind != ValueKind::Reduce || x.reduceKind != ReduceKind::Sum) return;
    const Value& term = x.args[0];
    found |= term.kind == ValueKind::Binary && term.binaryOp == BinaryOp::Mul && term.args[0].kind == ValueKind::Access &&
             term.args[1].kind == ValueKind::Access && (convTiled || !convolutionLike(x));
  });
  return found;
}

// Whether `body` reads, directly or through elementwise nodes, a contraction that will be tiled
// (not an output: an output's kernel is tiled whatever its readers do). Fusing such an
// elementwise node into a reduction would pull the contraction in after it.
bool readsTileableContraction(const Graph& g, const Value& body, bool convTiled, int depth = 0) {
  if (depth > 8) return false;
  bool found = false;
  forEachValue(body, [&](const Value& x) {
    if (found || x.kind != ValueKind::Access || g.tensors[x.tensor].computation < 0 || g.tensors[x.tensor].isOutput) return;
    const Computation& q = g.computations[g.tensors[x.tensor].computation];
    if (isTileableContraction(q.body, g.tensors[x.tensor].dtype, convTiled)) found = true;
    else if (!hasReduce(q.body)) found = readsTileableContraction(g, q.body, convTiled, depth + 1);
  });
  return found;
}

std::string indexKey(const IndexExpr& ix) {
  std::string k = fmt::format("({} {} {}", static_cast<int>(ix.kind), ix.constant, ix.var);
  for (const IndexExpr& o : ix.ops) k += indexKey(o);
  return k + ")";
}

// A read of the producer: where it is and how large the iteration domain around it is.
struct Read {
  int consumer;  // computation index
  std::string key;
  double domain;
  bool inBounds;
  bool inReduction;  // under a reduction of the reader
  // In the terms of a sum or product of the reader at an index that uses its variables: an
  // inlined reduction would then be lowered inside the loop that adds those terms up.
  bool inOrderedTerms;
};

// Finds the reads of tensor `t` in computation `ci`, with the domain size around each. The
// domain follows where lowering puts things: a reduction runs in the innermost loop that binds
// one of the variables it depends on (docs/architecture.md), so the loops inside that one do
// not multiply its cost. The read's own variables decide where the inlined producer runs: a
// reduction is placed there by lowering, an elementwise expression hoisted there by LLVM's
// loop-invariant code motion (layernorm's rsqrt(var[i] + eps) runs once per row).
void findReads(const Graph& g, int ci, int t, std::vector<Read>& out) {
  const Computation& c = g.computations[ci];
  struct Walker {
    const Computation& c;
    int t, ci;
    std::vector<Read>& out;
    std::vector<const Value*> sums;  // the sums and products around the walk, outermost first
    void walk(const Value& v, const std::vector<LoopScope>& scopes) {
      if (v.kind == ValueKind::Access && v.tensor == t) {
        std::string key;
        for (const IndexExpr& ix : v.indices) key += indexKey(ix);
        bool ordered = false;
        for (const Value* r : sums)
          for (int var : r->reduceVars)
            for (const IndexExpr& ix : v.indices) ordered = ordered || usesVar(ix, var);
        out.push_back({ci, key, tripsTo(scopes, placementDepth(scopes, v)), v.check == AccessCheck::InBounds, v.ownerReduce >= 0, ordered});
      }
      if (v.kind != ValueKind::Reduce) {
        for (const Value& a : v.args) walk(a, scopes);
        return;
      }
      std::vector<LoopScope> inner = scopesInside(scopes, v, c);
      const bool ordered = v.reduceKind == ReduceKind::Sum || v.reduceKind == ReduceKind::Prod;
      if (ordered) sums.push_back(&v);
      for (const Value& a : v.args) walk(a, inner);
      if (ordered) sums.pop_back();
    }
  };
  Walker{c, t, ci, out, {}}.walk(c.body, lhsScopes(c));
}

void inlineReads(Graph& g, Computation& c, int t) {
  const Computation& p = g.computations[g.tensors[t].computation];
  // Collect first, then substitute: substitution grows c.vars, which the walk reads.
  std::vector<Value*> sites;
  forEachValueMut(c.body, [&](Value& v) {
    if (v.kind == ValueKind::Access && v.tensor == t) sites.push_back(&v);
  });
  const DType stored = g.tensors[t].dtype;
  for (Value* site : sites) {
    Value replacement = inlineProducer(c, p, *site);
    if (stored == DType::F16 || stored == DType::BF16) {
      // The unfused program rounds the producer's value to its type when it stores it: the
      // fused expression rounds it there too, so the results stay bit for bit the same.
      Value round;
      round.kind = ValueKind::Call;
      round.builtin = stored == DType::F16 ? Builtin::RoundF16 : Builtin::RoundBF16;
      round.args.push_back(std::move(replacement));
      replacement = std::move(round);
    }
    replacement.range = site->range;
    *site = std::move(replacement);
  }
}

std::string factorText(double f) { return f == static_cast<int64_t>(f) ? fmt::format("{}", static_cast<int64_t>(f)) : fmt::format("{:.2f}", f); }

}  // namespace

bool runFuse(CompileState& s) {
  // --fuse=none leaves this pass out of the pipeline (Pipeline.cpp).
  s.fusionDecisions.clear();
  Graph& g = *s.graph;
  bool changed = false;
  // Nodes already fused into all their readers: their own reads no longer count.
  std::vector<bool> dead(g.computations.size(), false);
  // Last producer first: by the time a producer is considered, the nodes after it that will be
  // fused are already inside their readers, so its reads are counted where they end up
  // (gelu's five reads of h all land in one node, at one index).
  for (size_t pi = g.computations.size(); pi-- > 0;) {
    const Computation& p = g.computations[pi];
    const TensorInfo& pt = g.tensors[p.tensor];
    bool reduction = hasReduce(p.body);
    std::vector<Read> reads;
    for (size_t ci = pi + 1; ci < g.computations.size(); ++ci)
      if (!dead[ci]) findReads(g, static_cast<int>(ci), p.tensor, reads);
    if (reads.empty()) continue;

    // Distinct reads per consumer, and the recomputation factor.
    std::map<std::pair<int, std::string>, double> distinct;
    bool allInBounds = true;
    bool readInReduction = true;  // every read sits inside a reduction of its reader
    for (const Read& r : reads) {
      double& d = distinct[{r.consumer, r.key}];
      d = std::max(d, r.domain);
      allInBounds &= r.inBounds;
      readInReduction &= r.inReduction;
    }
    // The tile pass tiles a contraction only as a kernel of its own or with a pointwise
    // epilogue: inside another reduction (conv under a max pool) it would stay untiled.
    // On the CUDA target map-gpu tiles the contractions, and implicit-gemm gives it the
    // convolutions.
    const bool cuda = s.options.target == Target::Cuda;
    const bool tiling = s.options.tile && s.options.schedule.tile != false && (cuda || !s.options.disabledPasses.count("tile"));
    const bool convTiled = s.options.schedule.conv.value_or(loops::ConvMode::Implicit) != loops::ConvMode::Direct &&
                           !(cuda && s.options.disabledPasses.count("implicit-gemm"));
    double total = 0;
    for (auto& [key, domain] : distinct) total += domain;
    double factor = total / static_cast<double>(pt.numElements());

    std::vector<std::string> consumers;
    for (auto& [key, domain] : distinct) {
      const std::string& name = g.tensors[g.computations[key.first].tensor].name;
      if (consumers.empty() || consumers.back() != name) consumers.push_back(name);
    }
    std::string into;
    for (const std::string& n : consumers) into += (into.empty() ? "" : ", ") + n;
    // A reduction read by a tileable contraction's epilogue (attention's row sum l[i] in
    // O[i, d] = sum(j: P[i, j] * V[j, d]) / l[i]) would be lowered beside the contraction's
    // loops, in the loop over i, where the tile pass does not take the nest apart. (The tile
    // pass needs two output loops, rows and columns: a dot product's reader is no such case.)
    const bool readByTiledEpilogue = reduction && tiling && std::any_of(reads.begin(), reads.end(), [&](const Read& r) {
      const Computation& reader = g.computations[r.consumer];
      const TensorInfo& rt = g.tensors[reader.tensor];
      return !r.inReduction && rt.shape.size() >= 2 && isTileableContraction(reader.body, rt.dtype, convTiled);
    });

    const bool readByOnline = std::any_of(reads.begin(), reads.end(), [&](const Read& r) { return g.computations[r.consumer].online != OnlineForm::None; });

    // A fused expression is computed in its reader's type. An f32 producer (f16/bf16 compute in
    // f32 and round on store) read by an f64 node would be computed in f64: not the bits of the
    // unfused program, which computes it in f32 and stores it (random program seed 81471).
    const DType producerCompute = computeDType(pt.dtype);
    const bool readerIsWider = std::any_of(reads.begin(), reads.end(), [&](const Read& r) {
      return computeDType(g.tensors[g.computations[r.consumer].tensor].dtype) != producerCompute;
    });

    FusionDecision d{pt.name, into, false, ""};
    if (p.online != OnlineForm::None) {
      d.reason = "not fused: it is an online-softmax node, whose one pass over the keys is a kernel of its own";
    } else if (readByOnline) {
      d.reason = "not fused: an online-softmax node reads it inside its pass over the keys, where it would be computed again for every row";
    } else if (pt.isOutput) {
      d.reason = "not fused: it is an output, written anyway; its readers load it";
    } else if (readerIsWider) {
      d.reason = fmt::format("not fused: it is computed in f32{} and read by a node computed in f64, where its f32 arithmetic "
                             "would not be repeated bit for bit",
                             pt.dtype == DType::F32 ? "" : fmt::format(" and stored as {}", dtypeName(pt.dtype)));
    } else if (!allInBounds) {
      d.reason = "not fused: a read may fall outside it and skip its term; fusing would lose that check";
    } else if (reduction && s.options.fuse == FuseMode::Elementwise) {
      d.reason = "not fused: it is a reduction and --fuse=elementwise fuses elementwise nodes only";
    } else if (reduction && factor > 1) {
      d.reason = fmt::format("not fused: its reduction would be recomputed {}x (its elements are read {} times each); a reduction is fused only when computed once",
                             factorText(factor), factorText(factor));
    } else if (reduction && std::any_of(reads.begin(), reads.end(), [](const Read& r) { return r.inOrderedTerms; })) {
      d.reason = "not fused: it is a reduction read in the terms of its reader's sum or product, where its loop would run inside "
                 "the loop that adds those terms up; that loop would then add them in order, where unfused it may keep lanes "
                 "(sum-lanes) and give other bits";
    } else if (!reduction && factor > 2) {
      d.reason = fmt::format("not fused: recomputation cost {}x > 2x (its elements are read {} times each)", factorText(factor),
                             factorText(factor));
    } else if (reduction && tiling && readInReduction && isTileableContraction(p.body, pt.dtype, convTiled)) {
      d.reason = "not fused: a contraction read inside its reader's reduction would not be tiled; it gets a tiled kernel of its own "
                 "(--no-tile fuses it)";
    } else if (readByTiledEpilogue) {
      d.reason = "not fused: a reduction read by the epilogue of a contraction that will be tiled would sit beside the contraction's "
                 "loops and keep it untiled; it gets a kernel of its own (--no-tile fuses it)";
    } else if (!reduction && tiling && s.options.fuse == FuseMode::All && readInReduction && readsTileableContraction(g, p.body, convTiled)) {
      d.reason = "not fused: it is the pointwise epilogue of a contraction that will be tiled; it stays with the contraction, "
                 "and its reader's reduction reads the result (--no-tile fuses it)";
    } else {
      d.fused = true;
      d.reason = factor <= 1 ? "fused: each element is computed once, in the reader's loop that binds its index"
                             : fmt::format("fused: recomputed {}x (<= 2x), never stored", factorText(factor));
      if (pt.dtype == DType::F16 || pt.dtype == DType::BF16)
        d.reason += fmt::format("; rounded to {} where it was stored (round_{}), so the result is the unfused program's bit for bit",
                                dtypeName(pt.dtype), dtypeName(pt.dtype));
    }
    s.fusionDecisions.push_back(d);
    if (!d.fused) continue;
    for (size_t ci = pi + 1; ci < g.computations.size(); ++ci)
      if (!dead[ci]) inlineReads(g, g.computations[ci], p.tensor);
    dead[pi] = true;
    changed = true;
  }
  return changed;
}

}  // namespace texc
