#include "compiler/driver/LineDiff.h"

#include <algorithm>
#include <unordered_map>

namespace texc {

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = nl + 1;
  }
  return lines;
}

namespace {

// The edit script between a and b (line ids), appended to `out` with line numbers offset by
// `oldBase` and `newBase`. Returns false (appending nothing) when more than maxEdits edits
// would be needed.
bool myers(const std::vector<int>& a, const std::vector<int>& b, int oldBase, int newBase, int maxEdits,
           std::vector<DiffLine>& out) {
  const int n = static_cast<int>(a.size()), m = static_cast<int>(b.size());
  const int limit = std::min(n + m, maxEdits);
  // v[k + offset]: the furthest x reached on diagonal k (x - y = k) with d edits.
  const int offset = limit + 1;
  std::vector<int> v(2 * static_cast<size_t>(limit) + 3, 0);
  // trace[d]: v over diagonals -(d-1)..(d-1) as it was before step d, for the walk back.
  std::vector<std::vector<int>> trace;
  int found = -1;
  for (int d = 0; d <= limit && found < 0; ++d) {
    std::vector<int> snapshot;
    if (d > 0) snapshot.assign(v.begin() + offset - (d - 1), v.begin() + offset + d);
    trace.push_back(std::move(snapshot));
    for (int k = -d; k <= d; k += 2) {
      int x;
      if (d == 0) x = 0;
      else if (k == -d || (k != d && v[offset + k - 1] < v[offset + k + 1])) x = v[offset + k + 1];  // down: b[y] added
      else x = v[offset + k - 1] + 1;  // right: a[x] removed
      int y = x - k;
      while (x < n && y < m && a[x] == b[y]) ++x, ++y;
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return false;

  // Walk back from (n, m) through the snapshots, collecting the script in reverse.
  std::vector<DiffLine> rev;
  int x = n, y = m;
  for (int d = found; d > 0; --d) {
    const std::vector<int>& prev = trace[d];
    auto at = [&](int k) { return prev[k + (d - 1)]; };
    int k = x - y;
    int prevK = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? k + 1 : k - 1;
    int prevX = at(prevK), prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      --x, --y;
      rev.push_back({DiffOp::Same, oldBase + x + 1, newBase + y + 1});
    }
    if (x == prevX) {
      --y;
      rev.push_back({DiffOp::Added, 0, newBase + y + 1});
    } else {
      --x;
      rev.push_back({DiffOp::Removed, oldBase + x + 1, 0});
    }
  }
  while (x > 0 && y > 0) {
    --x, --y;
    rev.push_back({DiffOp::Same, oldBase + x + 1, newBase + y + 1});
  }
  out.insert(out.end(), rev.rbegin(), rev.rend());
  return true;
}

}  // namespace

LineDiff diffLines(const std::vector<std::string_view>& before, const std::vector<std::string_view>& after, int maxEdits) {
  LineDiff diff;
  // Lines as small integers: equal lines get the same id.
  std::unordered_map<std::string_view, int> ids;
  auto idsOf = [&](const std::vector<std::string_view>& lines) {
    std::vector<int> out;
    out.reserve(lines.size());
    for (std::string_view l : lines) out.push_back(ids.emplace(l, static_cast<int>(ids.size())).first->second);
    return out;
  };
  std::vector<int> a = idsOf(before), b = idsOf(after);
  // The common first and last lines need no search.
  size_t prefix = 0;
  while (prefix < a.size() && prefix < b.size() && a[prefix] == b[prefix]) ++prefix;
  size_t suffix = 0;
  while (suffix < a.size() - prefix && suffix < b.size() - prefix && a[a.size() - 1 - suffix] == b[b.size() - 1 - suffix]) ++suffix;
  for (size_t i = 0; i < prefix; ++i) diff.lines.push_back({DiffOp::Same, static_cast<int>(i) + 1, static_cast<int>(i) + 1});
  std::vector<int> midA(a.begin() + static_cast<long>(prefix), a.end() - static_cast<long>(suffix));
  std::vector<int> midB(b.begin() + static_cast<long>(prefix), b.end() - static_cast<long>(suffix));
  const int base = static_cast<int>(prefix);
  if (!myers(midA, midB, base, base, maxEdits, diff.lines)) {
    diff.minimal = false;
    for (size_t i = 0; i < midA.size(); ++i) diff.lines.push_back({DiffOp::Removed, base + static_cast<int>(i) + 1, 0});
    for (size_t i = 0; i < midB.size(); ++i) diff.lines.push_back({DiffOp::Added, 0, base + static_cast<int>(i) + 1});
  }
  for (size_t i = 0; i < suffix; ++i)
    diff.lines.push_back({DiffOp::Same, static_cast<int>(a.size() - suffix + i) + 1, static_cast<int>(b.size() - suffix + i) + 1});
  for (const DiffLine& l : diff.lines) {
    diff.removed += l.op == DiffOp::Removed;
    diff.added += l.op == DiffOp::Added;
  }
  return diff;
}

std::vector<DiffHunk> diffHunks(const LineDiff& diff, int context) {
  std::vector<DiffHunk> hunks;
  const size_t n = diff.lines.size();
  const size_t ctx = static_cast<size_t>(std::max(context, 0));
  for (size_t i = 0; i < n; ++i) {
    if (diff.lines[i].op == DiffOp::Same) continue;
    size_t begin = i >= ctx ? i - ctx : 0;
    size_t last = i;  // the last changed line of this run
    while (last + 1 < n && diff.lines[last + 1].op != DiffOp::Same) ++last;
    size_t end = std::min(n, last + 1 + ctx);
    if (!hunks.empty() && begin <= hunks.back().end) hunks.back().end = end;
    else hunks.push_back({begin, end});
    i = last;
  }
  return hunks;
}

}  // namespace texc
