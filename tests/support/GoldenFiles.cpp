#include "tests/support/GoldenFiles.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>

namespace texc::testsupport {

// ---- files -------------------------------------------------------------------------------------

const fs::path& sourceRoot() {
  static const fs::path root = TEXC_SOURCE_DIR;
  return root;
}

bool acceptMode() {
  const char* v = std::getenv("TEXC_ACCEPT");
  return v != nullptr && std::string(v) == "1";
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool writeIfChanged(const fs::path& path, const std::string& text) {
  if (fs::exists(path) && readFile(path) == text) return false;
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return true;
}

std::string repoPath(const fs::path& path) { return path.lexically_relative(sourceRoot()).generic_string(); }

std::vector<fs::path> texFilesIn(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tex") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<fs::path> texFilesUnder(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".tex") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

// ---- golden comparison -------------------------------------------------------------------------

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return lines;
}

namespace {

// One line of an edit script: kept (' '), only in expected ('-'), only in actual ('+'), with the
// line numbers (0-based) it stands at in both texts.
struct Edit {
  char tag;
  size_t inExpected;
  size_t inActual;
};

std::vector<Edit> editScript(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  // common[i][j]: the length of the longest common subsequence of a[i..] and b[j..].
  std::vector<std::vector<size_t>> common(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;)
      common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : std::max(common[i + 1][j], common[i][j + 1]);
  std::vector<Edit> edits;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      edits.push_back({' ', i++, j++});
    } else if (j == b.size() || (i < a.size() && common[i + 1][j] >= common[i][j + 1])) {
      edits.push_back({'-', i++, j});
    } else {
      edits.push_back({'+', i, j++});
    }
  }
  return edits;
}

}  // namespace

std::string unifiedDiff(const std::vector<std::string>& expected, const std::vector<std::string>& actual, size_t context) {
  std::vector<Edit> edits = editScript(expected, actual);
  std::string out = "--- expected\n+++ actual\n";
  size_t k = 0;
  while (k < edits.size()) {
    if (edits[k].tag == ' ') {
      ++k;
      continue;
    }
    // A hunk: from `context` lines before this change to `context` lines after the last change
    // that is separated from the previous one by at most 2 * context kept lines.
    size_t begin = k > context ? k - context : 0;
    size_t lastChange = k;
    for (size_t q = k + 1; q < edits.size() && q <= lastChange + 2 * context + 1; ++q)
      if (edits[q].tag != ' ') lastChange = q;
    size_t end = std::min(edits.size(), lastChange + context + 1);
    size_t lenExpected = 0, lenActual = 0;
    for (size_t q = begin; q < end; ++q) {
      lenExpected += edits[q].tag != '+';
      lenActual += edits[q].tag != '-';
    }
    out += fmt::format("@@ -{},{} +{},{} @@\n", edits[begin].inExpected + 1, lenExpected, edits[begin].inActual + 1, lenActual);
    for (size_t q = begin; q < end; ++q)
      out += edits[q].tag + (edits[q].tag == '+' ? actual[edits[q].inActual] : expected[edits[q].inExpected]) + "\n";
    k = end;
  }
  return out;
}

std::string mismatchReport(const std::string& what, const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = splitLines(expected), b = splitLines(actual);
  size_t first = 0;
  while (first < a.size() && first < b.size() && a[first] == b[first]) ++first;
  auto quoted = [](const std::vector<std::string>& lines, size_t i) {
    return i < lines.size() ? "'" + lines[i] + "'" : std::string("(end of text)");
  };
  std::string out = what + " differs from the golden\n";
  if (first == a.size() && first == b.size()) {
    out += "the lines are equal; the texts differ in the newline at the end\n";
  } else {
    out += fmt::format("first difference at line {}:\n  expected: {}\n  actual:   {}\n", first + 1, quoted(a, first),
                       quoted(b, first));
  }
  out += unifiedDiff(a, b);
  out += "======== expected ========\n" + expected;
  out += "======== actual ==========\n" + actual;
  out += "==========================\n";
  out += "if the new text is right, run scripts/accept-goldens.sh and review git diff tests/golden\n";
  return out;
}

void reportMismatch(const std::string& what, const std::string& expected, const std::string& actual) {
  std::string report = mismatchReport(what, expected, actual);
  std::cerr << report << std::flush;
  FAIL_CHECK(report);
}

void checkGolden(const fs::path& path, const std::string& actual) {
  if (acceptMode()) {
    if (writeIfChanged(path, actual)) WARN("updated " << repoPath(path));
    return;
  }
  if (!fs::exists(path)) {
    FAIL_CHECK(repoPath(path) << " is missing; create it with scripts/accept-goldens.sh\nthe text is:\n" << actual);
    return;
  }
  std::string expected = readFile(path);
  if (expected == actual) return;
  reportMismatch(repoPath(path), expected, actual);
}

}  // namespace texc::testsupport
