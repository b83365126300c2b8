// refbench: times the float64 reference interpreter alone on one program.
//
//     refbench FILE [-D NAME=VALUE]... [--repeat R] [--dump PATH]
//
// Inputs are uniform in [-1, 1) (seeded, rounded to the input's dtype as texc would read them);
// parsing, analysis and input generation happen before the clock starts. Prints the minimum and
// median of R evaluations (default 3). --dump writes every output as raw float64 data, outputs
// in declaration order, so two builds of the reference can be compared byte for byte.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/reference/Reference.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

using namespace texc;

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "refbench: " << why << "\nusage: refbench FILE [-D NAME=VALUE]... [--repeat R] [--dump PATH]\n";
  std::exit(2);
}

// The value texc reads from an input of dtype `t` holding `x`.
double roundTo(DType t, double x) {
  switch (t) {
    case DType::F64: return x;
    case DType::F32: return static_cast<float>(x);
    // f16/bf16: f32 is close enough for timing; the dump compares two references on the same values.
    case DType::F16:
    case DType::BF16: return static_cast<float>(x);
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, dump;
  LetOverrides overrides;
  int repeat = 3;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-D" && i + 1 < argc) {
      std::string d = argv[++i];
      size_t eq = d.find('=');
      if (eq == std::string::npos) usage("-D wants NAME=VALUE");
      overrides[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--dump" && i + 1 < argc) {
      dump = argv[++i];
    } else if (path.empty() && a[0] != '-') {
      path = a;
    } else {
      usage("unexpected argument '" + a + "'");
    }
  }
  if (path.empty()) usage("no FILE");
  std::ifstream in(path);
  if (!in) usage("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();

  SourceFile file(path, text.str());
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  std::optional<Program> program;
  if (!diags.hasErrors()) program = analyze(module, diags, overrides);
  if (!program || diags.hasErrors()) {
    std::cerr << diags.render();
    return 1;
  }

  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<RefTensor> inputs;
  for (int id : program->inputs) {
    const TensorInfo& info = program->tensors[id];
    RefTensor t{info.shape, std::vector<double>(static_cast<size_t>(info.numElements()))};
    for (double& x : t.data) x = roundTo(info.dtype, dist(rng));
    inputs.push_back(std::move(t));
  }

  // Wall time, and the process's CPU time (which a busy machine inflates less).
  std::vector<double> seconds, cpu;
  std::vector<RefTensor> result;
  for (int r = 0; r < repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    std::clock_t cpuStart = std::clock();
    result = evaluateReference(*program, inputs);
    cpu.push_back(static_cast<double>(std::clock() - cpuStart) / CLOCKS_PER_SEC);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(cpu.begin(), cpu.end());
  int64_t computed = 0;
  for (const TensorInfo& t : program->tensors)
    if (!t.isInput) computed += t.numElements();
  std::printf("%s: reference min %.4f s, median %.4f s (CPU min %.4f s) over %d runs, %lld elements computed\n", path.c_str(),
              seconds.front(), seconds[seconds.size() / 2], cpu.front(), repeat, static_cast<long long>(computed));

  if (!dump.empty()) {
    std::ofstream out(dump, std::ios::binary);
    for (int id : program->outputs)
      out.write(reinterpret_cast<const char*>(result[id].data.data()),
                static_cast<std::streamsize>(result[id].data.size() * sizeof(double)));
    if (!out) usage("cannot write " + dump);
  }
  return 0;
}
