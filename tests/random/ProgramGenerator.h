// Random valid `.tex` programs for differential testing (docs/testing.md, "Random programs").
//
// A program is a pure function of its seed: the same seed gives the same text on every machine
// and every run, so a failure is reproduced by its seed alone. Programs are valid by construction
// (spec sections 3-5): shapes broadcast, index variables are inferred from accesses of the right
// extent or bounded explicitly, an access that may fall out of bounds appears only inside a
// reduction (where its term is skipped), every builtin gets arguments in its domain and values
// stay far from overflow, and comparisons and floor/ceil only see exact values (inputs, index
// variables, literals) so that the float64 reference and compiled code take the same decisions.
#pragma once

#include <cstdint>
#include <string>

namespace texc::random {

struct GeneratorOptions {
  int maxStatements = 5;     // computed statements per program (at least one)
  int maxDepth = 4;          // expression nesting
  bool lowPrecision = true;  // some f16/bf16 inputs
};

// The program for `seed`, as source text (first line a comment naming the seed).
std::string generateProgram(uint64_t seed, const GeneratorOptions& options = {});

}  // namespace texc::random
