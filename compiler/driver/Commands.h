// The texc subcommands, each a function from its options to an exit status (spec section 6).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace texc {

struct CommonOptions {
  std::string file;
  std::vector<std::string> defines;  // -D NAME=VALUE
};

struct PipelineOptions {
  int optLevel = 3;  // -O0..-O3
};

struct CompileOptions {
  CommonOptions common;
  PipelineOptions pipeline;
  std::string target = "cpu";
  std::string emit = "llvm";
  std::string output;  // -o; empty or "-" is standard output
};

struct RunOptions {
  CommonOptions common;
  PipelineOptions pipeline;
  std::vector<std::string> inputs;  // NAME=PATH.npy
  std::optional<uint64_t> randomSeed;
  std::string outputDir = ".";
  std::string target = "cpu";
  int threads = 0;  // 0: one per core
  bool check = false;
  bool timePasses = false;
};

int commandCheck(const CommonOptions& options);
int commandCompile(const CompileOptions& options);
int commandRun(const RunOptions& options);

}  // namespace texc
