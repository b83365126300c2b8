// Helpers shared by the golden tests of every layer: repository files, the accept mode
// (TEXC_ACCEPT=1 rewrites goldens instead of comparing them), and a readable mismatch report
// (first differing line, unified diff, both texts whole).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace texc::testsupport {

namespace fs = std::filesystem;

const fs::path& sourceRoot();
bool acceptMode();
std::string readFile(const fs::path& path);
// Writes `text` unless the file already holds exactly that; returns whether it wrote.
bool writeIfChanged(const fs::path& path, const std::string& text);
// `path` relative to the repository root, with forward slashes.
std::string repoPath(const fs::path& path);
// The .tex files directly in `dir` / anywhere under it (none when it does not exist), sorted.
std::vector<fs::path> texFilesIn(const fs::path& dir);
std::vector<fs::path> texFilesUnder(const fs::path& dir);

std::vector<std::string> splitLines(const std::string& text);
std::string unifiedDiff(const std::vector<std::string>& expected, const std::vector<std::string>& actual, size_t context = 3);
std::string mismatchReport(const std::string& what, const std::string& expected, const std::string& actual);
// Fails the current Catch section with the report; Catch wraps long message lines, so the report
// also goes to stderr as it is.
void reportMismatch(const std::string& what, const std::string& expected, const std::string& actual);
// Compares `actual` with the golden at `path` (or rewrites it in accept mode).
void checkGolden(const fs::path& path, const std::string& actual);

}  // namespace texc::testsupport
