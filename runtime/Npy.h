// Reading and writing NumPy .npy files (format versions 1.0-3.0), the only tensor file format
// texc exchanges with users. Every refusal is an NpyError whose message names the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/Buffer.h"

namespace texc {

// A .npy file that cannot be read, does not match, or cannot be written. Callers map it to exit
// status 3 (a run-time failure).
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a little-endian, C-order array of <f4, <f8, <f2, or bf16 stored as the raw 2-byte void
// dtype (<V2 or |V2, what numpy writes for ml_dtypes.bfloat16). Anything else is refused.
Tensor readNpy(const std::filesystem::path& path);
// The same on bytes already in memory; `where` names them in messages (used by fuzzers).
Tensor parseNpy(std::string_view bytes, const std::string& where);

// Writes format 1.0 (2.0 when the header needs more than 65535 bytes), the header padded with
// spaces so the data starts at a multiple of 64 bytes. bf16 is written as '<V2'.
void writeNpy(const std::filesystem::path& path, const Tensor& tensor);
// The bytes writeNpy would write.
std::string encodeNpy(const Tensor& tensor);

// "f32[3, 4]"; a scalar is just "f32", as TYPE is written in .tex sources.
std::string describe(ElemType type, const std::vector<int64_t>& shape);
std::string describe(const Tensor& tensor);

// Throws unless `tensor` has the declared type and shape, e.g.
// "input 'x': file a.npy holds f64[3, 4] but the program declares f32[4, 3]".
void checkMatches(const Tensor& tensor, ElemType expectedType,
                  const std::vector<int64_t>& expectedShape, std::string_view name,
                  const std::filesystem::path& path);

// Creates `dir` (and its parents) if missing and checks that files can be created in it.
// An empty path means the current directory.
void ensureOutputDir(const std::filesystem::path& dir);

// Writes a set of outputs all or nothing. add() writes each tensor to a hidden temporary file
// next to its final path; commit() renames them all into place. A failed add() removes every
// temporary written so far, and so does destruction without commit().
class AtomicOutputSet {
 public:
  AtomicOutputSet() = default;
  ~AtomicOutputSet();
  AtomicOutputSet(const AtomicOutputSet&) = delete;
  AtomicOutputSet& operator=(const AtomicOutputSet&) = delete;

  // Throws NpyError if the temporary cannot be written or `finalPath` was already added.
  void add(const std::filesystem::path& finalPath, const Tensor& tensor);
  // Renames every temporary into place. Throws NpyError (after removing what is left) if an
  // add() failed before or a rename fails; final paths that are directories are refused before
  // anything is renamed.
  void commit();
  // Removes every temporary now and forgets any failure; the set can then be reused.
  void abort();

  // The temporary paths written so far (for tests and diagnostics).
  std::vector<std::filesystem::path> temporaries() const;

 private:
  struct Entry {
    std::filesystem::path temporary;
    std::filesystem::path final;
  };
  std::vector<Entry> entries_;
  bool failed_ = false;
};

}  // namespace texc
