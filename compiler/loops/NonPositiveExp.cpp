#include "compiler/loops/NonPositiveExp.h"

#include <map>
#include <optional>
#include <set>

#include "compiler/loops/Equal.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

// Whether `s`, or a statement nested in it, sets accumulator `acc`.
bool setsAcc(const Stmt& s, int acc) {
  auto sets = [&](const Stmt& c) {
    if (c.is<AccInit>()) return c.as<AccInit>().acc == acc;
    if (c.is<AccUpdate>()) return c.as<AccUpdate>().acc == acc;
    if (c.is<AccSet>()) return c.as<AccSet>().acc == acc;
    return false;
  };
  if (sets(s)) return true;
  if (s.is<Loop>()) return anyStmt(s.as<Loop>().body, sets);
  if (s.is<Guard>()) return anyStmt(s.as<Guard>().body, sets);
  if (s.is<Tile>()) return anyStmt(s.as<Tile>().epilogue, sets);
  return false;
}

// The buffers `e` loads.
std::set<int> loadedBuffers(const Expr& e) {
  std::set<int> out;
  forEachLoad(e, [&](const Expr& l) { out.insert(l.buffer); });
  return out;
}

// Whether `s`, or a statement nested in it, stores to one of `buffers`.
bool storesTo(const Stmt& s, const std::set<int>& buffers) {
  auto stores = [&](const Stmt& c) { return c.is<Store>() && buffers.count(c.as<Store>().buffer) > 0; };
  if (stores(s)) return true;
  if (s.is<Loop>()) return anyStmt(s.as<Loop>().body, stores);
  if (s.is<Guard>()) return anyStmt(s.as<Guard>().body, stores);
  if (s.is<Tile>()) return true;  // a tile writes its output through its epilogue and packs
  return false;
}

// Whether store `st` writes only the element that every load of its buffer in `e` reads.
bool storesOnlyElementRead(const Store& st, const Expr& e) {
  bool same = true;
  forEachLoad(e, [&](const Expr& l) { same = same && (l.buffer != st.buffer || equal(l.index, st.index)); });
  return same;
}

// A loop whose body sets `acc` only by `acc = max(acc, term)`: after it, acc >= term for every
// value of the loop's variable below its extent. The loop may also store the buffers the term
// reads (softmax's scores stored while their maximum is taken), before the update and at the
// element the term reads, so that the values the maximum saw are the ones left behind.
struct MaxLoop {
  int acc = -1;
  const Expr* term = nullptr;
  int var = -1;
  int64_t extent = 0;
  std::set<int> termBuffers;  // what the term loads
};

std::optional<MaxLoop> maxLoop(const Loop& l) {
  // One max update and stores, nothing else.
  const AccUpdate* update = nullptr;
  for (const Stmt& c : l.body) {
    if (c.is<AccUpdate>() && c.as<AccUpdate>().reduce == ReduceKind::Max && !update) update = &c.as<AccUpdate>();
    else if (!c.is<Store>()) return std::nullopt;
  }
  if (!update) return std::nullopt;
  MaxLoop m{update->acc, &update->value, l.var, l.extent, loadedBuffers(update->value)};
  bool seenUpdate = false;
  for (const Stmt& c : l.body) {
    if (c.is<AccUpdate>()) {
      seenUpdate = true;
      continue;
    }
    const Store& st = c.as<Store>();
    if (m.termBuffers.count(st.buffer) && (seenUpdate || !storesOnlyElementRead(st, *m.term))) return std::nullopt;
  }
  return m;
}

// The max loop behind an exp argument `A - acc` or `A - round(acc)`, or null. A rounding of the
// maximum to f16/bf16 keeps it >= A when the maximum is of values in that format already (the
// term is a load of a buffer of it), since rounding a representable value changes nothing.
const MaxLoop* shiftedMax(const LoopProgram& p, const Expr& arg, const std::map<int, MaxLoop>& maxOf) {
  if (arg.kind != ExprKind::Binary || arg.binaryOp != BinaryOp::Sub) return nullptr;
  const Expr& b = arg.args[1];
  const bool rounded = b.kind == ExprKind::Call && (b.builtin == Builtin::RoundBF16 || b.builtin == Builtin::RoundF16);
  const Expr& read = rounded ? b.args[0] : b;
  if (read.kind != ExprKind::AccRead) return nullptr;
  auto it = maxOf.find(read.acc);
  if (it == maxOf.end()) return nullptr;
  const MaxLoop& m = it->second;
  if (rounded && (m.term->kind != ExprKind::Load ||
                  p.buffers[m.term->buffer].dtype != (b.builtin == Builtin::RoundBF16 ? DType::BF16 : DType::F16)))
    return nullptr;
  return &m;
}

// The exp calls of `block`'s loops that the rule allows, block by block (nested blocks keep
// their own record of max loops).
void scan(const LoopProgram& p, Block& block, std::vector<Expr*>& found) {
  std::map<int, MaxLoop> maxOf;
  for (Stmt& s : block) {
    if (s.is<Loop>()) {
      Loop& l = s.as<Loop>();
      for (size_t ci = 0; ci < l.body.size(); ++ci) {
        Stmt& c = l.body[ci];
        Expr* v = valueOf(c);
        if (!v) continue;
        forEachExprNode(*v, [&](Expr& e) {
          if (e.kind != ExprKind::Call || e.builtin != Builtin::Exp || e.args.size() != 1) return;
          const MaxLoop* m = shiftedMax(p, e.args[0], maxOf);
          if (!m || m->extent != l.extent || setsAcc(s, m->acc)) return;
          if (!equal(*m->term, e.args[0].args[0], {{m->var, l.var}})) return;
          // The loop may store what the term reads only at the element this iteration reads,
          // and not before the exp's own statement.
          for (size_t cj = 0; cj < l.body.size(); ++cj) {
            const Stmt& other = l.body[cj];
            if (!storesTo(other, m->termBuffers)) continue;
            if (cj < ci || !other.is<Store>() || !storesOnlyElementRead(other.as<Store>(), e.args[0].args[0])) return;
          }
          found.push_back(&e);
        });
      }
      scan(p, l.body, found);
    } else if (s.is<Guard>()) {
      scan(p, s.as<Guard>().body, found);
    }
    // What this statement sets or stores is no longer what an earlier max loop left.
    for (auto it = maxOf.begin(); it != maxOf.end();)
      it = setsAcc(s, it->first) || storesTo(s, it->second.termBuffers) ? maxOf.erase(it) : std::next(it);
    if (s.is<Loop>())
      if (std::optional<MaxLoop> m = maxLoop(s.as<Loop>())) maxOf[m->acc] = std::move(*m);
  }
}

std::vector<Expr*> find(LoopProgram& p) {
  std::vector<Expr*> found;
  for (Kernel& k : p.kernels) scan(p, k.body, found);
  return found;
}

}  // namespace

std::vector<const Expr*> nonPositiveExps(const LoopProgram& p) {
  // scan only reads; it takes the program as mutable so that markNonPositiveExps can share it.
  std::vector<Expr*> found = find(const_cast<LoopProgram&>(p));
  return {found.begin(), found.end()};
}

int markNonPositiveExps(LoopProgram& p) {
  int marked = 0;
  for (Expr* e : find(p))
    if (!e->nonPositiveArg) {
      e->nonPositiveArg = true;
      ++marked;
    }
  return marked;
}

}  // namespace texc::loops
