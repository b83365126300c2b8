#include "compiler/loops/gpu/SplitKeys.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "compiler/loops/Build.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"
#include "compiler/loops/Walk.h"
#include "compiler/loops/gpu/GpuLegality.h"
#include "compiler/loops/gpu/SplitK.h"

namespace texc::loops::gpu {

namespace {

const Block& keyBodyOf(const Loop& keys) {
  if (keys.body.size() == 1 && keys.body[0].is<Guard>()) return keys.body[0].as<Guard>().body;
  return keys.body;
}

// The online-softmax row body as lowering writes it (LowerToLoops.cpp, runOnline).
struct OnlineShape {
  size_t keyStmt = 0;
  int m = -1, l = -1;     // the running max and sum
  bool weighted = false;  // the output row is the running weighted sum
  int preludeLoop = -1;   // the statement that sets the output row to 0 (weighted)
};

bool isAccSet(const Stmt& s) { return s.is<AccSet>(); }

std::optional<OnlineShape> matchOnline(const KernelShape& shape) {
  const Block& inner = *shape.inner;
  OnlineShape o;
  if (inner.empty() || !inner[0].is<AccInit>() || inner[0].as<AccInit>().reduce != ReduceKind::Max) return std::nullopt;
  o.m = inner[0].as<AccInit>().acc;
  bool found = false;
  for (size_t n = 0; n < inner.size(); ++n) {
    const Loop* l = inner[n].getIf<Loop>();
    if (!l) continue;
    const Block& body = keyBodyOf(*l);
    if (std::any_of(body.begin(), body.end(), isAccSet)) {
      if (found) return std::nullopt;
      found = true;
      o.keyStmt = n;
    } else if (!found) {
      o.preludeLoop = static_cast<int>(n);
    }
  }
  if (!found) return std::nullopt;
  const Block& body = keyBodyOf(inner[o.keyStmt].as<Loop>());
  // [the score's own reductions], s' := .., m' := max(m, s'), a := .., e := .., l := l * a + e,
  // [the output row], m := m'
  const size_t f = static_cast<size_t>(std::find_if(body.begin(), body.end(), isAccSet) - body.begin());
  if (body.size() < f + 6) return std::nullopt;
  for (size_t n = f; n < f + 5; ++n)
    if (!isAccSet(body[n])) return std::nullopt;
  const AccSet& sum = body[f + 4].as<AccSet>();
  const Expr& v = sum.value;
  if (v.kind != ExprKind::Binary || v.binaryOp != BinaryOp::Add || v.args[0].kind != ExprKind::Binary ||
      v.args[0].binaryOp != BinaryOp::Mul || v.args[0].args[0].kind != ExprKind::AccRead || v.args[0].args[0].acc != sum.acc)
    return std::nullopt;
  o.l = sum.acc;
  if (!body.back().is<AccSet>() || body.back().as<AccSet>().acc != o.m) return std::nullopt;
  for (size_t n = f + 5; n + 1 < body.size(); ++n) {
    if (!body[n].is<Loop>()) return std::nullopt;
    o.weighted = true;
  }
  if (o.weighted != (o.preludeLoop >= 0)) return std::nullopt;
  for (size_t n = 0; n < o.keyStmt; ++n)
    if (!inner[n].is<AccInit>() && static_cast<int>(n) != o.preludeLoop) return std::nullopt;
  return o;
}

// Every load and store of buffer `from` under `block` now reads or writes `to` at
// [slice, the same indices].
void retarget(Block& block, int from, int to, int slice) {
  forEachStmt(block, [&](Stmt& s) {
    if (Store* st = s.getIf<Store>(); st && st->buffer == from) {
      st->buffer = to;
      st->index = build::prepended(slice, std::move(st->index));
    }
    if (Expr* v = valueOf(s))
      forEachExprNode(*v, [&](Expr& e) {
        if (e.kind == ExprKind::Load && e.buffer == from) {
          e.buffer = to;
          e.index = build::prepended(slice, std::move(e.index));
        }
      });
  });
}

}  // namespace

int64_t splitKeysSlices(int64_t rows, int64_t keys) {
  if (rows <= 0 || rows >= kWantedRows) return 0;
  return sliceCount(rows, kWantedRows, keys, kMinSliceKeys);
}

std::vector<SplitKeysRewrite> splitKeys(LoopProgram& p) {
  std::vector<SplitKeysRewrite> done;
  if (std::any_of(p.buffers.begin(), p.buffers.end(), [](const Buffer& b) { return b.kind == BufferKind::Local; })) return done;
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const Kernel& k = p.kernels[ki];
    if (k.computeType != DType::F32 && k.computeType != DType::F64) continue;
    if (k.outputBuffer < 0 || p.buffers[k.outputBuffer].dtype != k.computeType) continue;
    const KernelShape shape = kernelShape(k);
    if (shape.lhs.empty()) continue;
    std::optional<OnlineShape> o = matchOnline(shape);
    if (!o || !matchOnlineTile(p, k, shape)) continue;
    int64_t rows = 1;
    std::vector<IndexExpr> rowIndex;
    std::vector<int64_t> rowExtents;
    for (const Loop* l : shape.lhs) {
      rows *= l->extent;
      rowIndex.push_back(IndexExpr::makeVar(l->var));
      rowExtents.push_back(l->extent);
    }
    const Loop& keyLoop = (*shape.inner)[o->keyStmt].as<Loop>();
    const int64_t keys = keyLoop.extent;
    const int64_t S = splitKeysSlices(rows, keys);
    if (S == 0) continue;
    const int64_t sliceKeys = keys / S;
    const int j = keyLoop.var;
    const int O = k.outputBuffer;
    const std::string name = p.buffers[O].name;

    std::vector<int64_t> statShape = rowExtents;
    statShape.insert(statShape.begin(), S);
    std::vector<int64_t> partShape = p.buffers[O].shape;
    partShape.insert(partShape.begin(), S);
    const int maxes = addProgramTemp(p, name + "_max", statShape, k.computeType);
    const int sums = addProgramTemp(p, name + "_sum", statShape, k.computeType);
    const int part = o->weighted ? addProgramTemp(p, name + "_part", partShape, k.computeType) : -1;

    // The slices: the row body up to the pass over the keys, the pass over one slice, the statistics stored.
    Kernel keysKernel = k;
    keysKernel.name = k.name + "_keys";
    const int slice = static_cast<int>(keysKernel.varNames.size());
    keysKernel.varNames.push_back("kslice");
    {
      Block& inner = innermostBody(perfectNest(keysKernel.body[0]));
      inner.resize(o->keyStmt + 1);
      Loop& kl = inner[o->keyStmt].as<Loop>();
      kl.extent = sliceKeys;
      substitute(kl.body, j, build::sliced(sliceKeys, slice, j));
      if (o->weighted) retarget(inner, O, part, slice);
      inner.push_back(build::store(maxes, build::prepended(slice, rowIndex), build::accRead(o->m)));
      inner.push_back(build::store(sums, build::prepended(slice, rowIndex), build::accRead(o->l)));
    }
    build::wrapInLoop(keysKernel, slice, S);
    keysKernel.outputBuffer = o->weighted ? part : maxes;
    keysKernel.gpu.reset();
    keysKernel.schedule = fmt::format(
        "split keys: {} keys in {} slices of {} (kslice), {} query rows becoming {}; each slice's max, sum{} to {}, {}{}, which {} "
        "combines",
        keys, S, sliceKeys, rows, rows * S, o->weighted ? " and unnormalised output row" : "", p.buffers[maxes].name,
        p.buffers[sums].name, o->weighted ? ", " + p.buffers[part].name : "", k.name);

    // The combination: the overall max, each slice's weight exp(m_s - m), the weighted sums,
    // then the kernel's own last statements (the division by l, or m + log(l)).
    Kernel combine = k;
    combine.varNames[j] = "kslice";
    {
      Block& inner = innermostBody(perfectNest(combine.body[0]));
      const Block post(inner.begin() + static_cast<std::ptrdiff_t>(o->keyStmt) + 1, inner.end());
      std::optional<Stmt> prelude;
      if (o->weighted) prelude = inner[static_cast<size_t>(o->preludeLoop)];
      auto sliceMax = [&] { return build::load(maxes, build::prepended(j, rowIndex)); };
      auto weight = [&] {
        Expr empty = build::binary(BinaryOp::Eq, sliceMax(), build::constant(-HUGE_VAL));
        Expr scaled = build::call(Builtin::Exp, {build::binary(BinaryOp::Sub, sliceMax(), build::accRead(o->m))});
        return build::call(Builtin::Select, {std::move(empty), build::constant(0), std::move(scaled)});
      };
      Block body;
      body.push_back(AccInit{o->m, ReduceKind::Max});
      Loop overMax = build::loop(j, S);
      overMax.body.push_back(build::update(o->m, ReduceKind::Max, sliceMax()));
      body.push_back(std::move(overMax));
      body.push_back(AccInit{o->l, ReduceKind::Sum});
      Loop overSum = build::loop(j, S);
      overSum.body.push_back(
          build::update(o->l, ReduceKind::Sum, build::binary(BinaryOp::Mul, weight(), build::load(sums, build::prepended(j, rowIndex)))));
      body.push_back(std::move(overSum));
      if (prelude) {
        // The prelude's nest over the row's columns, its `O[..] = 0` now the weighted sum.
        const int t = combine.numAccs++;
        Block nest = {*prelude};
        rewrite(nest, [&](Stmt& s) -> std::optional<Block> {
          const Store* st = s.getIf<Store>();
          if (!st || st->buffer != O) return std::nullopt;
          Loop overRow = build::loop(j, S);
          overRow.body.push_back(
              build::update(t, ReduceKind::Sum, build::binary(BinaryOp::Mul, weight(), build::load(part, build::prepended(j, st->index)))));
          Block cell;
          cell.push_back(AccInit{t, ReduceKind::Sum});
          cell.push_back(std::move(overRow));
          cell.push_back(build::store(O, st->index, build::accRead(t)));
          return cell;
        });
        body.push_back(std::move(nest[0]));
      }
      for (const Stmt& s : post) body.push_back(s);
      inner = std::move(body);
    }
    combine.gpu.reset();
    combine.schedule = fmt::format("split keys: combines the {} slices of {}: the overall max, each slice weighted by exp(its max - that max)",
                                   S, keysKernel.name);

    SplitKeysRewrite r;
    r.kernel = k.name;
    r.slices = S;
    r.sliceKeys = sliceKeys;
    r.rows = rows;
    p.kernels[ki] = std::move(combine);
    p.kernels.insert(p.kernels.begin() + static_cast<std::ptrdiff_t>(ki), std::move(keysKernel));
    ++ki;
    done.push_back(std::move(r));
  }
  return done;
}

}  // namespace texc::loops::gpu
