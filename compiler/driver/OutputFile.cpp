#include "compiler/driver/OutputFile.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <utility>
#include <vector>

#include "compiler/driver/Frontend.h"

namespace texc {

void writeFileAtomic(const std::string& path, const std::string& bytes) {
  // A device or pipe (-o /dev/stdout) is written in place: renaming over it would replace it.
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) throw CommandError{kExitRuntime, fmt::format("cannot write '{}': it is a directory", path)};
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    out.close();
    if (!out) throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
    return;
  }
  std::string tmp = fmt::format("{}.tmp-{}", path, getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << bytes;
    out.close();
    if (!out) {
      std::remove(tmp.c_str());
      throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw CommandError{kExitRuntime, fmt::format("cannot write '{}'", path)};
  }
}

void emitOutput(const std::string& path, const std::string& bytes) {
  // /dev/stdout is a link to whatever standard output is; when that is a regular file,
  // writeFileAtomic would rename a new file over the link itself (or truncate the file), so
  // write to the stream instead.
  if (path.empty() || path == "-" || path == "/dev/stdout") {
    std::cout << bytes << std::flush;
    if (!std::cout) throw CommandError{kExitRuntime, "cannot write to standard output"};
  } else if (path == "/dev/stderr") {
    std::cerr << bytes << std::flush;
  } else {
    writeFileAtomic(path, bytes);
  }
}

namespace fs = std::filesystem;

StagedDirectory::StagedDirectory(fs::path target) : target_(std::move(target)) {
  auto fail = [&](const std::string& why) {
    return CommandError{kExitRuntime, fmt::format("cannot write --dump-dir '{}': {}", target_.string(), why)};
  };
  // The nearest part of the path that exists decides: a directory we may write into, or a failure.
  std::error_code ec;
  fs::path existing = fs::absolute(target_, ec).lexically_normal();
  while (!fs::exists(existing, ec) && existing != existing.parent_path()) existing = existing.parent_path();
  if (!fs::is_directory(existing, ec)) throw fail(fmt::format("'{}' is not a directory", existing.string()));
  if (::access(existing.c_str(), W_OK | X_OK) != 0) throw fail(fmt::format("'{}' is not writable", existing.string()));
  static std::atomic<unsigned> counter{0};
  staging_ = fs::temp_directory_path(ec) / fmt::format("texc-dumps-{}-{}", ::getpid(), counter.fetch_add(1));
  fs::create_directories(staging_, ec);
  if (ec) throw fail(fmt::format("cannot create a staging directory: {}", ec.message()));
}

StagedDirectory::~StagedDirectory() {
  std::error_code ec;
  fs::remove_all(staging_, ec);
}

void StagedDirectory::commit() {
  std::error_code ec;
  fs::create_directories(target_, ec);
  if (ec) throw CommandError{kExitRuntime, fmt::format("cannot write --dump-dir '{}': {}", target_.string(), ec.message())};
  std::vector<std::pair<fs::path, fs::path>> moves;  // hidden temporary, final name
  auto undo = [&] {
    for (const auto& [temporary, dest] : moves) fs::remove(temporary, ec);
  };
  for (const fs::directory_entry& e : fs::directory_iterator(staging_, ec)) {
    const fs::path dest = target_ / e.path().filename();
    const fs::path temporary = target_ / fmt::format(".{}.tmp-{}", e.path().filename().string(), ::getpid());
    std::error_code copyError;
    fs::copy_file(e.path(), temporary, fs::copy_options::overwrite_existing, copyError);
    if (copyError || fs::is_directory(dest, ec)) {
      fs::remove(temporary, ec);
      undo();
      throw CommandError{kExitRuntime, fmt::format("cannot write '{}': {}", dest.string(),
                                                   copyError ? copyError.message() : "a directory is in the way")};
    }
    moves.emplace_back(temporary, dest);
  }
  for (const auto& [temporary, dest] : moves) {
    std::error_code renameError;
    fs::rename(temporary, dest, renameError);
    if (renameError) {
      undo();
      throw CommandError{kExitRuntime, fmt::format("cannot write '{}': {}", dest.string(), renameError.message())};
    }
  }
}

}  // namespace texc
