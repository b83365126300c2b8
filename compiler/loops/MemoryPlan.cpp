#include "compiler/loops/MemoryPlan.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "compiler/loops/Equal.h"
#include "compiler/loops/Walk.h"

namespace texc::loops {

namespace {

int64_t roundUp(int64_t bytes) {
  int64_t b = std::max<int64_t>(bytes, 1);
  return (b + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

int64_t bufferBytes(const Buffer& b) { return b.numElements() * static_cast<int64_t>(dtypeBytes(b.dtype)); }

// Live intervals by buffer: the first kernel that writes it and the last kernel that reads it
// (-1 when none does).
struct Liveness {
  std::vector<int> def, last;
};

Liveness computeLiveness(const LoopProgram& p) {
  Liveness l{std::vector<int>(p.buffers.size(), -1), std::vector<int>(p.buffers.size(), -1)};
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    int ki = static_cast<int>(k);
    forEachAccess(
        p.kernels[k].body, [&](const Expr& e) { l.last[e.buffer] = std::max(l.last[e.buffer], ki); },
        [&](const Store& s) {
          if (l.def[s.buffer] < 0) l.def[s.buffer] = ki;
        });
  }
  return l;
}

}  // namespace

const PlannedTemp* MemoryPlan::find(int buffer) const {
  for (const PlannedTemp& t : temps)
    if (t.buffer == buffer) return &t;
  return nullptr;
}

int MemoryPlan::inPlaceInputOf(const LoopProgram& p, int kernel) const {
  for (const PlannedTemp& t : temps)
    if (t.inPlace && t.defKernel == kernel && p.kernels[kernel].outputBuffer == t.buffer) return t.reusedFrom;
  return -1;
}

bool mayWriteInPlace(const LoopProgram& p, int kernel, int input) {
  const Kernel& k = p.kernels[kernel];
  if (k.outputBuffer < 0 || input == k.outputBuffer || k.numAccs != 0 || !k.scratchSizes.empty()) return false;  // elementwise kernels only
  const Buffer& out = p.buffers[k.outputBuffer];
  const Buffer& in = p.buffers[input];
  if (in.shape != out.shape || in.dtype != out.dtype) return false;
  const Store* store = nullptr;
  int stores = 0;
  std::vector<const Expr*> loads;
  forEachAccess(
      k.body, [&](const Expr& e) { if (e.buffer == input) loads.push_back(&e); },
      [&](const Store& s) {
        ++stores;
        store = &s;
      });
  if (stores != 1 || store->buffer != k.outputBuffer || loads.empty()) return false;
  // Each element of the input is read only by the iteration that overwrites it.
  for (const Expr* e : loads)
    if (!equal(e->index, store->index)) return false;
  return true;
}

MemoryPlan planMemory(const LoopProgram& p, const PlanOptions& options) {
  MemoryPlan plan;
  Liveness live = computeLiveness(p);
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    if (p.buffers[b].kind != BufferKind::Temp || live.def[b] < 0) continue;
    PlannedTemp t;
    t.buffer = static_cast<int>(b);
    t.bytes = bufferBytes(p.buffers[b]);
    t.defKernel = live.def[b];
    t.lastKernel = std::max(live.def[b], live.last[b]);
    plan.temps.push_back(t);
    plan.naiveBytes += roundUp(t.bytes);
  }
  std::stable_sort(plan.temps.begin(), plan.temps.end(),
                   [](const PlannedTemp& a, const PlannedTemp& b) { return a.defKernel < b.defKernel; });

  // Walk the kernels in order. holder[block] is the temp (index into plan.temps) whose value the
  // block holds, or -1 when the block is free; lastHolder[block] the temp that used it last.
  std::vector<int> holder, lastHolder;
  size_t next = 0;
  for (int k = 0; k < static_cast<int>(p.kernels.size()); ++k) {
    for (; next < plan.temps.size() && plan.temps[next].defKernel == k; ++next) {
      PlannedTemp& t = plan.temps[next];
      int64_t need = roundUp(t.bytes);
      int chosen = -1;
      // In place: over an input of this kernel that dies here.
      for (size_t b = 0; b < holder.size() && chosen < 0 && options.inPlace; ++b) {
        if (holder[b] < 0) continue;
        const PlannedTemp& old = plan.temps[holder[b]];
        if (old.lastKernel == k && old.defKernel < k && mayWriteInPlace(p, k, old.buffer)) {
          chosen = static_cast<int>(b);
          t.inPlace = true;
        }
      }
      // Best fit among the free blocks: the smallest that is large enough, else the largest.
      if (chosen < 0) {
        for (size_t b = 0; b < holder.size(); ++b) {
          if (holder[b] >= 0) continue;
          if (chosen < 0) {
            chosen = static_cast<int>(b);
            continue;
          }
          int64_t cur = plan.blockBytes[chosen], cand = plan.blockBytes[b];
          bool curFits = cur >= need, candFits = cand >= need;
          if ((candFits && (!curFits || cand < cur)) || (!candFits && !curFits && cand > cur)) chosen = static_cast<int>(b);
        }
      }
      if (chosen < 0) {
        chosen = static_cast<int>(holder.size());
        holder.push_back(-1);
        plan.blockBytes.push_back(need);
        lastHolder.push_back(-1);
      } else {
        // The block was last used by a dead temp (or, in place, by the input dying here).
        t.reusedFrom = plan.temps[lastHolder[chosen]].buffer;
        plan.blockBytes[chosen] = std::max(plan.blockBytes[chosen], need);
      }
      t.block = chosen;
      holder[chosen] = lastHolder[chosen] = static_cast<int>(next);
    }
    // Temps whose last reader was this kernel free their blocks for the kernels after it.
    for (int& h : holder)
      if (h >= 0 && plan.temps[h].lastKernel <= k) h = -1;
    // The most temps live during this kernel (an in-place pair counts twice here).
    int liveHere = 0, sharedHere = 0;
    for (const PlannedTemp& t : plan.temps) {
      if (t.defKernel <= k && k <= t.lastKernel) ++liveHere;
      if (t.defKernel == k && t.inPlace) ++sharedHere;
    }
    plan.maxLive = std::max(plan.maxLive, liveHere);
    plan.maxLiveSharing = std::max(plan.maxLiveSharing, liveHere - sharedHere);
  }

  int64_t offset = 0;
  for (int64_t bytes : plan.blockBytes) {
    plan.blockOffsets.push_back(offset);
    offset += bytes;
  }
  plan.arenaBytes = offset;
  for (PlannedTemp& t : plan.temps) t.offset = plan.blockOffsets[t.block];
  return plan;
}

namespace {

std::string interval(const PlannedTemp& t) {
  return t.defKernel == t.lastKernel ? fmt::format("k{}", t.defKernel) : fmt::format("k{}..k{}", t.defKernel, t.lastKernel);
}

std::string humanBytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return fmt::format("{:.1f} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (int64_t{1} << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1 << 20));
  if (b >= (int64_t{1} << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(b) / (1 << 10));
  return fmt::format("{} B", b);
}

}  // namespace

std::string printMemoryPlan(const LoopProgram& p, const MemoryPlan& plan) {
  std::string out;
  int inPlace = 0;
  for (const PlannedTemp& t : plan.temps) inPlace += t.inPlace;
  auto plural = [](size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); };
  out += fmt::format("memory plan: {} in {} ({} written in place)\n", plural(plan.temps.size(), "temp"),
                     plural(plan.blockBytes.size(), "block"), inPlace);
  out += fmt::format("most temps live at once: {} ({} counting a temp written in place and its input as one)\n", plan.maxLive,
                     plan.maxLiveSharing);
  out += fmt::format("arena {} bytes ({}) vs {} bytes ({}) unplanned, one buffer per temp\n", plan.arenaBytes,
                     humanBytes(plan.arenaBytes), plan.naiveBytes, humanBytes(plan.naiveBytes));
  if (plan.temps.empty()) return out;

  // The table.
  std::vector<std::vector<std::string>> rows = {{"value", "bytes", "live", "block", "offset", "reused from"}};
  for (const PlannedTemp& t : plan.temps) {
    std::string from = t.reusedFrom < 0 ? "-" : "%" + p.buffers[t.reusedFrom].name + (t.inPlace ? " (in place)" : "");
    rows.push_back({"%" + p.buffers[t.buffer].name, std::to_string(t.bytes), interval(t), std::to_string(t.block),
                    std::to_string(t.offset), from});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      bool number = c == 1 || c == 3 || c == 4;
      line += (c ? "  " : "") + (number ? fmt::format("{:>{}}", r[c], width[c]) : fmt::format("{:<{}}", r[c], width[c]));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }

  // The timeline: one column per kernel; W where the temp is written (= in place), # while it
  // is live, R at its last read.
  out += "\ntimeline (kernels across, temps down; W written, = written in place, # live, R last read):\n";
  size_t nameWidth = 0;
  for (const PlannedTemp& t : plan.temps) nameWidth = std::max(nameWidth, p.buffers[t.buffer].name.size() + 1);
  size_t col = std::to_string(p.kernels.empty() ? 0 : p.kernels.size() - 1).size() + 1;
  std::string header(nameWidth, ' ');
  for (size_t k = 0; k < p.kernels.size(); ++k) header += fmt::format("{:>{}}", k, col);
  out += header + "\n";
  for (const PlannedTemp& t : plan.temps) {
    std::string line = fmt::format("{:<{}}", "%" + p.buffers[t.buffer].name, nameWidth);
    for (int k = 0; k < static_cast<int>(p.kernels.size()); ++k) {
      char c = '.';
      if (k == t.defKernel) c = t.inPlace ? '=' : 'W';
      else if (k == t.lastKernel) c = 'R';
      else if (k > t.defKernel && k < t.lastKernel) c = '#';
      line += std::string(col - 1, ' ') + c;
    }
    out += line + fmt::format("   block {}\n", t.block);
  }
  return out;
}

std::vector<std::string> verifyMemoryPlan(const LoopProgram& p, const MemoryPlan& plan) {
  std::vector<std::string> problems;
  Liveness live = computeLiveness(p);
  std::vector<int> seen(p.buffers.size(), 0);
  for (const PlannedTemp& t : plan.temps) {
    if (t.buffer < 0 || t.buffer >= static_cast<int>(p.buffers.size())) {
      problems.push_back(fmt::format("planned buffer {} does not exist", t.buffer));
      continue;
    }
    const Buffer& b = p.buffers[t.buffer];
    if (++seen[t.buffer] > 1) problems.push_back(fmt::format("%{} is planned twice", b.name));
    if (b.kind != BufferKind::Temp) problems.push_back(fmt::format("%{} is a program input or output but lies in the arena", b.name));
    if (t.bytes != bufferBytes(b)) problems.push_back(fmt::format("%{}: {} bytes planned, it holds {}", b.name, t.bytes, bufferBytes(b)));
    if (t.defKernel != live.def[t.buffer] || t.lastKernel != std::max(live.def[t.buffer], live.last[t.buffer]))
      problems.push_back(fmt::format("%{}: live interval {} does not match its uses", b.name, interval(t)));
    if (t.offset % kArenaAlignment != 0) problems.push_back(fmt::format("%{}: offset {} is not a multiple of {}", b.name, t.offset, kArenaAlignment));
    if (t.offset < 0 || t.offset + t.bytes > plan.arenaBytes)
      problems.push_back(fmt::format("%{}: bytes [{}, {}) lie outside the arena of {}", b.name, t.offset, t.offset + t.bytes, plan.arenaBytes));
    if (t.inPlace && (t.reusedFrom < 0 || !mayWriteInPlace(p, t.defKernel, t.reusedFrom)))
      problems.push_back(fmt::format("%{} is written in place where that is not allowed", b.name));
  }
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::Temp && live.def[b] >= 0 && !seen[b])
      problems.push_back(fmt::format("%{} is written by k{} but has no place in the plan", p.buffers[b].name, live.def[b]));

  // No two temps live at the same time share a byte, except an in-place pair at the kernel
  // where one dies and the other is born.
  for (size_t i = 0; i < plan.temps.size(); ++i)
    for (size_t j = i + 1; j < plan.temps.size(); ++j) {
      const PlannedTemp& a = plan.temps[i];
      const PlannedTemp& b = plan.temps[j];
      bool timeOverlap = a.defKernel <= b.lastKernel && b.defKernel <= a.lastKernel;
      bool byteOverlap = a.offset < b.offset + roundUp(b.bytes) && b.offset < a.offset + roundUp(a.bytes);
      if (!timeOverlap || !byteOverlap) continue;
      auto inPlacePair = [](const PlannedTemp& x, const PlannedTemp& y) {
        return y.inPlace && y.reusedFrom == x.buffer && x.lastKernel == y.defKernel && x.offset == y.offset;
      };
      if (inPlacePair(a, b) || inPlacePair(b, a)) continue;
      problems.push_back(fmt::format("%{} ({}, bytes [{}, {})) and %{} ({}, bytes [{}, {})) are live at once and share memory",
                                     p.buffers[a.buffer].name, interval(a), a.offset, a.offset + a.bytes, p.buffers[b.buffer].name,
                                     interval(b), b.offset, b.offset + b.bytes));
    }
  return problems;
}

}  // namespace texc::loops
