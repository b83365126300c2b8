// Helpers shared by the reference interpreter tests: analyse source text, run it on named
// inputs, and check a result element by element.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/reference/Reference.h"
#include "frontend/Diagnostics.h"
#include "frontend/Parser.h"
#include "frontend/Program.h"
#include "frontend/Sema.h"
#include "frontend/Source.h"

namespace texc::test {

// Parses and analyses `text`; the test fails (showing the diagnostics) if it has errors.
inline Program analyzeSource(const std::string& text, const LetOverrides& overrides = {}) {
  SourceFile file("t.tex", text);
  DiagnosticEngine diags(&file);
  Module module = parse(file, diags);
  INFO(diags.render());
  REQUIRE_FALSE(diags.hasErrors());
  std::optional<Program> program = analyze(module, diags, overrides);
  INFO(diags.render());
  REQUIRE(program.has_value());
  return std::move(*program);
}

// A program and everything the reference computed for it, looked up by tensor name.
struct RefRun {
  Program program;
  std::vector<RefTensor> tensors;

  const RefTensor& operator[](const std::string& name) const {
    int id = program.findTensor(name);
    INFO("tensor " << name);
    REQUIRE(id >= 0);
    return tensors[id];
  }
};

// Analyses `text` and evaluates it. Inputs are given by name as flat row-major data; their
// shapes are the declared ones.
inline RefRun runSource(const std::string& text, const std::map<std::string, std::vector<double>>& inputs,
                        const LetOverrides& overrides = {}) {
  RefRun run{analyzeSource(text, overrides), {}};
  std::vector<RefTensor> args;
  for (int id : run.program.inputs) {
    const TensorInfo& info = run.program.tensors[id];
    auto it = inputs.find(info.name);
    INFO("input " << info.name);
    REQUIRE(it != inputs.end());
    args.push_back({info.shape, it->second});
  }
  run.tensors = evaluateReference(run.program, args);
  return run;
}

// Equal within 1e-12; infinities must match exactly and a NaN must meet a NaN.
inline bool sameValue(double expected, double got) {
  if (std::isnan(expected)) return std::isnan(got);
  if (std::isinf(expected)) return expected == got;
  return std::fabs(expected - got) <= 1e-12;
}

inline void checkTensor(const RefTensor& t, const std::vector<int64_t>& shape, const std::vector<double>& expected) {
  REQUIRE(t.shape == shape);
  REQUIRE(t.data.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i << ": expected " << expected[i] << ", got " << t.data[i]);
    CHECK(sameValue(expected[i], t.data[i]));
  }
}

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace texc::test
