/* The epilogue lexer: text -> tokens, and the column-numbered errors the parser reports. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue_internal.h"

ft_status ft__ep_perr(parser *p, int col, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ft__fail(p->err, FT_ERR_PARSE, "epilogue: col %d: %s", col, what);
}

int ft__ep_tok_is(const parser *p, const token *t, const char *word) {
  return t->kind == T_IDENT && (int)strlen(word) == t->len &&
         memcmp(p->src + t->pos, word, (size_t)t->len) == 0;
}

/* "inf", "nan", "infinity" in any case: literals C would accept but the language does not. */
int ft__ep_is_nonfinite_word(const char *s, int len) {
  static const char *const words[] = {"inf", "nan", "infinity"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
    if ((int)strlen(words[i]) != len) continue;
    int same = 1;
    for (int j = 0; j < len && same; j++) same = (s[j] | 0x20) == words[i][j];
    if (same) return 1;
  }
  return 0;
}

static ft_status lex_number(parser *p, int start) {
  const char *s = p->src;
  int i = start;
  while (is_digit(s[i])) i++;
  if (s[i] == '.') {
    i++;
    while (is_digit(s[i])) i++;
  }
  if (s[i] == 'e' || s[i] == 'E') {
    int j = i + 1;
    if (s[j] == '+' || s[j] == '-') j++;
    if (!is_digit(s[j])) return ft__ep_perr(p, start + 1, "malformed number (exponent without digits)");
    while (is_digit(s[j])) j++;
    i = j;
  }
  if (is_alnum(s[i]) || s[i] == '.') return ft__ep_perr(p, start + 1, "malformed number");
  char *end = NULL;
  double v = strtod(s + start, &end);
  if (end != s + i) return ft__ep_perr(p, start + 1, "malformed number");
  /* Judged by the float the kernel computes with: a literal that rounds to FLT_MAX or FLT_MIN (as
   * their printed forms 3.40282347e+38 and 1.17549435e-38 do) is that float. */
  if (!isfinite(v) || !isfinite((float)v)) return ft__ep_perr(p, start + 1, "number out of float range");
  /* The kernel computes in float and the reference in double: a literal below float's normal
   * range would be 0 or a subnormal in one and itself in the other. */
  int nonzero_digit = 0; /* 1e-400 reads as 0 in double as well, but was not written as 0 */
  for (int j = start; j < i && s[j] != 'e' && s[j] != 'E'; j++) nonzero_digit |= s[j] >= '1' && s[j] <= '9';
  if ((v != 0 || nonzero_digit) && (float)v < FLT_MIN)
    return ft__ep_perr(p, start + 1, "number %.*s below float's normal range (smallest %.9g)", i - start, s + start,
                       (double)FLT_MIN);
  p->tok = (token){T_NUM, start, i - start, v};
  p->pos = i;
  return FT_OK;
}

static ft_status lex_bad_char(parser *p, int at) {
  unsigned char c = (unsigned char)p->src[at];
  if (c >= 0x80) return ft__ep_perr(p, at + 1, "non-ASCII byte 0x%02x", c);
  if (c < 0x20 || c == 0x7f) return ft__ep_perr(p, at + 1, "unexpected control character 0x%02x", c);
  return ft__ep_perr(p, at + 1, "unexpected character '%c'", c);
}

ft_status ft__ep_next_token(parser *p) {
  const char *s = p->src;
  while (is_space(s[p->pos])) p->pos++;
  int start = p->pos;
  char c = s[start];
  if (c == '\0') {
    p->tok = (token){T_END, start, 0, 0.0};
    return FT_OK;
  }
  if (is_digit(c) || (c == '.' && is_digit(s[start + 1]))) return lex_number(p, start);
  if (is_alpha(c)) {
    int i = start;
    while (is_alnum(s[i])) i++;
    if (i - start >= FT_EP_NAME_MAX)
      return ft__ep_perr(p, start + 1, "name longer than %d characters", FT_EP_NAME_MAX - 1);
    p->tok = (token){T_IDENT, start, i - start, 0.0};
    p->pos = i;
    return FT_OK;
  }
  static const char ops[] = "+-*/(),=";
  static const tok_kind kinds[] = {T_PLUS,   T_MINUS,  T_STAR,  T_SLASH,
                                   T_LPAREN, T_RPAREN, T_COMMA, T_EQ};
  const char *op = strchr(ops, c);
  if (!op) return lex_bad_char(p, start);
  p->tok = (token){kinds[op - ops], start, 1, 0.0};
  p->pos = start + 1;
  return FT_OK;
}

/* How a token reads in an error message. */
static void tok_desc(const parser *p, const token *t, char *out, size_t n) {
  if (t->kind == T_END) snprintf(out, n, "end of input");
  else if (t->kind == T_NUM) snprintf(out, n, "number '%.*s'", t->len > 40 ? 40 : t->len, p->src + t->pos);
  else snprintf(out, n, "'%.*s'", t->len, p->src + t->pos);
}

ft_status ft__ep_unexpected(parser *p, const char *expected) {
  char d[64];
  tok_desc(p, &p->tok, d, sizeof d);
  return ft__ep_perr(p, p->tok.pos + 1, "expected %s, found %s", expected, d);
}

ft_status ft__ep_expect(parser *p, tok_kind kind, const char *what) {
  if (p->tok.kind != kind) return ft__ep_unexpected(p, what);
  return ft__ep_next_token(p);
}
