// Writing command output: to standard output, or to a file all or nothing (a temporary file
// beside it, renamed into place), so a failed command never leaves a partial file.
#pragma once

#include <filesystem>
#include <string>

namespace texc {

void writeFileAtomic(const std::string& path, const std::string& bytes);

// Standard output when `path` is empty or "-", otherwise writeFileAtomic.
void emitOutput(const std::string& path, const std::string& bytes);

// A directory of outputs written all or nothing, as every output is (spec section 6: nothing is
// written to an output path when the command fails): `--dump-dir`. The command writes into a
// private staging directory under the system's temporary directory; commit() moves its files
// into the target (creating it and its parents), each copied to a hidden temporary beside its
// final name and renamed into place once all are copied. The staging directory goes either way.
class StagedDirectory {
 public:
  // Checks at once that `target` can be created or written into: a file in the way or an
  // unwritable directory is exit 3 before the command runs.
  explicit StagedDirectory(std::filesystem::path target);
  ~StagedDirectory();
  StagedDirectory(const StagedDirectory&) = delete;
  StagedDirectory& operator=(const StagedDirectory&) = delete;

  std::string stagingPath() const { return staging_.string(); }
  void commit();

 private:
  std::filesystem::path target_;
  std::filesystem::path staging_;
};

}  // namespace texc
