#include "runtime/Npy.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <system_error>
#include <utility>

namespace texc {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic("\x93NUMPY", 6);
// A header longer than this is not something numpy writes; refusing it early keeps a corrupt
// length field from allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = 16u << 20;
// Nested tuples deeper than this are not a header numpy writes (and would recurse deeply).
constexpr int kMaxNesting = 16;

[[noreturn]] void fail(const std::string& where, std::string_view what) {
  throw NpyError(fmt::format("{}: {}", where, what));
}

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Shows header text in a message: printable ASCII as is, the rest escaped, cut to a line.
std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 120;
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else if (c == '\n')
      out += "\\n";
    else
      out += fmt::format("\\x{:02x}", c);
  }
  if (text.size() > kMax) out += "...";
  return out;
}

std::string shapeTuple(const std::vector<int64_t>& shape) {
  if (shape.empty()) return "()";
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) out += ",";  // a 1-tuple needs its comma in Python
  return out + ")";
}

// ---- The header: a Python dict literal ------------------------------------------------------

// The subset of Python literals a .npy header can hold.
struct PyValue {
  enum class Kind { Str, Bool, Int, None, Tuple, List };
  Kind kind = Kind::None;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;
  std::string_view text;  // the literal as written, for messages
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  // Parses `{key: value, ...}` followed only by whitespace.
  std::vector<std::pair<std::string, PyValue>> parseDict() {
    std::vector<std::pair<std::string, PyValue>> entries;
    skipSpace();
    expect('{', "the header to start with '{'");
    skipSpace();
    while (!eat('}')) {
      skipSpace();
      if (peek() != '\'' && peek() != '"') malformed("expected a quoted key");
      std::string key = parseString();
      skipSpace();
      expect(':', fmt::format("':' after key '{}'", key));
      skipSpace();
      PyValue value = parseValue(0);
      entries.emplace_back(std::move(key), std::move(value));
      skipSpace();
      if (eat(',')) {
        skipSpace();
        continue;
      }
      skipSpace();
      if (peek() != '}') malformed("expected ',' or '}' after a value");
    }
    skipSpace();
    if (pos_ != text_.size()) malformed("unexpected text after the closing '}'");
    return entries;
  }

  [[noreturn]] void malformed(std::string_view why) const {
    fail(where_, fmt::format("malformed .npy header: {} at offset {} in \"{}\"", why, pos_,
                             excerpt(text_)));
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, std::string_view what) {
    if (!eat(c)) malformed(fmt::format("expected {}", what));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool startsWith(std::string_view word) const { return text_.substr(pos_).starts_with(word); }

  std::string parseString() {
    char q = text_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) malformed("unterminated string");
      char c = text_[pos_++];
      if (c == q) return out;
      if (c == '\\') {
        if (pos_ >= text_.size()) malformed("unterminated string");
        c = text_[pos_++];
      }
      out += c;
    }
  }

  PyValue parseValue(int depth) {
    if (depth > kMaxNesting) malformed("values nested too deeply");
    size_t start = pos_;
    PyValue v;
    char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = PyValue::Kind::Str;
      v.str = parseString();
    } else if (c == '(' || c == '[') {
      v.kind = c == '(' ? PyValue::Kind::Tuple : PyValue::Kind::List;
      char close = c == '(' ? ')' : ']';
      ++pos_;
      skipSpace();
      while (!eat(close)) {
        v.items.push_back(parseValue(depth + 1));
        skipSpace();
        if (eat(',')) {
          skipSpace();
          continue;
        }
        if (peek() != close) malformed(fmt::format("expected ',' or '{}'", close));
      }
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v.kind = PyValue::Kind::Int;
      bool negative = eat('-');
      if (!(peek() >= '0' && peek() <= '9')) malformed("expected a digit");
      int64_t n = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(n, 10, &n) || __builtin_add_overflow(n, peek() - '0', &n))
          malformed("integer too large");
        ++pos_;
      }
      eat('L');  // Python 2 era writers suffix longs with L
      v.integer = negative ? -n : n;
    } else if (startsWith("True")) {
      pos_ += 4;
      v.kind = PyValue::Kind::Bool;
      v.boolean = true;
    } else if (startsWith("False")) {
      pos_ += 5;
      v.kind = PyValue::Kind::Bool;
    } else if (startsWith("None")) {
      pos_ += 4;
    } else {
      malformed("expected a value");
    }
    v.text = text_.substr(start, pos_ - start);
    return v;
  }

  std::string_view text_;
  size_t pos_ = 0;
  const std::string& where_;
};

struct Header {
  ElemType type = ElemType::F32;
  std::vector<int64_t> shape;
};

ElemType parseDescr(const PyValue& descr, const std::string& where) {
  if (descr.kind != PyValue::Kind::Str)
    fail(where, fmt::format("unsupported dtype {} (structured dtypes are not supported; texc reads "
                            "'<f4', '<f8', '<f2' and bf16 as '<V2')",
                            descr.text));
  const std::string& d = descr.str;
  if (d == "<f4") return ElemType::F32;
  if (d == "<f8") return ElemType::F64;
  if (d == "<f2") return ElemType::F16;
  if (d == "<V2" || d == "|V2") return ElemType::BF16;
  if (!d.empty() && d[0] == '>')
    fail(where, fmt::format("big-endian dtype '{}' is not supported; save little-endian data, e.g. "
                            "arr.astype('<{}')",
                            d, d.substr(1)));
  fail(where, fmt::format("unsupported dtype '{}' (texc reads '<f4', '<f8', '<f2' and bf16 as "
                          "'<V2')",
                          d));
}

Header parseHeader(std::string_view text, const std::string& where) {
  HeaderParser parser(text, where);
  auto entries = parser.parseDict();
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& [key, value] : entries) {
    const PyValue** slot = key == "descr"           ? &descr
                           : key == "fortran_order" ? &fortran
                           : key == "shape"         ? &shape
                                                    : nullptr;
    if (!slot)
      fail(where,
           fmt::format("malformed .npy header: unexpected key '{}' in \"{}\"", key, excerpt(text)));
    if (*slot)
      fail(where, fmt::format("malformed .npy header: key '{}' appears twice in \"{}\"", key,
                              excerpt(text)));
    *slot = &value;
  }
  for (auto [name, slot] :
       {std::pair{"descr", descr}, {"fortran_order", fortran}, {"shape", shape}})
    if (!slot)
      fail(where,
           fmt::format("malformed .npy header: missing key '{}' in \"{}\"", name, excerpt(text)));
  if (fortran->kind != PyValue::Kind::Bool)
    fail(where, fmt::format("malformed .npy header: 'fortran_order' is {}, not True or False",
                            fortran->text));
  bool isSequence = shape->kind == PyValue::Kind::Tuple || shape->kind == PyValue::Kind::List;
  if (!isSequence)
    fail(where, fmt::format("malformed .npy header: 'shape' is {}, not a tuple", shape->text));

  Header h;
  h.type = parseDescr(*descr, where);
  if (fortran->boolean)
    fail(where, "Fortran-order arrays are not supported; save with np.ascontiguousarray");
  for (const PyValue& dim : shape->items) {
    if (dim.kind != PyValue::Kind::Int)
      fail(where, fmt::format("malformed .npy header: shape entry {} is not an integer", dim.text));
    if (dim.integer < 0)
      fail(where, fmt::format("malformed .npy header: negative extent {} in shape {}", dim.integer,
                              shape->text));
    h.shape.push_back(dim.integer);
  }
  return h;
}

// ---- Reading -------------------------------------------------------------------------------

// Where the bytes come from: memory, or a file that may be a pipe of unknown length.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes; returns fewer only at the end of the input.
  virtual size_t read(void* dst, size_t n) = 0;
  // The bytes left, when known without reading them.
  virtual std::optional<uint64_t> remaining() const = 0;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  size_t read(void* dst, size_t n) override {
    size_t k = std::min(n, bytes_.size() - pos_);
    if (k) std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  std::optional<uint64_t> remaining() const override { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

class FileSource : public ByteSource {
 public:
  FileSource(std::FILE* file, std::optional<uint64_t> size, const std::string& where)
      : file_(file), left_(size), where_(where) {}
  size_t read(void* dst, size_t n) override {
    size_t total = 0;
    auto* out = static_cast<char*>(dst);
    while (total < n) {
      size_t k = std::fread(out + total, 1, n - total, file_);
      total += k;
      if (k == 0) {
        if (std::ferror(file_)) fail(where_, fmt::format("read error: {}", std::strerror(errno)));
        break;
      }
    }
    if (left_) *left_ -= std::min<uint64_t>(*left_, total);
    return total;
  }
  std::optional<uint64_t> remaining() const override { return left_; }

 private:
  std::FILE* file_;
  std::optional<uint64_t> left_;
  const std::string& where_;
};

Tensor readFrom(ByteSource& src, const std::string& where) {
  unsigned char pre[12];
  size_t got = src.read(pre, 10);
  if (got == 0) fail(where, "not a .npy file (the file is empty)");
  if (got < kMagic.size() || std::memcmp(pre, kMagic.data(), kMagic.size()) != 0)
    fail(where, "not a .npy file (it does not start with the magic bytes \\x93NUMPY)");
  if (got < 8) fail(where, "truncated .npy header (the file ends before the version)");
  unsigned major = pre[6], minor = pre[7];
  if (!(major >= 1 && major <= 3 && minor == 0))
    fail(where, fmt::format("unsupported .npy format version {}.{} (texc reads 1.0, 2.0 and 3.0)",
                            major, minor));
  size_t preLen = major == 1 ? 10 : 12;
  if (preLen == 12 && got == 10) got += src.read(pre + 10, 2);
  if (got < preLen) fail(where, "truncated .npy header (the file ends inside the header length)");
  uint64_t headerLen = pre[8] | (uint64_t{pre[9]} << 8);
  if (preLen == 12) headerLen |= (uint64_t{pre[10]} << 16) | (uint64_t{pre[11]} << 24);

  auto left = src.remaining();
  if (left && *left < headerLen)
    fail(where, fmt::format("truncated .npy header: it declares {} bytes but {} follow", headerLen,
                            *left));
  if (headerLen > kMaxHeaderBytes)
    fail(where, fmt::format("malformed .npy header: implausibly long ({} bytes)", headerLen));
  std::string headerText(headerLen, '\0');
  got = src.read(headerText.data(), headerLen);
  if (got < headerLen)
    fail(where,
         fmt::format("truncated .npy header: it declares {} bytes but {} follow", headerLen, got));

  Header h = parseHeader(headerText, where);
  size_t expected = 0;
  try {
    expected = byteSize(h.type, h.shape);
  } catch (const std::length_error&) {
    fail(where, fmt::format("shape {} is too large", shapeTuple(h.shape)));
  }
  std::string what = describe(h.type, h.shape);
  auto sizeMismatch = [&](uint64_t actual) {
    if (actual < expected)
      fail(where, fmt::format("data is truncated: {} needs {} bytes but the file holds {}", what,
                              expected, actual));
    fail(where, fmt::format("{} unexpected bytes after the data: {} needs {} bytes but the file "
                            "holds {}",
                            actual - expected, what, expected, actual));
  };
  // When the size is known, refuse before allocating what a corrupt shape asks for.
  if ((left = src.remaining()) && *left != expected) sizeMismatch(*left);

  Tensor t;
  t.type = h.type;
  t.shape = std::move(h.shape);
  try {
    t.data = Buffer(expected);
  } catch (const std::bad_alloc&) {
    fail(where, fmt::format("out of memory allocating {} bytes for {}", expected, what));
  }
  got = src.read(t.data.data(), expected);
  uint64_t extra = 0;
  char scratch[4096];
  while (size_t k = src.read(scratch, sizeof scratch)) extra += k;
  if (got != expected || extra != 0) sizeMismatch(got + extra);
  return t;
}

// ---- Writing -------------------------------------------------------------------------------

std::string encodeHeader(const Tensor& tensor) {
  const char* descr = "<f4";
  switch (tensor.type) {
    case ElemType::F32:
      descr = "<f4";
      break;
    case ElemType::F64:
      descr = "<f8";
      break;
    case ElemType::F16:
      descr = "<f2";
      break;
    case ElemType::BF16:
      descr = "<V2";
      break;
  }
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr,
                                 shapeTuple(tensor.shape));
  // Pad with spaces and end in '\n' so the data starts 64-byte aligned, as numpy does.
  auto build = [&](size_t preLen) {
    size_t total = preLen + dict.size() + 1;
    total = (total + 63) / 64 * 64;
    return std::string(dict) + std::string(total - preLen - dict.size() - 1, ' ') + "\n";
  };
  std::string header = build(10);
  uint8_t major = 1;
  if (header.size() > 0xffff) {
    major = 2;
    header = build(12);
  }
  std::string out(kMagic);
  out += static_cast<char>(major);
  out += '\0';
  uint64_t n = header.size();
  int lenBytes = major == 1 ? 2 : 4;
  for (int i = 0; i < lenBytes; ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header;
}

size_t checkedDataSize(const Tensor& tensor, const fs::path& path) {
  size_t bytes = 0;
  try {
    bytes = byteSize(tensor);
  } catch (const std::length_error& e) {
    fail(path.string(), fmt::format("cannot write tensor: {}", e.what()));
  }
  if (tensor.data.size() < bytes)
    fail(path.string(), fmt::format("cannot write {}: its buffer holds {} bytes, not {}",
                                    describe(tensor), tensor.data.size(), bytes));
  return bytes;
}

// Writes a whole .npy file; on failure removes what was written and throws. `exclusive` refuses
// to replace an existing file (temporaries must never clobber someone else's file).
void writeFile(const fs::path& path, const Tensor& tensor, bool exclusive) {
  size_t dataBytes = checkedDataSize(tensor, path);
  std::string header = encodeHeader(tensor);
  std::FILE* f = std::fopen(path.c_str(), exclusive ? "wbx" : "wb");
  if (!f) fail(path.string(), fmt::format("cannot write: {}", std::strerror(errno)));
  bool ok = std::fwrite(header.data(), 1, header.size(), f) == header.size();
  if (ok && dataBytes) ok = std::fwrite(tensor.data.data(), 1, dataBytes, f) == dataBytes;
  if (ok) ok = std::fflush(f) == 0;
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::error_code ec;
    fs::remove(path, ec);
    fail(path.string(), fmt::format("cannot write: {}", std::strerror(err ? err : EIO)));
  }
}

}  // namespace

Tensor parseNpy(std::string_view bytes, const std::string& where) {
  MemorySource src(bytes);
  return readFrom(src, where);
}

Tensor readNpy(const fs::path& path) {
  std::string where = path.string();
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  // A failed stat other than "missing" (e.g. a parent without search permission) says why.
  if (ec && ec != std::errc::no_such_file_or_directory)
    fail(where, fmt::format("cannot read: {}", ec.message()));
  if (!fs::exists(st)) fail(where, "cannot read: no such file");
  if (fs::is_directory(st)) fail(where, "cannot read: it is a directory, not a .npy file");
  std::optional<uint64_t> size;
  if (fs::is_regular_file(st)) {
    uintmax_t n = fs::file_size(path, ec);
    if (!ec) size = n;
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (!file) fail(where, fmt::format("cannot read: {}", std::strerror(errno)));
  FileSource src(file.get(), size, where);
  return readFrom(src, where);
}

void writeNpy(const fs::path& path, const Tensor& tensor) { writeFile(path, tensor, false); }

std::string encodeNpy(const Tensor& tensor) {
  size_t dataBytes = checkedDataSize(tensor, "<memory>");
  std::string out = encodeHeader(tensor);
  out.append(reinterpret_cast<const char*>(tensor.data.data()), dataBytes);
  return out;
}

std::string describe(ElemType type, const std::vector<int64_t>& shape) {
  std::string out(elemName(type));
  if (shape.empty()) return out;
  out += '[';
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + ']';
}

std::string describe(const Tensor& tensor) { return describe(tensor.type, tensor.shape); }

void checkMatches(const Tensor& tensor, ElemType expectedType,
                  const std::vector<int64_t>& expectedShape, std::string_view name,
                  const fs::path& path) {
  if (tensor.type == expectedType && tensor.shape == expectedShape) return;
  throw NpyError(fmt::format("input '{}': file {} holds {} but the program declares {}", name,
                             path.string(), describe(tensor),
                             describe(expectedType, expectedShape)));
}

void ensureOutputDir(const fs::path& dir) {
  fs::path d = dir.empty() ? fs::path(".") : dir;
  std::error_code ec;
  fs::file_status st = fs::status(d, ec);
  if (fs::exists(st) && !fs::is_directory(st))
    throw NpyError(fmt::format("output directory {} exists and is not a directory", quoted(d)));
  if (!fs::exists(st)) {
    fs::create_directories(d, ec);
    if (ec)
      throw NpyError(fmt::format("cannot create output directory {}: {}", quoted(d), ec.message()));
  }
  if (::access(d.c_str(), W_OK | X_OK) != 0)
    throw NpyError(
        fmt::format("output directory {} is not writable: {}", quoted(d), std::strerror(errno)));
}

// ---- AtomicOutputSet -----------------------------------------------------------------------

AtomicOutputSet::~AtomicOutputSet() { abort(); }

void AtomicOutputSet::add(const fs::path& finalPath, const Tensor& tensor) {
  if (failed_)
    throw NpyError(
        fmt::format("{}: not written because an earlier output failed", finalPath.string()));
  if (!finalPath.has_filename())
    throw NpyError(fmt::format("{}: an output path needs a file name", finalPath.string()));
  std::error_code ec;
  fs::path key = fs::absolute(finalPath, ec).lexically_normal();
  for (const Entry& e : entries_)
    if (fs::absolute(e.final, ec).lexically_normal() == key)
      throw NpyError(fmt::format("{}: the same output path is written twice", finalPath.string()));
  // Hidden, in the same directory (so rename() cannot cross file systems), unique per process
  // and per call.
  static std::atomic<uint64_t> counter{0};
  fs::path temporary =
      finalPath.parent_path() /
      fmt::format(".{}.tmp-{}-{}", finalPath.filename().string(), ::getpid(), counter.fetch_add(1));
  try {
    writeFile(temporary, tensor, true);
  } catch (...) {
    abort();
    failed_ = true;
    throw;
  }
  entries_.push_back({temporary, finalPath});
}

void AtomicOutputSet::commit() {
  if (failed_) throw NpyError("outputs not written: an earlier output failed");
  // The one rename failure that is foreseeable; checking it first keeps the set all or nothing.
  for (const Entry& e : entries_) {
    std::error_code ec;
    if (fs::is_directory(e.final, ec)) {
      std::string msg =
          fmt::format("{}: cannot write output: a directory is in the way", e.final.string());
      abort();
      throw NpyError(msg);
    }
  }
  for (size_t i = 0; i < entries_.size(); ++i) {
    std::error_code ec;
    fs::rename(entries_[i].temporary, entries_[i].final, ec);
    if (ec) {
      std::string msg = fmt::format("{}: cannot move output into place: {}",
                                    entries_[i].final.string(), ec.message());
      entries_.erase(entries_.begin(), entries_.begin() + static_cast<ptrdiff_t>(i));
      abort();
      throw NpyError(msg);
    }
  }
  entries_.clear();
}

void AtomicOutputSet::abort() {
  for (const Entry& e : entries_) {
    std::error_code ec;
    fs::remove(e.temporary, ec);
  }
  entries_.clear();
  failed_ = false;
}

std::vector<fs::path> AtomicOutputSet::temporaries() const {
  std::vector<fs::path> out;
  for (const Entry& e : entries_) out.push_back(e.temporary);
  return out;
}

}  // namespace texc
