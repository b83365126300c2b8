// split-ops: the unfused dataflow graph. Every operator or function outside a reduction becomes
// its own node writing a full intermediate tensor (op by op, as numpy evaluates); a reduction is
// one node with its whole body. Booleans are not values, so a comparison stays inside the select
// that uses it. New nodes keep the statement's index variables and are read at exactly those
// variables; fuse decides which to merge back.
#include <fmt/format.h>

#include "compiler/passes/Pass.h"

namespace texc {

namespace {

class Splitter {
 public:
  explicit Splitter(Graph& in) : in_(in) {}

  Graph run() {
    out_.lets = in_.lets;
    remap_.assign(in_.tensors.size(), -1);
    for (size_t id = 0; id < in_.tensors.size(); ++id) {
      const TensorInfo& t = in_.tensors[id];
      if (t.isInput) {
        remap_[id] = add(t);
        out_.inputs.push_back(remap_[id]);
        continue;
      }
      Computation c = in_.computations[t.computation];
      current_ = &c;
      counter_ = 0;
      name_ = t.name;
      // An online-softmax node stays whole: lowering builds its one pass from that shape.
      if (c.online == OnlineForm::None) {
        Value body = split(c.body, true);
        c.body = std::move(body);
      } else {
        remapAccesses(c.body);
      }
      int nid = add(t);
      remap_[id] = nid;
      c.tensor = nid;
      place(std::move(c));
      if (t.isOutput) out_.outputs.push_back(nid);
    }
    return std::move(out_);
  }

  bool changed() const { return changed_; }

 private:
  int add(const TensorInfo& t) {
    out_.tensors.push_back(t);
    out_.tensors.back().computation = -1;
    return static_cast<int>(out_.tensors.size()) - 1;
  }

  void place(Computation c) {
    out_.tensors[c.tensor].computation = static_cast<int>(out_.computations.size());
    out_.computations.push_back(std::move(c));
  }

  static bool isLeaf(const Value& v) {
    return v.kind == ValueKind::Const || v.kind == ValueKind::IndexValue || v.kind == ValueKind::Access;
  }

  void remapAccesses(Value& v) {
    forEachValueMut(v, [&](Value& x) {
      if (x.kind == ValueKind::Access) x.tensor = remap_[x.tensor];
    });
  }

  Value split(const Value& v, bool root) {
    Value r = v;
    if (isLeaf(v) || v.isBool || v.kind == ValueKind::Reduce) {
      remapAccesses(r);
      if (root || isLeaf(v) || v.isBool) return r;
      return materialize(std::move(r));
    }
    r.args.clear();
    for (const Value& a : v.args) r.args.push_back(split(a, false));
    if (root) return r;
    return materialize(std::move(r));
  }

  // A new node computing `body` over the statement's domain; returns a read of it.
  Value materialize(Value body) {
    changed_ = true;
    const TensorInfo& t = in_.tensors[current_->tensor];
    TensorInfo info;
    info.name = fmt::format("{}.{}", name_, ++counter_);
    // Intermediates hold the statement's compute type (f32 for f16/bf16 statements): splitting
    // must not add rounding steps that the statement does not have.
    info.dtype = computeDType(t.dtype);
    info.shape = t.shape;
    info.defRange = body.range;
    int id = add(info);
    Computation node = *current_;
    node.body = std::move(body);
    node.range = node.body.range;
    node.tensor = id;
    SourceRange range = node.range;
    place(std::move(node));

    Value read;
    read.kind = ValueKind::Access;
    read.range = range;
    read.tensor = id;
    for (int v = 0; v < current_->numLhsVars; ++v) {
      read.indices.push_back(IndexExpr::makeVar(v));
      read.indexRanges.push_back({0, current_->vars[v].extent - 1});
    }
    return read;
  }

  Graph& in_;
  Graph out_;
  std::vector<int> remap_;
  const Computation* current_ = nullptr;
  std::string name_;
  int counter_ = 0;
  bool changed_ = false;
};

}  // namespace

bool runSplitOps(CompileState& s) {
  Splitter sp(*s.graph);
  Graph g = sp.run();
  *s.graph = std::move(g);
  return sp.changed();
}

}  // namespace texc
