// The lexer: UTF-8 source text -> tokens with exact locations.
//
// It validates the encoding (invalid UTF-8 anywhere is an error; outside comments only ASCII is
// allowed), strips comments, and emits a Newline token at each line end; the parser decides
// which newlines end statements (none inside parentheses or brackets).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "frontend/Diagnostics.h"
#include "frontend/Source.h"

namespace texc {

enum class TokenKind : uint8_t {
#define TOKEN(Kind, Desc) Kind,
#define KEYWORD(Kind, Spelling) Kind,
#define PUNCT(Kind, Spelling) Kind,
#include "frontend/Tokens.def"
};

// "identifier", "'let'", "'('" ... for messages.
std::string describeTokenKind(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string_view text;  // points into the SourceFile's text
  SourceRange range;
};

// How a token is described in "expected X but found Y".
std::string describeToken(const Token& tok);

// Lexes the whole file. Errors are reported to `diags`; the returned stream always ends in Eof.
std::vector<Token> lex(const SourceFile& file, DiagnosticEngine& diags);

}  // namespace texc
