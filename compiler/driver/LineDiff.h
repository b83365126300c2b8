// A line diff (Myers' O(ND) algorithm) for texc explore's pass view: which lines of a pass's
// input it removed and which lines of its output it added, and the hunks around the changes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace texc {

enum class DiffOp : unsigned char { Same, Removed, Added };

// One line of the diff: a line kept (both numbers), removed (oldLine only) or added (newLine
// only). Line numbers are 1-based; 0 where the line is not in that text.
struct DiffLine {
  DiffOp op = DiffOp::Same;
  int oldLine = 0;
  int newLine = 0;
};

struct LineDiff {
  std::vector<DiffLine> lines;  // in order: every line of both texts once
  int removed = 0;
  int added = 0;
  // false when the texts differ in more than the edit limit: then every old line is reported
  // removed and every new line added, after their common first and last lines.
  bool minimal = true;
};

// The lines of `text`, without their line endings; a final line ending adds no empty line.
std::vector<std::string_view> splitLines(std::string_view text);

// A shortest edit script from `before` to `after` (at most `maxEdits` removed plus added lines
// are searched for; memory grows with its square).
LineDiff diffLines(const std::vector<std::string_view>& before, const std::vector<std::string_view>& after, int maxEdits = 3000);

// The hunks of a diff: [begin, end) ranges of `diff.lines` holding every change with up to
// `context` unchanged lines on each side; ranges closer than that are merged.
struct DiffHunk {
  size_t begin = 0;
  size_t end = 0;
};
std::vector<DiffHunk> diffHunks(const LineDiff& diff, int context = 3);

}  // namespace texc
