// The recursive-descent parser: tokens -> AST. The grammar rule sits above each parse function in
// Parser.cpp. On an error the parser reports it, skips to the end of the statement and goes on,
// so one run reports up to DiagnosticEngine::kMaxErrors errors.
#pragma once

#include "frontend/AST.h"
#include "frontend/Diagnostics.h"
#include "frontend/Source.h"

namespace texc {

// Lexes and parses `file`. Statements with errors are left out of the module.
Module parse(const SourceFile& file, DiagnosticEngine& diags);

// The deepest expression nesting accepted; deeper input gets NestingTooDeep, not a stack overflow.
inline constexpr int kMaxNestingDepth = 512;

}  // namespace texc
