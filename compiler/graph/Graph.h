// The dataflow IR.
//
// A graph is a texc::Program (frontend/Program.h) read as a dataflow graph: its tensors are the
// values (edges) and each Computation is a node that defines one tensor over an iteration domain
// (its index variables) from affine accesses of earlier tensors. Program order is a topological
// order. Every node keeps its source range and the statement it came from.
//
// After `split-ops`, elementwise nodes hold one operator or function each (`%out.1 = mul ...`),
// and a reduction is one node with its whole body (a reduction whose body is a product of
// accesses, like matmul and convolution, is a contraction). Fusion merges nodes back into
// multi-operator nodes; lowering emits one kernel per node.
#pragma once

#include <string>
#include <vector>

#include "frontend/Program.h"

namespace texc {

using Graph = Program;

// The node's operation for the printer: "add", "exp", "sum", "contract.sum", "fused", "const".
std::string nodeOpName(const Computation& node);

// One node a line, e.g.
//   %h = add x[i0, i1], b[i1] : f32[4096, 14336]    # gelu.tex:10
std::string printGraph(const Graph& g);

// The graph in Graphviz dot syntax (`--emit dot`).
std::string printGraphDot(const Graph& g);
// The same, with `nodeAttributes[tensor]` (when there and not empty) added to the attributes of
// that tensor's node (`style=filled, fillcolor="#aabbcc"`).
std::string printGraphDot(const Graph& g, const std::vector<std::string>& nodeAttributes);

// Structural problems (reads of later tensors, ranks, variables, reduction ids); empty if valid.
std::vector<std::string> verifyGraph(const Graph& g);

// Removes the tensors whose `keep` entry is false (never inputs or outputs) and renumbers every
// reference. Callers guarantee that no kept node reads a removed tensor.
void compactGraph(Graph& g, const std::vector<bool>& keep);

// Replaces every read of tensor `from` by a read of tensor `to` (same shape) in every node;
// returns whether there was any.
bool replaceUses(Graph& g, int from, int to);

// Where the compiled code evaluates a subexpression of a node: the loops around it, outermost
// first (the node's left-hand loops in order, then each enclosing reduction's loop, itself placed
// the same way). A subexpression runs once per iteration of the loops down to the innermost one
// that binds one of its free variables: lowering places reductions there, and LLVM hoists
// elementwise work there. Fusion's cost rule and the FLOP count both use this.
struct LoopScope {
  std::vector<int> vars;  // the variables the loop binds, sorted
  double trips = 1;       // its trip count (a reduction's: the product of its extents)
};
// The left-hand loops of node `c`.
std::vector<LoopScope> lhsScopes(const Computation& c);
// How many of `scopes` (outermost first) enclose where `v` runs.
size_t placementDepth(const std::vector<LoopScope>& scopes, const Value& v);
// The number of times code at `depth` runs: the product of those loops' trip counts.
double tripsTo(const std::vector<LoopScope>& scopes, size_t depth);
// The scopes inside reduction `r` placed among `scopes`: the enclosing ones down to its
// placement, then its own loop.
std::vector<LoopScope> scopesInside(const std::vector<LoopScope>& scopes, const Value& r, const Computation& c);

// A text that is equal for two subexpressions of node `c` computing the same value: free
// variables by id, variables bound inside by their extent and binding order (fusion gives each
// inlined copy of a reduction fresh variables), reduction ids and owners left out. Lowering
// gives equal reductions one accumulator; the FLOP count counts them once.
std::string canonicalKey(const Value& v, const Computation& c);

// A canonical text of an expression (variables by id, constants by their bits): equal keys mean
// the same computation. Used by cse and by the FLOP count.
std::string valueKey(const Value& v);

// A copy of producer `producer`'s expression for the read `site` (an access of its tensor inside
// `consumer`): its left-hand variables become the read's index expressions, its reduction
// variables are appended to the consumer's, its reduction ids shifted past the consumer's. Fusion
// inlines producers with it; online-softmax follows the chain from a weighted sum to its max.
Value inlineProducer(Computation& consumer, const Computation& producer, const Value& site);

// The parts of an online-softmax node (its body in the shape OnlineForm names, Program.h): the
// reduction over the keys (the weighted sum, or logsumexp's max), the scores s over the key
// variable (that reduction's only variable), and the weight w (null for logsumexp).
const Value& onlineKeyReduce(const Computation& c);
const Value& onlineScores(const Computation& c);
const Value* onlineWeight(const Computation& c);
// The left-hand variables of an online-softmax node that are its rows, in order: those its scores
// depend on (every one for logsumexp). The others are the weighted sum's columns.
std::vector<int> onlineRowVars(const Computation& c);
// Whether some node of `g` is an online-softmax node (the pass rewrote something).
bool hasOnlineNode(const Graph& g);

// Walks every Value of `v` mutably, children after parents.
template <typename F>
void forEachValueMut(Value& v, F&& f) {
  f(v);
  for (Value& a : v.args) forEachValueMut(a, f);
}

}  // namespace texc
