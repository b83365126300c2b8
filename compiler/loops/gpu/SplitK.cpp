#include "compiler/loops/gpu/SplitK.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "compiler/loops/Build.h"
#include "compiler/loops/Contraction.h"
#include "compiler/loops/PerfectNest.h"
#include "compiler/loops/Substitute.h"

namespace texc::loops::gpu {

int64_t sliceCount(int64_t have, int64_t want, int64_t extent, int64_t minSlice) {
  int64_t slices = 0;
  for (int64_t s = 2; s <= 16; ++s) {
    if (extent % s != 0 || extent / s < minSlice) continue;
    slices = s;
    if (have * s >= want) break;
  }
  return slices;
}

int64_t splitKSlices(int64_t tiles, int64_t K, int64_t multiprocessors) {
  if (tiles <= 0 || tiles >= multiprocessors || K < kMinSplitK) return 0;
  return sliceCount(tiles, 2 * multiprocessors, K, kMinSliceK);
}

std::vector<SplitKRewrite> splitKs(LoopProgram& p, const GpuMapOptions& o) {
  std::vector<SplitKRewrite> done;
  // The partial sums go after the tensors; local buffers (the CPU's) would have to stay last.
  if (std::any_of(p.buffers.begin(), p.buffers.end(), [](const Buffer& b) { return b.kind == BufferKind::Local; })) return done;
  for (size_t ki = 0; ki < p.kernels.size(); ++ki) {
    const Kernel& k = p.kernels[ki];
    const KernelShape shape = kernelShape(k);
    std::optional<TiledMatch> m = matchTiledContraction(p, k, shape, o);
    if (!m || m->window != 1 || !m->copies.empty()) continue;
    std::optional<ReductionBody> body = matchReductionBody(*shape.inner, /*allowGuard=*/true);
    if (!body || !body->store || shape.inner->size() != 3 || body->update->reduce != ReduceKind::Sum) continue;
    const int64_t K = body->kLoop->extent;
    const int64_t S = splitKSlices(m->tiles, K, o.multiprocessors);
    if (S == 0) continue;
    const int64_t sliceK = K / S;
    const int kVar = body->kLoop->var;
    const int acc = body->update->acc;
    std::vector<IndexExpr> at;  // the output loops' variables: where a partial sum lives
    std::vector<int64_t> extents = {S};
    for (const Loop* l : shape.lhs) {
      at.push_back(IndexExpr::makeVar(l->var));
      extents.push_back(l->extent);
    }

    const int W = addProgramTemp(p, p.buffers[body->store->buffer].name + "_partials", extents, k.computeType);

    SplitKRewrite r;
    r.kernel = k.name;
    r.partials = p.buffers[W].name;
    r.slices = S;
    r.sliceK = sliceK;
    r.tilesBefore = m->tiles;
    r.blocksAfter = m->tiles * S;

    // The slices: a batch loop around the nest; k runs over one slice; the raw sum is stored.
    Kernel part = k;
    part.name = k.name + "_partial";
    const int slice = static_cast<int>(part.varNames.size());
    part.varNames.push_back("kslice");
    {
      Block& inner = innermostBody(perfectNest(part.body[0]));
      Loop& kLoop = inner[1].as<Loop>();
      kLoop.extent = sliceK;
      substitute(kLoop.body, kVar, build::sliced(sliceK, slice, kVar));
      inner[2] = build::store(W, build::prepended(slice, at), build::accRead(acc));
    }
    build::wrapInLoop(part, slice, S);
    part.outputBuffer = W;
    part.gpu.reset();
    part.schedule = fmt::format("split-K: the reduction's {} terms in {} slices of {} (kslice): {} blocks for {} SMs, where the tiles "
                                "alone gave {}; each slice's sum to {}, which {} adds",
                                K, S, sliceK, r.blocksAfter, o.multiprocessors, r.tilesBefore, r.partials, k.name);

    // The sum of the slices, in order, then the epilogue as it was.
    Kernel sum = k;
    sum.varNames[kVar] = "kslice";
    {
      Block& inner = innermostBody(perfectNest(sum.body[0]));
      Loop& kLoop = inner[1].as<Loop>();
      kLoop.extent = S;
      kLoop.body.clear();
      kLoop.body.push_back(build::update(acc, ReduceKind::Sum, build::load(W, build::prepended(kVar, at))));
    }
    sum.gpu.reset();
    sum.schedule = fmt::format("split-K: adds the {} partial sums of {} (slice 0 first), then the epilogue", S, part.name);

    p.kernels[ki] = std::move(sum);
    p.kernels.insert(p.kernels.begin() + static_cast<std::ptrdiff_t>(ki), std::move(part));
    ++ki;  // past the sum, which is no contraction any more
    done.push_back(std::move(r));
  }
  return done;
}

}  // namespace texc::loops::gpu
