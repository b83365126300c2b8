// Shared by the CUDA tests: the programs of the end-to-end suite (tests/e2e/*.tex with their
// `# e2e:` sizes, examples/*.tex with tests/e2e/examples.e2e), compiled to the loop IR in process.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/driver/Frontend.h"

namespace texc::cudatest {

namespace fs = std::filesystem;

struct TestProgram {
  std::string label;                 // "tests/e2e/matmul_odd.tex -D M=7 ..."
  fs::path path;
  std::vector<std::string> defines;  // {"M=7", ...}
};

inline std::vector<std::string> parseDefines(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;)
    if (word != "-D") out.push_back(word);
  return out;
}

inline TestProgram makeProgram(const fs::path& path, const std::vector<std::string>& defines) {
  TestProgram p;
  p.path = path;
  p.defines = defines;
  p.label = fs::relative(path, TEXC_SOURCE_DIR).string();
  for (const std::string& d : defines) p.label += " -D " + d;
  return p;
}

// Every e2e program and example at its test sizes, sorted by path.
inline std::vector<TestProgram> suitePrograms() {
  fs::path root = TEXC_SOURCE_DIR;
  std::vector<TestProgram> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(root / "tests" / "e2e"))
    if (e.path().extension() == ".tex") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string directive;
    for (std::string line; std::getline(in, line);)
      if (line.rfind("# e2e:", 0) == 0) directive = line.substr(6);
    out.push_back(makeProgram(f, parseDefines(directive)));
  }
  std::vector<std::pair<std::string, std::string>> examples;
  std::ifstream list(root / "tests" / "e2e" / "examples.e2e");
  for (std::string line; std::getline(list, line);) {
    size_t colon = line.find(".tex:");
    if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
    examples.push_back({line.substr(0, colon + 4), line.substr(colon + 5)});
  }
  std::sort(examples.begin(), examples.end());
  for (const auto& [name, args] : examples) out.push_back(makeProgram(root / "examples" / name, parseDefines(args)));
  return out;
}

// Runs the pipeline up to `until` with `options`; the result's `ok` says whether the program compiled.
inline std::unique_ptr<Compilation> compileTo(const TestProgram& p, Stage until, const PipelineOptions& options) {
  CompileRequest r;
  r.path = p.path.string();
  r.defines = p.defines;
  r.options = options;
  r.until = until;
  return compileProgram(r);
}

// ... for `target` and `fuse`, every other option its default.
inline std::unique_ptr<Compilation> compileTo(const TestProgram& p, Stage until, Target target = Target::Cuda,
                                              FuseMode fuse = FuseMode::All) {
  PipelineOptions o;
  o.target = target;
  o.fuse = fuse;
  return compileTo(p, until, o);
}

// The source-relative program `file` at `defines` through the cuda pipeline to CUDA C, with
// `options` (the target set to cuda) and, with `verify`, the IR verifiers after every pass.
inline std::unique_ptr<Compilation> compileForCuda(const std::string& file, const std::vector<std::string>& defines,
                                                   PipelineOptions options = {}, bool verify = false) {
  options.target = Target::Cuda;
  const TestProgram prog = makeProgram(fs::path(TEXC_SOURCE_DIR) / file, defines);
  CompileRequest r;
  r.path = prog.path.string();
  r.defines = prog.defines;
  r.options = options;
  r.until = Stage::CUDA;
  r.instrumentation.verifyEachPass = verify;
  return compileProgram(r);
}

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// compileForCuda with the verifiers on, required to succeed.
inline std::unique_ptr<Compilation> verifiedCuda(const std::string& file, const std::vector<std::string>& defines, PipelineOptions options = {}) {
  std::unique_ptr<Compilation> c = compileForCuda(file, defines, std::move(options), /*verify=*/true);
  REQUIRE(c->ok);
  REQUIRE(c->state.loops);
  return c;
}

}  // namespace texc::cudatest
