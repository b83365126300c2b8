// texc-difftest: random programs through every pipeline variant against the float64 reference.
//
//   texc-difftest [--seed S] [--count N] [--time-limit SECONDS] [--save-failures DIR]
//                 [--min-programs N] [--max-inconclusive PERCENT] [--cpu NAME]
//   texc-difftest --print --seed S          the program of seed S, and nothing else
//   texc-difftest FILE.tex...               check given programs instead of random ones
//
// Program k of a run is generated from seed S + k, so `--seed S+k --count 1` reproduces it.
// A failing program is shrunk (Shrinker.h) and, with --save-failures, written to DIR as
// seed-N.tex (as generated) and seed-N.min.tex (shrunk, ready for tests/e2e/). Exits 1 when any
// program failed or the generator produced an invalid one, or when the run checked too little:
// fewer programs than --min-programs (a time limit hit early) or more inconclusive ones than
// --max-inconclusive percent; 2 on bad usage. --cpu compiles every CPU variant for another CPU
// that this host can run (haswell on an AVX-512 host: the AVX2 code of an AMD EPYC).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "compiler/target/CpuTarget.h"
#include "tests/random/DiffTest.h"
#include "tests/random/ProgramGenerator.h"
#include "tests/random/Shrinker.h"

namespace {

using namespace texc::random;

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The variants a failure report names ("[--fuse=none -O0 ..."), so shrinking reruns only those.
std::vector<Variant> failingVariants(const std::vector<Variant>& all, const std::string& report) {
  std::vector<Variant> out;
  for (const Variant& v : all)
    if (report.find("[" + v.name + "]") != std::string::npos || report.find("[" + v.name + " ") != std::string::npos)
      out.push_back(v);
  return out.empty() ? all : out;
}

// `text` as `#` comment lines, at most `maxLines` of them.
std::string asComment(const std::string& text, int maxLines) {
  std::istringstream in(text);
  std::string out;
  int n = 0;
  for (std::string line; std::getline(in, line) && n < maxLines; ++n) out += "#   " + line + "\n";
  return out;
}

struct Options {
  uint64_t seed = 1;
  int64_t count = 100;
  double timeLimit = 0;
  double timeout = 120;
  int64_t minPrograms = 0;
  double maxInconclusivePercent = 100;
  std::string saveDir;
  std::string cpu = "host";
  bool shrink = true;
  bool print = false;
  bool verbose = false;
  CheckOptions check;
  std::vector<std::string> files;
};

void saveFailure(const Options& o, const std::string& stem, const std::string& source, const std::string& minimal,
                 const Outcome& out) {
  std::filesystem::create_directories(o.saveDir);
  std::ofstream(std::filesystem::path(o.saveDir) / (stem + ".tex")) << source;
  std::ofstream(std::filesystem::path(o.saveDir) / (stem + ".min.tex"))
      << "# e2e:\n# Found by texc-difftest (" << stem << ", " << verdictName(out.verdict) << "), then shrunk.\n"
      << asComment(out.report, 12) << minimal;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"texc-difftest: random programs under every pipeline variant against the float64 reference"};
  app.add_option("--seed", o.seed, "seed of the first program (program k uses seed + k)");
  app.add_option("--count", o.count, "programs to test (default 100)");
  app.add_option("--time-limit", o.timeLimit, "stop starting programs after this many seconds (0: no limit)");
  app.add_option("--timeout", o.timeout, "seconds one program may take under all variants before it counts as a hang");
  app.add_option("--save-failures", o.saveDir, "write each failing program and its shrunk form to this directory");
  app.add_flag("!--no-shrink", o.shrink, "report failures without shrinking them");
  app.add_option("--min-programs", o.minPrograms, "fail when fewer programs than this ran (say, the time limit came first)");
  app.add_option("--max-inconclusive", o.maxInconclusivePercent, "fail when more than this percentage of the programs was inconclusive")
      ->check(CLI::Range(0.0, 100.0));
  app.add_flag("--print", o.print, "print the program of --seed and exit");
  app.add_flag("-v,--verbose", o.verbose, "print every program's verdict");
  app.add_flag("--damage-for-test", o.check.damageForTest,
               "(tests of the tester) damage one element of every run's first output, so every program fails");
  app.add_option("--cpu", o.cpu, "compile the CPU variants for this CPU (an LLVM CPU name this host can run; default host)");
  app.add_option("files", o.files, "check these .tex files instead of random programs");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (o.print) {
    std::cout << generateProgram(o.seed);
    return 0;
  }
  std::vector<std::string> missing;
  try {
    missing = texc::missingHostFeatures(texc::cpuTarget(o.cpu));
  } catch (const std::invalid_argument& e) {
    std::cerr << "texc-difftest: " << e.what() << "\n";
    return 2;
  }
  if (!missing.empty()) {
    std::cerr << fmt::format("texc-difftest: --cpu {}: this host lacks {} of its features ({}), so its code cannot run here\n", o.cpu,
                             missing.size(), missing.front());
    return 2;
  }
  const std::vector<Variant> all = variantsFor(o.cpu);

  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::map<Verdict, int64_t> counts;
  int64_t programs = 0, runs = 0, bitPrograms = 0, bitComparisons = 0, cpuPrograms = 0, cpuComparisons = 0;
  int64_t total = o.files.empty() ? o.count : static_cast<int64_t>(o.files.size());
  for (int64_t k = 0; k < total; ++k) {
    if (o.timeLimit > 0 && elapsed() > o.timeLimit) break;
    std::string stem, source;
    if (o.files.empty()) {
      uint64_t seed = o.seed + static_cast<uint64_t>(k);
      stem = "seed-" + std::to_string(seed);
      source = generateProgram(seed);
    } else {
      stem = std::filesystem::path(o.files[static_cast<size_t>(k)]).stem().string();
      source = readFile(o.files[static_cast<size_t>(k)]);
    }
    Outcome out = runIsolated(source, all, o.timeout, o.check);
    ++programs;
    ++counts[out.verdict];
    runs += out.variantRuns;
    bitComparisons += out.fusionBitComparisons;
    bitPrograms += out.fusionBitComparisons > 0;
    cpuComparisons += out.cpuBitComparisons;
    cpuPrograms += out.cpuBitComparisons > 0;
    if (o.verbose) std::cout << fmt::format("{}: {}\n", stem, verdictName(out.verdict));
    if (programs % 250 == 0)
      std::cerr << fmt::format("{} programs in {:.0f} s, {} failures so far\n", programs, elapsed(),
                               counts[Verdict::Mismatch] + counts[Verdict::Crash] + counts[Verdict::Hang] + counts[Verdict::Invalid]);
    if (out.verdict == Verdict::Pass || out.verdict == Verdict::Inconclusive) continue;

    std::cout << fmt::format("{}: {}\n{}", stem, verdictName(out.verdict), out.report);
    if (out.verdict == Verdict::Invalid) {
      std::cout << "the generator produced an invalid program:\n" << source;
      continue;
    }
    std::string minimal = source;
    if (o.shrink) {
      std::vector<Variant> vs = failingVariants(all, out.report);
      Verdict want = out.verdict;
      ShrinkStats st;
      minimal = shrinkProgram(
          source, [&](const std::string& text) { return runIsolated(text, vs, o.timeout, o.check).verdict == want; }, 400, &st);
      std::cout << fmt::format("shrunk in {} attempts ({} steps kept) to:\n{}", st.attempts, st.accepted, minimal);
    } else {
      std::cout << source;
    }
    if (!o.saveDir.empty()) saveFailure(o, stem, source, minimal, out);
  }

  int64_t failures = counts[Verdict::Mismatch] + counts[Verdict::Crash] + counts[Verdict::Hang];
  std::cout << fmt::format(
      "{} programs, {} variant runs ({} variants x threads; each CPU run twice on poisoned memory) in {:.1f} s: {} passed, {} "
      "inconclusive, {} mismatches, {} crashes, {} hangs, {} invalid; CPU code for {}\n",
      programs, runs, all.size(), elapsed(), counts[Verdict::Pass], counts[Verdict::Inconclusive],
      counts[Verdict::Mismatch], counts[Verdict::Crash], counts[Verdict::Hang], counts[Verdict::Invalid],
      texc::cpuTarget(o.cpu).describe());
  std::cout << fmt::format("{} programs' fused runs were compared with their unfused ones bit for bit ({} comparisons)\n",
                           bitPrograms, bitComparisons);
  std::string others;
  for (const Variant& v : crossCpuVariants(o.cpu))
    others += (others.empty() ? "" : ", ") + (v.options.phaseBlock > 0 ? std::string("their loops in phases") : "their code for " + v.options.cpu);
  std::cout << fmt::format("{} programs' runs were compared with {} bit for bit ({} comparisons)\n", cpuPrograms,
                           others.empty() ? "no other code" : others, cpuComparisons);
  // A run that checked too little is a failure too: a slow machine must not pass by running few.
  bool tooLittle = false;
  if (programs < o.minPrograms) {
    std::cout << fmt::format("too few programs: {} ran, --min-programs is {}\n", programs, o.minPrograms);
    tooLittle = true;
  }
  const double inconclusivePercent = programs ? 100.0 * static_cast<double>(counts[Verdict::Inconclusive]) / static_cast<double>(programs) : 0;
  if (inconclusivePercent > o.maxInconclusivePercent) {
    std::cout << fmt::format("too many inconclusive programs: {} of {} ({:.1f} %), --max-inconclusive is {} %\n",
                             counts[Verdict::Inconclusive], programs, inconclusivePercent, o.maxInconclusivePercent);
    tooLittle = true;
  }
  return failures + counts[Verdict::Invalid] > 0 || tooLittle ? 1 : 0;
}
