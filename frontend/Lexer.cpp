#include "frontend/Lexer.h"

#include <fmt/format.h>

#include <array>

namespace texc {

namespace {

struct KindInfo {
  const char* text;
  bool isWord;  // keyword or punctuation: quoted in messages
};

constexpr std::array kKindInfo = {
#define TOKEN(Kind, Desc) KindInfo{Desc, false},
#define KEYWORD(Kind, Spelling) KindInfo{Spelling, true},
#define PUNCT(Kind, Spelling) KindInfo{Spelling, true},
#include "frontend/Tokens.def"
};

struct Keyword {
  std::string_view spelling;
  TokenKind kind;
};
constexpr Keyword kKeywords[] = {
#define KEYWORD(Kind, Spelling) {Spelling, TokenKind::Kind},
#include "frontend/Tokens.def"
};

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

// Decodes one UTF-8 sequence at `s[i]`; returns its length, or 0 when the bytes are not valid
// UTF-8 (overlong forms, surrogates and code points above U+10FFFF are invalid too).
size_t decodeUtf8(std::string_view s, size_t i, uint32_t& cp) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  size_t len;
  uint32_t min;
  if (c < 0x80) { cp = c; return 1; }
  if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
  else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
  else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
  else return 0;
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

class Lexer {
 public:
  Lexer(const SourceFile& file, DiagnosticEngine& diags) : text_(file.text()), diags_(diags) {}

  std::vector<Token> run() {
    std::vector<Token> out;
    while (true) {
      skipSpaceAndComments();
      if (pos_ >= text_.size()) break;
      if (diags_.shouldStop()) { pos_ = text_.size(); break; }
      out.push_back(next());
    }
    Token eof;
    eof.kind = TokenKind::Eof;
    eof.text = std::string_view(text_.data() + text_.size(), 0);
    eof.range = {here(), here()};
    out.push_back(eof);
    return out;
  }

 private:
  SourceLoc here() const { return {static_cast<uint32_t>(pos_), line_, col_}; }

  // Advances over one byte that is not a newline (columns count code points, so continuation
  // bytes do not advance the column).
  void bump() {
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if ((c & 0xC0) != 0x80) ++col_;
    ++pos_;
  }

  void skipSpaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r') {
        bump();
      } else if (c == '#') {
        // Comments may hold any valid UTF-8.
        while (pos_ < text_.size() && text_[pos_] != '\n') {
          if (static_cast<unsigned char>(text_[pos_]) >= 0x80) {
            uint32_t cp;
            size_t len = decodeUtf8(text_, pos_, cp);
            if (len == 0) {
              reportInvalidByte();
              continue;
            }
            pos_ += len;
            ++col_;
          } else {
            bump();
          }
        }
      } else {
        return;
      }
    }
  }

  void reportInvalidByte() {
    SourceLoc b = here();
    unsigned byte = static_cast<unsigned char>(text_[pos_]);
    ++pos_;
    ++col_;
    diags_.report(DiagId::InvalidUtf8, {b, here()}, byte);
  }

  Token make(TokenKind kind, SourceLoc begin) {
    Token t;
    t.kind = kind;
    t.text = std::string_view(text_.data() + begin.offset, pos_ - begin.offset);
    t.range = {begin, here()};
    return t;
  }

  Token next() {
    SourceLoc begin = here();
    char c = text_[pos_];
    if (c == '\n') {
      ++pos_;
      Token t = make(TokenKind::Newline, begin);
      ++line_;
      col_ = 1;
      return t;
    }
    if (isIdentStart(c)) {
      while (pos_ < text_.size() && isIdentChar(text_[pos_])) bump();
      Token t = make(TokenKind::Identifier, begin);
      for (const Keyword& k : kKeywords)
        if (k.spelling == t.text) t.kind = k.kind;
      return t;
    }
    if (isDigit(c) || (c == '.' && pos_ + 1 < text_.size() && isDigit(text_[pos_ + 1]))) return number(begin);
    if (static_cast<unsigned char>(c) >= 0x80) {
      uint32_t cp;
      size_t len = decodeUtf8(text_, pos_, cp);
      if (len == 0) {
        reportInvalidByte();
      } else {
        pos_ += len;
        ++col_;
        diags_.report(DiagId::NonAsciiCharacter, {begin, here()}, cp);
      }
      return make(TokenKind::Error, begin);
    }
    auto two = [&](char second) { return pos_ + 1 < text_.size() && text_[pos_ + 1] == second; };
    auto punct = [&](TokenKind kind, int len) {
      for (int i = 0; i < len; ++i) bump();
      return make(kind, begin);
    };
    switch (c) {
      case ';': return punct(TokenKind::Semicolon, 1);
      case '(': return punct(TokenKind::LParen, 1);
      case ')': return punct(TokenKind::RParen, 1);
      case '[': return punct(TokenKind::LBracket, 1);
      case ']': return punct(TokenKind::RBracket, 1);
      case ',': return punct(TokenKind::Comma, 1);
      case ':': return punct(TokenKind::Colon, 1);
      case '+': return punct(TokenKind::Plus, 1);
      case '-': return punct(TokenKind::Minus, 1);
      case '*': return punct(TokenKind::Star, 1);
      case '/': return punct(TokenKind::Slash, 1);
      case '%': return punct(TokenKind::Percent, 1);
      case '=': return two('=') ? punct(TokenKind::EqualEqual, 2) : punct(TokenKind::Assign, 1);
      case '<': return two('=') ? punct(TokenKind::LessEqual, 2) : punct(TokenKind::Less, 1);
      case '>': return two('=') ? punct(TokenKind::GreaterEqual, 2) : punct(TokenKind::Greater, 1);
      case '!': return two('=') ? punct(TokenKind::NotEqual, 2) : punct(TokenKind::Bang, 1);
      case '&':
        if (two('&')) return punct(TokenKind::AmpAmp, 2);
        break;
      case '|':
        if (two('|')) return punct(TokenKind::PipePipe, 2);
        break;
      default: break;
    }
    bump();
    std::string shown = c >= 0x20 && c < 0x7F ? std::string(1, c) : fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
    const char* hint = c == '&' ? " (did you mean '&&'?)" : c == '|' ? " (did you mean '||'?)" : "";
    diags_.report(DiagId::UnexpectedCharacter, {begin, here()}, shown, hint);
    return make(TokenKind::Error, begin);
  }

  // integer: [0-9]+   float: [0-9]+ '.' [0-9]* exp? | '.' [0-9]+ exp? | [0-9]+ exp
  // exp: [eE] [+-]? [0-9]+.  A number running into letters, digits or dots is malformed.
  Token number(SourceLoc begin) {
    bool isFloat = false, ok = true;
    auto digits = [&] {
      size_t start = pos_;
      while (pos_ < text_.size() && isDigit(text_[pos_])) bump();
      return pos_ > start;
    };
    digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      isFloat = true;
      bump();
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      isFloat = true;
      bump();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) bump();
      ok = digits();
    }
    if (pos_ < text_.size() && (isIdentChar(text_[pos_]) || text_[pos_] == '.')) {
      ok = false;
      while (pos_ < text_.size() && (isIdentChar(text_[pos_]) || text_[pos_] == '.')) bump();
    }
    Token t = make(isFloat ? TokenKind::Float : TokenKind::Integer, begin);
    if (!ok) {
      diags_.report(DiagId::MalformedNumber, t.range, std::string(t.text));
      t.kind = TokenKind::Error;
    }
    return t;
  }

  std::string_view text_;
  DiagnosticEngine& diags_;
  size_t pos_ = 0;
  uint32_t line_ = 1;
  uint32_t col_ = 1;
};

}  // namespace

std::string describeTokenKind(TokenKind kind) {
  const KindInfo& info = kKindInfo[static_cast<size_t>(kind)];
  return info.isWord ? fmt::format("'{}'", info.text) : info.text;
}

std::string describeToken(const Token& tok) {
  switch (tok.kind) {
    case TokenKind::Eof:
    case TokenKind::Newline:
      return describeTokenKind(tok.kind);
    case TokenKind::Identifier: return fmt::format("identifier '{}'", tok.text.substr(0, 40));
    case TokenKind::Integer:
    case TokenKind::Float: return fmt::format("number '{}'", tok.text.substr(0, 40));
    default: return describeTokenKind(tok.kind);
  }
}

std::vector<Token> lex(const SourceFile& file, DiagnosticEngine& diags) { return Lexer(file, diags).run(); }

}  // namespace texc
