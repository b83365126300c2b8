#include "compiler/loops/StreamStores.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "compiler/loops/Equal.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

std::string mib(int64_t bytes) { return fmt::format("{:.0f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0)); }

// Whether two accesses of a tensor are to the same row: the same index in all but the last dimension.
bool sameRow(const std::vector<IndexExpr>& a, const std::vector<IndexExpr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d + 1 < a.size(); ++d)
    if (!equal(a[d], b[d])) return false;
  return true;
}

bool holdsLoop(const Block& body) {
  return anyStmt(body, [](const Stmt& s) { return s.is<Loop>(); });
}

struct Access {
  const Stmt* stmt;   // the statement holding it
  size_t position;    // pre-order position of that statement in the kernel
  const Expr* load;   // null for a store
  int buffer;         // the buffer it reads or writes
};

// Why the store `st` (at `position`, inside `enclosing`) cannot stream; empty when it can.
std::string whyNot(const LoopProgram& p, const Store& st, size_t position, const std::vector<Stmt*>& enclosing,
                   const std::vector<Access>& loads) {
  const Buffer& b = p.buffers[st.buffer];
  if (b.kind == BufferKind::Local) return "a local buffer";
  for (const Stmt* e : enclosing)
    if (e->is<Tile>()) return "written in a tile's epilogue";
  if (enclosing.empty() || !enclosing.back()->is<Loop>()) return "not written directly in a loop";
  const Loop& inner = enclosing.back()->as<Loop>();
  if (!inner.vectorize || holdsLoop(inner.body)) return "not written in an innermost vector loop";
  const IndexExpr& last = st.index.back();
  if (last.kind != IndexExpr::Kind::Var || last.var != inner.var || inner.extent != b.shape.back())
    return "the vector loop does not run over its whole last dimension with unit stride";
  const int64_t rowBytes = b.shape.back() * dtypeBytes(b.dtype);
  if (rowBytes % 64 != 0) return fmt::format("a row is {} bytes, not a multiple of the 64-byte line", rowBytes);
  for (const Stmt* e : enclosing)
    if (e->is<Loop>()) {
      bool indexed = false;
      for (const IndexExpr& i : st.index) indexed = indexed || usesVar(i, e->as<Loop>().var);
      if (!indexed) return "written more than once (a loop around the store does not index it)";
    }
  for (const Access& a : loads) {
    if (a.buffer != st.buffer) continue;
    if (!a.load) {
      if (a.position < position) return "stored earlier in the kernel (its lines are in cache by then)";
      if (a.position > position) return "stored again later in the kernel";
      continue;
    }
    if (a.position > position) return "read again after the store";
    if (!sameRow(a.load->index, st.index)) return "read elsewhere than in the row it is stored to";
  }
  return "";
}

// Largest row staged in a local buffer: a stack array per call, which must stay in L1 or L2.
constexpr int64_t kMaxStagedRowBytes = 64 * 1024;

// A kernel that writes a row of `buffer`, reads it back and then overwrites it (softmax: y = e,
// sum of y, y = y / sum) cannot stream its last store: the row is in cache by then, and a
// non-temporal store to a cached line costs more than it saves. When every access to the buffer
// is to that one row, over its whole last dimension, and the row is small, the earlier stores and
// all the reads go to a local row buffer instead, and the last store writes the tensor once.
// Returns whether it staged the row.
bool stageRow(LoopProgram& p, Kernel& k, int buffer, const std::map<int, int64_t>& extents) {
  const Buffer& b = p.buffers[buffer];
  if (b.kind == BufferKind::Local || b.shape.empty()) return false;
  const int64_t rowBytes = b.shape.back() * dtypeBytes(b.dtype);
  if (rowBytes > kMaxStagedRowBytes) return false;
  std::vector<const Store*> stores;
  std::vector<const Expr*> loads;
  std::vector<size_t> storeAt, loadAt;
  size_t position = 0;
  forEachStmt(k.body, [&](const Stmt& s) {
    if (s.is<Store>() && s.as<Store>().buffer == buffer) {
      stores.push_back(&s.as<Store>());
      storeAt.push_back(position);
    }
    if (const Expr* v = valueOf(s))
      forEachLoad(*v, [&](const Expr& e) {
        if (e.buffer == buffer) {
          loads.push_back(&e);
          loadAt.push_back(position);
        }
      });
    ++position;
  });
  if (stores.size() < 2 || loads.empty()) return false;
  const Store& last = *stores.back();
  const size_t lastAt = storeAt.back();
  for (size_t at : loadAt)
    if (at > lastAt) return false;
  auto inLastRow = [&](const std::vector<IndexExpr>& index) {
    if (!sameRow(index, last.index)) return false;
    const IndexExpr& j = index.back();
    auto extent = extents.find(j.var);
    return j.kind == IndexExpr::Kind::Var && extent != extents.end() && extent->second == b.shape.back();
  };
  for (const Store* s : stores)
    if (!inLastRow(s->index)) return false;
  for (const Expr* e : loads)
    if (!inLastRow(e->index)) return false;
  // The row keeps the tensor's dtype: an f16/bf16 value read back is the rounded one, as before.
  const int row = addLocalBuffer(p, b.name + "_row", {b.shape.back()}, b.dtype);
  position = 0;
  forEachStmt(k.body, [&](Stmt& s) {
    if (Expr* v = valueOf(s))
      forEachExprNode(*v, [&](Expr& e) {
        if (e.kind == ExprKind::Load && e.buffer == buffer) e.index = {e.index.back()};
      });
    if (Expr* v = valueOf(s))
      forEachExprNode(*v, [&](Expr& e) {
        if (e.kind == ExprKind::Load && e.buffer == buffer) e.buffer = row;
      });
    if (s.is<Store>() && s.as<Store>().buffer == buffer && position != lastAt) {
      Store& st = s.as<Store>();
      st.buffer = row;
      st.index = {st.index.back()};
    }
    ++position;
  });
  return true;
}

// Prefetches in a kernel that streams a store, for the tensors larger than `bytes` that an
// innermost loop reads contiguously:
//  * a vector loop whose body calls a transcendental function is compute-bound, and asks for
//    its lines kPrefetchBytes ahead;
//  * a tensor whose same row an earlier pass of the kernel already read (softmax's max, then
//    exp; layer norm's mean, then the variance and the normalising pass) is in cache by now: the
//    loop asks for its next row instead (the row's bytes ahead), which the earlier pass of the
//    next row will then find in cache. That keeps memory busy while a pass works from cache,
//    compute-bound or not (layer norm 4096^2 on Zen 4, 1 thread: 7.2 -> 5.9 ms);
//  * when no pass over such a row is transcendental (layer norm, not softmax), the first pass,
//    which reads the row from cache too, asks for the next row as well: the passes are short,
//    and with the first one idle the memory waited a third of each row (layer norm 4096^2 on a
//    Sapphire Rapids class Xeon, 1 thread: 5.66-5.74 -> 5.50-5.69 ms, 2 threads 3.00-3.04 ->
//    2.87-2.93 ms). Beside an exp pass the same prefetch made softmax 10 % slower, and a bf16
//    layer norm (half the bytes per row for the same arithmetic) 3.12 -> 3.42-3.56 ms: there
//    the later passes are long enough to fetch the next row alone;
//  * where two passes or more over a row ask for the next one (layer norm's three), the last of
//    them asks for the row after it instead: the next row, asked for by the earlier passes of
//    this row, has been on its way since the last pass of the row before, and memory keeps
//    working through the whole last pass, which otherwise finds its requests already made. The
//    first pass of a row then waits less for its data: layer norm 4096^2 on Zen 4, 1 thread 4.43-
//    4.62 -> 3.66-4.13 ms (the first pass went from 35 % of the samples of `run --profile`), 2
//    threads 2.92 -> 2.62; rows of 1024 4.07 -> 3.34, of 16384 4.72 -> 4.39 ms. Further ahead
//    (three rows for the last pass, two for the others) was no faster; a single pass asking
//    (softmax's exp) gained nothing from it and keeps the next row;
//  * where a prefetch fills L1 (`prefetchFillsL1`), only the last pass over the row asks for the
//    next one: 16 KiB of next row arriving in a 32 KiB L1 pushes out the row that later passes
//    still read (layer norm 4096^2 on Zen 3, 1 thread: 6.06 -> 4.91 ms; 2 threads 3.39 -> 3.14).
// Returns the prefetched tensors' names.
std::vector<std::string> addPrefetches(const LoopProgram& p, Kernel& k, int64_t minBytes, bool prefetchFillsL1) {
  std::vector<std::string> names;
  std::vector<std::pair<size_t, const Expr*>> loads;  // every load, with its statement's position
  std::vector<int> heavyReads;                         // the buffers a transcendental statement reads
  size_t position = 0;
  forEachStmt(k.body, [&](const Stmt& s) {
    if (const Expr* v = valueOf(s)) {
      forEachLoad(*v, [&](const Expr& e) { loads.push_back({position, &e}); });
      if (callsTranscendental(*v)) forEachLoad(*v, [&](const Expr& e) { heavyReads.push_back(e.buffer); });
    }
    ++position;
  });
  // Whether a load of the same row of e's buffer comes before the statement at `at` (after the
  // statement at `at` when `before` is false).
  auto sameRowRead = [&](const Expr& e, size_t at, bool before) {
    for (const auto& [where, other] : loads)
      if (!(before ? where >= at : where <= at) && other->buffer == e.buffer && sameRow(other->index, e.index)) return true;
    return false;
  };
  struct RowAsk {
    Loop* loop;       // a loop asking for the next row
    size_t prefetch;  // which of its prefetches
    const Expr* load;
  };
  std::vector<RowAsk> rowAsks;
  position = 0;
  forEachStmt(k.body, [&](Stmt& s) {
    const size_t at = position++;
    if (!s.is<Loop>()) return;
    Loop& l = s.as<Loop>();
    l.prefetch.clear();
    if (holdsLoop(l.body)) return;
    size_t last = at;  // the position of the loop's last statement: later passes come after it
    forEachStmt(l.body, [&](const Stmt&) { ++last; });
    bool heavy = false;
    for (const Stmt& c : l.body)
      if (const Expr* v = valueOf(c)) heavy = heavy || callsTranscendental(*v);
    heavy = heavy && l.vectorize;
    for (const Stmt& c : l.body) {
      const Expr* v = valueOf(c);
      if (!v) continue;
      forEachLoad(*v, [&](const Expr& e) {
        const Buffer& b = p.buffers[e.buffer];
        const bool contiguous = !e.index.empty() && e.index.back().kind == IndexExpr::Kind::Var && e.index.back().var == l.var;
        if (b.kind == BufferKind::Local || !contiguous || b.numElements() * dtypeBytes(b.dtype) < minBytes) return;
        for (const Prefetch& f : l.prefetch)
          if (f.buffer == e.buffer) return;
        // A next row exists only below the last dimension: a one-dimensional tensor's "row" is all
        // of it, and asking for the bytes after it only costs page walks.
        const bool wholeRow = b.shape.size() >= 2 && l.extent == b.shape.back();
        const bool lightPasses =
            dtypeBytes(b.dtype) >= 4 && std::find(heavyReads.begin(), heavyReads.end(), e.buffer) == heavyReads.end();
        const bool readLater = sameRowRead(e, last, /*before=*/false);
        const bool nextRow = wholeRow && (sameRowRead(e, at, /*before=*/true) || (lightPasses && readLater));
        if (nextRow && prefetchFillsL1 && readLater) return;  // the next row would evict this one
        if (!heavy && !nextRow) return;
        const int64_t rowBytes = b.shape.back() * dtypeBytes(b.dtype);
        const int64_t ahead = dtypeBytes(b.dtype) < 4 ? kPrefetchBytesLowPrecision : kPrefetchBytes;
        l.prefetch.push_back({e.buffer, nextRow ? rowBytes : ahead});
        if (nextRow) rowAsks.push_back({&l, l.prefetch.size() - 1, &e});
        if (std::find(names.begin(), names.end(), b.name) == names.end()) names.push_back(b.name);
      });
    }
  });
  // Of several passes asking for the next row of the same row, the last asks for the one after.
  for (size_t a = 0; a < rowAsks.size(); ++a) {
    size_t lastOfRow = a, asking = 0;
    for (size_t o = 0; o < rowAsks.size(); ++o)
      if (rowAsks[o].load->buffer == rowAsks[a].load->buffer && sameRow(rowAsks[o].load->index, rowAsks[a].load->index)) {
        ++asking;
        lastOfRow = std::max(lastOfRow, o);
      }
    if (asking >= 2 && lastOfRow == a) {
      Prefetch& f = rowAsks[a].loop->prefetch[rowAsks[a].prefetch];
      f.bytes *= 2;
    }
  }
  return names;
}

}  // namespace

int markStreamingStores(LoopProgram& p, int64_t lastLevelCacheBytes, bool prefetchFillsL1) {
  int marked = 0;
  for (Kernel& k : p.kernels) {
    const int markedBefore = marked;
    // The tensors the kernel reads and writes, together: when they exceed the last-level cache,
    // an output of at least a quarter of it is evicted before anyone reads it too (a bf16
    // y = f(x) of 4096 x 4096 moves 32 + 32 MiB).
    int64_t footprint = 0;
    {
      std::vector<bool> touched(p.buffers.size(), false);
      forEachAccess(
          k.body, [&](const Expr& e) { touched[e.buffer] = true; }, [&](const Store& s) { touched[s.buffer] = true; });
      for (size_t b = 0; b < touched.size(); ++b)
        if (touched[b] && p.buffers[b].kind != BufferKind::Local)
          footprint += p.buffers[b].numElements() * dtypeBytes(p.buffers[b].dtype);
    }
    auto large = [&](int64_t bytes) {
      return bytes > lastLevelCacheBytes || (4 * bytes >= lastLevelCacheBytes && footprint > lastLevelCacheBytes);
    };
    // Rows written, read back and overwritten go through a local row first (stageRow).
    std::map<int, int64_t> extents;
    forEachStmt(k.body, [&](const Stmt& s) {
      if (s.is<Loop>()) extents[s.as<Loop>().var] = s.as<Loop>().extent;
    });
    std::vector<bool> stored = buffersStored(p, k);
    std::vector<std::string> staged;
    for (size_t buffer = 0; buffer < stored.size(); ++buffer) {
      // A copy: stageRow appends to p.buffers.
      const Buffer b = p.buffers[buffer];
      if (stored[buffer] && large(b.numElements() * dtypeBytes(b.dtype)) && stageRow(p, k, static_cast<int>(buffer), extents))
        staged.push_back(b.name);
    }
    // Every load of the kernel with its statement's position, then every store's verdict.
    std::vector<Access> loads;
    size_t position = 0;
    forEachStmt(k.body, [&](const Stmt& s) {
      if (const Expr* v = valueOf(s)) forEachLoad(*v, [&](const Expr& e) { loads.push_back({&s, position, &e, e.buffer}); });
      if (s.is<Store>()) loads.push_back({&s, position, nullptr, s.as<Store>().buffer});
      ++position;
    });
    std::map<int, std::vector<std::string>> verdicts;  // buffer -> why not, one per store ("" = streamed)
    position = 0;
    walkWithEnclosing(k.body, [&](Stmt& s, const std::vector<Stmt*>& enclosing) {
      if (s.is<Store>()) {
        Store& st = s.as<Store>();
        const Buffer& b = p.buffers[st.buffer];
        const int64_t bytes = b.numElements() * dtypeBytes(b.dtype);
        st.streaming = false;
        if (large(bytes)) {
          std::string why = whyNot(p, st, position, enclosing, loads);
          st.streaming = why.empty();
          marked += st.streaming;
          verdicts[st.buffer].push_back(why);
        }
      }
      ++position;
      return WalkAction::Advance;
    });
    std::string note;
    for (const auto& [buffer, whys] : verdicts) {
      const Buffer& b = p.buffers[buffer];
      const int64_t bytes = b.numElements() * dtypeBytes(b.dtype);
      int streamed = 0;
      std::string kept;
      for (const std::string& w : whys) {
        if (w.empty()) ++streamed;
        else if (kept.empty()) kept = w;
      }
      if (!note.empty()) note += "; ";
      const std::string size = bytes > lastLevelCacheBytes
                                   ? fmt::format("{} > {} last-level cache", mib(bytes), mib(lastLevelCacheBytes))
                                   : fmt::format("{} of {} the kernel moves > {} last-level cache", mib(bytes), mib(footprint),
                                                 mib(lastLevelCacheBytes));
      const bool wasStaged = std::find(staged.begin(), staged.end(), b.name) != staged.end();
      if (streamed == static_cast<int>(whys.size()))
        note += fmt::format("{} streamed (non-temporal), {}, written once{}", b.name, size,
                            wasStaged ? fmt::format(" (its row staged in {}_row until then)", b.name) : "");
      else if (streamed > 0)
        note += fmt::format("{} streamed by its last store, {}; an earlier store kept: {}", b.name, size, kept);
      else
        note += fmt::format("{} cached, {}, but {}", b.name, size, kept);
    }
    // Prefetches only where something streams: the kernel moves tensors larger than the cache.
    if (marked > markedBefore) {
      std::vector<std::string> prefetched = addPrefetches(p, k, lastLevelCacheBytes / 4, prefetchFillsL1);
      std::string names;
      for (const std::string& n : prefetched) names += (names.empty() ? "" : ", ") + n;
      if (!names.empty())
        note += fmt::format("; {} prefetched (the loops say how far: ahead where the arithmetic is transcendental, the next row {})", names,
                            prefetchFillsL1 ? "in the last pass over a row, as this CPU's prefetches fill L1"
                                            : "where a pass re-reads a row, the row after it in the last of several such passes");
    }
    k.streaming = note;
  }
  return marked;
}

}  // namespace texc::loops
