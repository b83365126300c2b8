// Delta debugging for failing programs: the smallest program that still fails the same way.
//
// Works on the syntax tree (frontend/AST.h) and prints candidates with printModule, so every
// candidate is a well-formed program text; candidates that no longer analyse simply do not fail.
// Steps, repeated until none applies:
//   1. remove chunks of statements (halves, quarters, ... single statements);
//   2. drop the `output` mark of one output;
//   3. replace one expression by one of its operands, or by the literal 1.
// Each accepted step makes the program strictly smaller, so the loop ends.
#pragma once

#include <functional>
#include <string>

namespace texc::random {

struct ShrinkStats {
  int attempts = 0;  // predicate calls
  int accepted = 0;  // steps kept
};

// Returns the smallest variant of `source` found for which `stillFails` holds (`source` itself
// when nothing smaller fails). Stops after `maxAttempts` predicate calls.
std::string shrinkProgram(const std::string& source, const std::function<bool(const std::string&)>& stillFails,
                          int maxAttempts = 500, ShrinkStats* stats = nullptr);

}  // namespace texc::random
