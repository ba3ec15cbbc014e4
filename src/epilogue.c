/* The epilogue expression language: lexer, parser, canonical printer, CUDA emitter, float64
 * evaluator and eager-style plan. The grammar and every definition: docs/EPILOGUE.md.
 *
 * Numbers are read with strtod and printed with snprintf, so LC_NUMERIC must be "C" (the
 * default of every C program that does not call setlocale). */
#include "epilogue.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

/* ------------------------------------------------------------------------------------------ */
/* Tables                                                                                       */

typedef enum fn_id {
  FN_MIN, FN_MAX, FN_RELU, FN_LEAKY_RELU, FN_GELU, FN_GELU_TANH, FN_SIGMOID, FN_SILU, FN_TANH,
  FN_MISH, FN_SOFTPLUS, FN_ELU, FN_CLAMP, FN_ABS, FN_EXP, FN_LOG, FN_SQRT, FN_COUNT
} fn_id;

typedef struct fn_def {
  const char *name; /* canonical spelling */
  int arity;
  const char *cuda; /* device function in kernels_src/ft_math.cuh */
} fn_def;

static const fn_def k_fns[FN_COUNT] = {
    [FN_MIN] = {"min", 2, "ft_min"},
    [FN_MAX] = {"max", 2, "ft_max"},
    [FN_RELU] = {"relu", 1, "ft_relu"},
    [FN_LEAKY_RELU] = {"leaky_relu", 2, "ft_leaky_relu"},
    [FN_GELU] = {"gelu", 1, "ft_gelu"},
    [FN_GELU_TANH] = {"gelu_tanh", 1, "ft_gelu_tanh"},
    [FN_SIGMOID] = {"sigmoid", 1, "ft_sigmoid"},
    [FN_SILU] = {"silu", 1, "ft_silu"},
    [FN_TANH] = {"tanh", 1, "ft_tanh"},
    [FN_MISH] = {"mish", 1, "ft_mish"},
    [FN_SOFTPLUS] = {"softplus", 1, "ft_softplus"},
    [FN_ELU] = {"elu", 1, "ft_elu"},
    [FN_CLAMP] = {"clamp", 3, "ft_clamp"},
    [FN_ABS] = {"abs", 1, "ft_abs"},
    [FN_EXP] = {"exp", 1, "ft_exp"},
    [FN_LOG] = {"log", 1, "ft_log"},
    [FN_SQRT] = {"sqrt", 1, "ft_sqrt"},
};

/* Other spellings of the same function; the canonical text uses the table name. */
static const struct {
  const char *name;
  fn_id id;
} k_aliases[] = {{"swish", FN_SILU}, {"hardtanh", FN_CLAMP}};

#define N_ALIASES (sizeof k_aliases / sizeof k_aliases[0])

static const char *const k_preset_names[] = {"none",     "bias",     "relu",  "biasrelu",
                                             "biasgelu", "biassilu", "minsub"};
static const char *const k_preset_texts[] = {"x",
                                             "x + bias",
                                             "relu(x)",
                                             "relu(x + bias)",
                                             "gelu(x + bias)",
                                             "silu(x + bias)",
                                             "min(x + bias, c) - c where c = 2"};
#define N_PRESETS ((int)(sizeof k_preset_names / sizeof k_preset_names[0]))

/* Words that can never name a parameter. */
static const char *const k_reserved[] = {"x", "where", "scalar", "col", "row"};
#define N_RESERVED (sizeof k_reserved / sizeof k_reserved[0])

int ft_ep_presets(const char *const **names, const char *const **texts) {
  if (names) *names = k_preset_names;
  if (texts) *texts = k_preset_texts;
  return N_PRESETS;
}

/* ------------------------------------------------------------------------------------------ */
/* AST                                                                                          */

typedef enum node_kind {
  N_NUM, N_X, N_PARAM, N_REF, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV, N_CALL
} node_kind;

typedef struct ep_node {
  node_kind kind;
  int fn;     /* N_CALL: fn_id */
  int nkids;  /* children used in kid[] */
  int kid[3];
  double num; /* N_NUM: always >= 0 (a minus sign is an N_NEG) */
  int slot;   /* N_PARAM: parameter slot */
  int col;    /* 1-based column of the token that made the node */
  int len;    /* N_REF: length of the name at col */
  int depth;  /* 0 for leaves, 1 + deepest child otherwise */
} ep_node;

struct ft_epilogue {
  ep_node *nodes;
  int nnodes;
  int root;
  ft_ep_param params[FT_EP_MAX_PARAMS];
  int nparams;
  char *canon;
  char *cuda;
  char hash[17];
};


/* ------------------------------------------------------------------------------------------ */
/* Numbers                                                                                      */

/* Shortest decimal that reads back as v: Python-repr style, fixed notation for exponents in
 * [-4, 16), scientific otherwise ("1e-5", "1.5e20"), no trailing ".0". */
static void format_number(double v, char *out, size_t n) {
  char sci[40];
  int digits;
  for (digits = 1; digits <= 17; digits++) {
    snprintf(sci, sizeof sci, "%.*e", digits - 1, v);
    if (strtod(sci, NULL) == v) break;
  }
  if (digits > 17) digits = 17;
  char *e = strchr(sci, 'e');
  int ex = atoi(e + 1);
  if (ex >= -4 && ex < 16) {
    int decimals = digits - 1 - ex;
    snprintf(out, n, "%.*f", decimals < 0 ? 0 : decimals, v);
  } else {
    snprintf(out, n, "%.*se%d", (int)(e - sci), sci, ex);
  }
}

/* A float literal that rounds to exactly (float)v: 9 significant digits always suffice. */
static void format_float_literal(double v, char *out, size_t n) {
  char tmp[40];
  snprintf(tmp, sizeof tmp, "%.9g", (double)(float)v);
  const char *dot = strpbrk(tmp, ".e") ? "" : ".0"; /* "2f" would be an integer literal */
  snprintf(out, n, "%s%sf", tmp, dot);
}

/* ------------------------------------------------------------------------------------------ */
/* Lexer                                                                                        */

typedef enum tok_kind {
  T_END, T_NUM, T_IDENT, T_PLUS, T_MINUS, T_STAR, T_SLASH, T_LPAREN, T_RPAREN, T_COMMA, T_EQ
} tok_kind;

typedef struct token {
  tok_kind kind;
  int pos; /* 0-based byte offset */
  int len;
  double num;
} token;

/* A declaration from the `where` clause, or the implicit `col bias`. */
typedef struct decl {
  char name[FT_EP_NAME_MAX];
  ft_param_kind kind;
  int has_default;
  double def;
  int col;
  int used;
} decl;

typedef struct parser {
  const char *src;
  int pos;
  token tok;
  int nest; /* current nesting of parentheses, calls and unary minus */
  ep_node *nodes;
  int nnodes, cap;
  decl decls[FT_EP_MAX_PARAMS];
  int ndecls;
  ft_err *err;
} parser;

static ft_status perr(parser *p, int col, const char *fmt, ...) FT_PRINTF(3, 4);
static ft_status perr(parser *p, int col, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return ft__fail(p->err, FT_ERR_PARSE, "epilogue: col %d: %s", col, what);
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_digit(int c) { return c >= '0' && c <= '9'; }
static int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int tok_is(const parser *p, const token *t, const char *word) {
  return t->kind == T_IDENT && (int)strlen(word) == t->len &&
         memcmp(p->src + t->pos, word, (size_t)t->len) == 0;
}

/* "inf", "nan", "infinity" in any case: literals C would accept but the language does not. */
static int is_nonfinite_word(const char *s, int len) {
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
    if (!is_digit(s[j])) return perr(p, start + 1, "malformed number (exponent without digits)");
    while (is_digit(s[j])) j++;
    i = j;
  }
  if (is_alnum(s[i]) || s[i] == '.') return perr(p, start + 1, "malformed number");
  char *end = NULL;
  double v = strtod(s + start, &end);
  if (end != s + i) return perr(p, start + 1, "malformed number");
  if (!isfinite(v) || v > FLT_MAX) return perr(p, start + 1, "number out of float range");
  p->tok = (token){T_NUM, start, i - start, v};
  p->pos = i;
  return FT_OK;
}

static ft_status lex_bad_char(parser *p, int at) {
  unsigned char c = (unsigned char)p->src[at];
  if (c >= 0x80) return perr(p, at + 1, "non-ASCII byte 0x%02x", c);
  if (c < 0x20 || c == 0x7f) return perr(p, at + 1, "unexpected control character 0x%02x", c);
  return perr(p, at + 1, "unexpected character '%c'", c);
}

static ft_status next_token(parser *p) {
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
      return perr(p, start + 1, "name longer than %d characters", FT_EP_NAME_MAX - 1);
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

static ft_status unexpected(parser *p, const char *expected) {
  char d[64];
  tok_desc(p, &p->tok, d, sizeof d);
  return perr(p, p->tok.pos + 1, "expected %s, found %s", expected, d);
}

static ft_status expect(parser *p, tok_kind kind, const char *what) {
  if (p->tok.kind != kind) return unexpected(p, what);
  return next_token(p);
}

/* ------------------------------------------------------------------------------------------ */
/* Names: functions, reserved words, suggestions                                                */

static int find_function(const char *s, int len) {
  for (int i = 0; i < FN_COUNT; i++)
    if ((int)strlen(k_fns[i].name) == len && memcmp(k_fns[i].name, s, (size_t)len) == 0) return i;
  for (size_t i = 0; i < N_ALIASES; i++)
    if ((int)strlen(k_aliases[i].name) == len && memcmp(k_aliases[i].name, s, (size_t)len) == 0)
      return (int)k_aliases[i].id;
  return -1;
}

static int is_reserved(const char *s, int len) {
  for (size_t i = 0; i < N_RESERVED; i++)
    if ((int)strlen(k_reserved[i]) == len && memcmp(k_reserved[i], s, (size_t)len) == 0) return 1;
  return 0;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* Case-insensitive Levenshtein distance; names are at most FT_EP_NAME_MAX - 1 long. */
static int edit_distance(const char *a, int la, const char *b, int lb) {
  int prev[FT_EP_NAME_MAX + 1], cur[FT_EP_NAME_MAX + 1];
  if (la > FT_EP_NAME_MAX || lb > FT_EP_NAME_MAX) return 1 << 20;
  for (int j = 0; j <= lb; j++) prev[j] = j;
  for (int i = 1; i <= la; i++) {
    cur[0] = i;
    for (int j = 1; j <= lb; j++) {
      int sub = prev[j - 1] + (lower(a[i - 1]) != lower(b[j - 1]));
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
    }
    memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
  }
  return prev[lb];
}

typedef struct suggestion {
  const char *best;
  int dist;
} suggestion;

static void consider(suggestion *sg, const char *name, int len, const char *cand) {
  int d = edit_distance(name, len, cand, (int)strlen(cand));
  if (d < sg->dist) {
    sg->dist = d;
    sg->best = cand;
  }
}

/* " (did you mean 'X'?)" when a close candidate exists, else "". */
static void format_hint(const suggestion *sg, int len, char *out, size_t n) {
  if (sg->best && sg->dist <= 2 && sg->dist < len) snprintf(out, n, " (did you mean '%s'?)", sg->best);
  else out[0] = '\0';
}

static void suggest_function(const char *name, int len, char *out, size_t n) {
  suggestion sg = {NULL, 1 << 20};
  for (int i = 0; i < FN_COUNT; i++) consider(&sg, name, len, k_fns[i].name);
  for (size_t i = 0; i < N_ALIASES; i++) consider(&sg, name, len, k_aliases[i].name);
  format_hint(&sg, len, out, n);
}

static void suggest_name(const parser *p, const char *name, int len, char *out, size_t n) {
  suggestion sg = {NULL, 1 << 20};
  for (int i = 0; i < p->ndecls; i++) consider(&sg, name, len, p->decls[i].name);
  consider(&sg, name, len, "x");
  consider(&sg, name, len, "bias");
  for (int i = 0; i < FN_COUNT; i++) consider(&sg, name, len, k_fns[i].name);
  format_hint(&sg, len, out, n);
}

/* ------------------------------------------------------------------------------------------ */
/* Parser: recursive descent, nesting bounded while parsing so no input can blow the stack.     */

static ft_status new_node(parser *p, node_kind kind, int col, const int *kids, int nkids, int *out) {
  int depth = 0;
  for (int i = 0; i < nkids; i++)
    if (p->nodes[kids[i]].depth + 1 > depth) depth = p->nodes[kids[i]].depth + 1;
  if (depth > FT_EP_MAX_DEPTH) return perr(p, col, "nesting deeper than %d levels", FT_EP_MAX_DEPTH);
  if (p->nnodes == p->cap) {
    int nc = p->cap ? p->cap * 2 : 32;
    ep_node *q = realloc(p->nodes, (size_t)nc * sizeof *q);
    if (!q) return ft__fail(p->err, FT_ERR_NOMEM, "epilogue: out of memory");
    p->nodes = q;
    p->cap = nc;
  }
  ep_node *nd = &p->nodes[p->nnodes];
  memset(nd, 0, sizeof *nd);
  nd->kind = kind;
  nd->col = col;
  nd->nkids = nkids;
  nd->depth = depth;
  for (int i = 0; i < nkids; i++) nd->kid[i] = kids[i];
  *out = p->nnodes++;
  return FT_OK;
}

static ft_status enter(parser *p, int col) {
  if (++p->nest > FT_EP_MAX_DEPTH) return perr(p, col, "nesting deeper than %d levels", FT_EP_MAX_DEPTH);
  return FT_OK;
}

static ft_status parse_expr(parser *p, int *out);

static ft_status parse_call(parser *p, token name, int *out) {
  const char *s = p->src + name.pos;
  int fn = find_function(s, name.len);
  if (fn < 0) {
    char hint[64];
    suggest_function(s, name.len, hint, sizeof hint);
    return perr(p, name.pos + 1, "unknown function '%.*s'%s", name.len, s, hint);
  }
  FT_TRY(enter(p, name.pos + 1));
  FT_TRY(next_token(p)); /* '(' */
  int kids[3], nargs = 0, arity = k_fns[fn].arity;
  while (p->tok.kind != T_RPAREN || nargs > 0) {
    if (nargs == arity)
      return perr(p, p->tok.pos + 1, "'%.*s' takes %d argument%s", name.len, s, arity, arity > 1 ? "s" : "");
    FT_TRY(parse_expr(p, &kids[nargs++]));
    if (p->tok.kind != T_COMMA) break;
    FT_TRY(next_token(p));
  }
  FT_TRY(expect(p, T_RPAREN, "',' or ')'"));
  if (nargs != arity)
    return perr(p, name.pos + 1, "'%.*s' takes %d argument%s, got %d", name.len, s, arity,
                arity > 1 ? "s" : "", nargs);
  p->nest--;
  FT_TRY(new_node(p, N_CALL, name.pos + 1, kids, nargs, out));
  p->nodes[*out].fn = fn;
  return FT_OK;
}

static ft_status parse_name(parser *p, token name, int *out) {
  const char *s = p->src + name.pos;
  int col = name.pos + 1;
  if (tok_is(p, &name, "x")) return new_node(p, N_X, col, NULL, 0, out);
  if (is_nonfinite_word(s, name.len)) return perr(p, col, "numbers must be finite ('%.*s')", name.len, s);
  if (find_function(s, name.len) >= 0)
    return perr(p, col, "'%.*s' is a function: call it as %.*s(...)", name.len, s, name.len, s);
  if (is_reserved(s, name.len)) return perr(p, col, "expected an operand, found '%.*s'", name.len, s);
  FT_TRY(new_node(p, N_REF, col, NULL, 0, out));
  p->nodes[*out].len = name.len;
  return FT_OK;
}

static ft_status parse_primary(parser *p, int *out) {
  token t = p->tok;
  if (t.kind == T_NUM) {
    FT_TRY(new_node(p, N_NUM, t.pos + 1, NULL, 0, out));
    p->nodes[*out].num = t.num;
    return next_token(p);
  }
  if (t.kind == T_LPAREN) {
    FT_TRY(enter(p, t.pos + 1));
    FT_TRY(next_token(p));
    FT_TRY(parse_expr(p, out));
    FT_TRY(expect(p, T_RPAREN, "')'"));
    p->nest--;
    return FT_OK;
  }
  if (t.kind != T_IDENT) return unexpected(p, "an operand");
  FT_TRY(next_token(p));
  if (p->tok.kind == T_LPAREN) return parse_call(p, t, out);
  return parse_name(p, t, out);
}

static ft_status parse_unary(parser *p, int *out) {
  if (p->tok.kind != T_MINUS) return parse_primary(p, out);
  int col = p->tok.pos + 1, kid;
  FT_TRY(enter(p, col));
  FT_TRY(next_token(p));
  FT_TRY(parse_unary(p, &kid));
  p->nest--;
  return new_node(p, N_NEG, col, &kid, 1, out);
}

static ft_status parse_binary_rest(parser *p, int lhs, tok_kind a, node_kind ka, tok_kind b,
                                   node_kind kb, ft_status (*operand)(parser *, int *), int *out) {
  while (p->tok.kind == a || p->tok.kind == b) {
    node_kind k = p->tok.kind == a ? ka : kb;
    int col = p->tok.pos + 1, kids[2] = {lhs, 0};
    FT_TRY(next_token(p));
    FT_TRY(operand(p, &kids[1]));
    FT_TRY(new_node(p, k, col, kids, 2, &lhs));
  }
  *out = lhs;
  return FT_OK;
}

static ft_status parse_term(parser *p, int *out) {
  int lhs;
  FT_TRY(parse_unary(p, &lhs));
  return parse_binary_rest(p, lhs, T_STAR, N_MUL, T_SLASH, N_DIV, parse_unary, out);
}

static ft_status parse_expr(parser *p, int *out) {
  int lhs;
  FT_TRY(parse_term(p, &lhs));
  return parse_binary_rest(p, lhs, T_PLUS, N_ADD, T_MINUS, N_SUB, parse_term, out);
}

/* ------------------------------------------------------------------------------------------ */
/* Declarations: `where NAME = NUMBER, scalar NAME [= NUMBER], col NAME, row NAME`              */

static ft_status parse_signed_number(parser *p, double *out) {
  int neg = 0;
  if (p->tok.kind == T_MINUS) {
    neg = 1;
    FT_TRY(next_token(p));
  }
  if (p->tok.kind == T_IDENT && is_nonfinite_word(p->src + p->tok.pos, p->tok.len))
    return perr(p, p->tok.pos + 1, "numbers must be finite ('%.*s')", p->tok.len, p->src + p->tok.pos);
  if (p->tok.kind != T_NUM) return unexpected(p, "a number");
  *out = neg ? -p->tok.num : p->tok.num;
  return next_token(p);
}

static ft_status check_decl_name(parser *p, const token *t, ft_param_kind kind, int has_default) {
  const char *s = p->src + t->pos;
  int col = t->pos + 1;
  if (is_reserved(s, t->len)) return perr(p, col, "'%.*s' is reserved and cannot name a parameter", t->len, s);
  if (find_function(s, t->len) >= 0)
    return perr(p, col, "'%.*s' is a function and cannot name a parameter", t->len, s);
  if (is_nonfinite_word(s, t->len)) return perr(p, col, "'%.*s' cannot name a parameter", t->len, s);
  if (tok_is(p, t, "bias") && (kind != FT_PARAM_COLVEC || has_default))
    return perr(p, col, "'bias' is the built-in per-column vector; it can only be declared 'col bias'");
  for (int i = 0; i < p->ndecls; i++)
    if ((int)strlen(p->decls[i].name) == t->len && memcmp(p->decls[i].name, s, (size_t)t->len) == 0)
      return perr(p, col, "'%.*s' is declared twice", t->len, s);
  if (p->ndecls == FT_EP_MAX_PARAMS) return perr(p, col, "more than %d parameters", FT_EP_MAX_PARAMS);
  return FT_OK;
}

/* Reads the kind keyword, if any, and the name. */
static ft_status parse_decl_head(parser *p, ft_param_kind *kind, int *keyword, token *name) {
  static const char *const words[] = {"scalar", "col", "row"};
  static const ft_param_kind kinds[] = {FT_PARAM_SCALAR, FT_PARAM_COLVEC, FT_PARAM_ROWVEC};
  if (p->tok.kind != T_IDENT)
    return unexpected(p, "a declaration ('NAME = NUMBER', 'scalar NAME', 'col NAME' or 'row NAME')");
  *kind = FT_PARAM_SCALAR;
  *keyword = 0;
  for (int i = 0; i < 3; i++) {
    if (!tok_is(p, &p->tok, words[i])) continue;
    *kind = kinds[i];
    *keyword = 1;
    FT_TRY(next_token(p));
    if (p->tok.kind != T_IDENT) return unexpected(p, "a parameter name");
    break;
  }
  *name = p->tok;
  return next_token(p);
}

static ft_status parse_decl(parser *p) {
  ft_param_kind kind = FT_PARAM_SCALAR;
  int keyword = 0, has_default = 0;
  double def = 0.0;
  token name = {0};
  FT_TRY(parse_decl_head(p, &kind, &keyword, &name));
  if (p->tok.kind == T_EQ && kind == FT_PARAM_SCALAR) {
    FT_TRY(next_token(p));
    FT_TRY(parse_signed_number(p, &def));
    has_default = 1;
  } else if (p->tok.kind == T_EQ) {
    return perr(p, p->tok.pos + 1, "only scalars take a default value");
  } else if (!keyword) {
    return unexpected(p, "'=' (or declare the name with scalar, col or row)");
  }
  FT_TRY(check_decl_name(p, &name, kind, has_default));
  decl *d = &p->decls[p->ndecls++];
  memset(d, 0, sizeof *d);
  memcpy(d->name, p->src + name.pos, (size_t)name.len);
  d->kind = kind;
  d->has_default = has_default;
  d->def = def;
  d->col = name.pos + 1;
  return FT_OK;
}

static ft_status parse_decls(parser *p) {
  FT_TRY(next_token(p)); /* `where` */
  for (;;) {
    FT_TRY(parse_decl(p));
    if (p->tok.kind != T_COMMA) return FT_OK;
    FT_TRY(next_token(p));
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Name resolution and slot order                                                               */

static int find_decl(const parser *p, const char *s, int len) {
  for (int i = 0; i < p->ndecls; i++)
    if ((int)strlen(p->decls[i].name) == len && memcmp(p->decls[i].name, s, (size_t)len) == 0) return i;
  return -1;
}

static ft_status resolve_ref(parser *p, ep_node *nd) {
  const char *s = p->src + nd->col - 1;
  int d = find_decl(p, s, nd->len);
  if (d < 0 && nd->len == 4 && memcmp(s, "bias", 4) == 0) {
    if (p->ndecls == FT_EP_MAX_PARAMS) return perr(p, nd->col, "more than %d parameters", FT_EP_MAX_PARAMS);
    d = p->ndecls++;
    memset(&p->decls[d], 0, sizeof p->decls[d]);
    strcpy(p->decls[d].name, "bias");
    p->decls[d].kind = FT_PARAM_COLVEC;
    p->decls[d].col = nd->col;
  }
  if (d < 0) {
    char hint[64];
    suggest_name(p, s, nd->len, hint, sizeof hint);
    return perr(p, nd->col, "unknown name '%.*s'%s", nd->len, s, hint);
  }
  p->decls[d].used = 1;
  nd->kind = N_PARAM;
  nd->slot = d;
  return FT_OK;
}

static int cmp_decl_name(const void *a, const void *b) {
  return strcmp(((const decl *)a)->name, ((const decl *)b)->name);
}

/* Slots follow the canonical declaration order: parameters sorted by name (bytewise), the
 * implicit bias included, so equal canonical texts give equal slots. */
static ft_status resolve_names(parser *p, ft_epilogue *ep) {
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].kind == N_REF) FT_TRY(resolve_ref(p, &p->nodes[i]));
  for (int i = 0; i < p->ndecls; i++)
    if (!p->decls[i].used) return perr(p, p->decls[i].col, "'%s' is declared but not used", p->decls[i].name);
  decl sorted[FT_EP_MAX_PARAMS];
  memcpy(sorted, p->decls, sizeof(decl) * (size_t)p->ndecls);
  qsort(sorted, (size_t)p->ndecls, sizeof(decl), cmp_decl_name);
  int slot_of[FT_EP_MAX_PARAMS];
  for (int i = 0; i < p->ndecls; i++) {
    slot_of[find_decl(p, sorted[i].name, (int)strlen(sorted[i].name))] = i;
    ft_ep_param *q = &ep->params[i];
    memcpy(q->name, sorted[i].name, sizeof q->name);
    q->kind = sorted[i].kind;
    q->has_default = sorted[i].has_default;
    q->def = sorted[i].def;
  }
  ep->nparams = p->ndecls;
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].kind == N_PARAM) p->nodes[i].slot = slot_of[p->nodes[i].slot];
  return FT_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Printers: one walk for the canonical text, the CUDA text and eager step expressions.         */

typedef enum print_mode { PM_CANON, PM_CUDA } print_mode;

typedef struct printer {
  const ft_epilogue *ep;
  print_mode mode;
  const int *in_of; /* PM_CUDA steps: node -> IN operand index, or -1; NULL otherwise */
  ft_strbuf out;
} printer;

static int is_input(const printer *pr, int n) { return pr->in_of && pr->in_of[n] >= 0; }

static int prec(const printer *pr, int n) {
  if (is_input(pr, n)) return 4;
  switch (pr->ep->nodes[n].kind) {
    case N_ADD:
    case N_SUB:
      return 1;
    case N_MUL:
    case N_DIV:
      return 2;
    case N_NEG:
      return 3;
    default:
      return 4;
  }
}

static void print_node(printer *pr, int n);

static void print_wrapped(printer *pr, int n, int parens) {
  if (parens) ft_sb_puts(&pr->out, "(");
  print_node(pr, n);
  if (parens) ft_sb_puts(&pr->out, ")");
}

static void print_param(printer *pr, const ep_node *nd) {
  const ft_ep_param *q = &pr->ep->params[nd->slot];
  if (pr->mode == PM_CANON) ft_sb_puts(&pr->out, q->name);
  else if (q->kind == FT_PARAM_SCALAR) ft_sb_printf(&pr->out, "ep.s[%d]", nd->slot);
  else ft_sb_printf(&pr->out, "ep.v[%d][%s]", nd->slot, q->kind == FT_PARAM_COLVEC ? "col" : "row");
}

static void print_leaf(printer *pr, const ep_node *nd) {
  char num[48];
  if (nd->kind == N_X) {
    ft_sb_puts(&pr->out, "x");
  } else if (nd->kind == N_PARAM) {
    print_param(pr, nd);
  } else {
    if (pr->mode == PM_CANON) format_number(nd->num, num, sizeof num);
    else format_float_literal(nd->num, num, sizeof num);
    ft_sb_puts(&pr->out, num);
  }
}

static void print_call(printer *pr, const ep_node *nd) {
  ft_sb_puts(&pr->out, pr->mode == PM_CANON ? k_fns[nd->fn].name : k_fns[nd->fn].cuda);
  ft_sb_puts(&pr->out, "(");
  for (int i = 0; i < nd->nkids; i++) {
    if (i) ft_sb_puts(&pr->out, ", ");
    print_node(pr, nd->kid[i]);
  }
  ft_sb_puts(&pr->out, ")");
}

/* Minimal parentheses without reassociation: a left operand needs them when it binds looser,
 * a right operand also when it binds equally (a - (b - c), a + (b + c) stay as written). A
 * negated negation prints as "- -e": never "--" (a decrement in CUDA), and no parentheses, so
 * the canonical text never nests deeper than its tree and always parses back. */
static void print_node(printer *pr, int n) {
  const ep_node *nd = &pr->ep->nodes[n];
  static const char *const ops[] = {[N_ADD] = " + ", [N_SUB] = " - ", [N_MUL] = " * ", [N_DIV] = " / "};
  if (is_input(pr, n)) {
    ft_sb_printf(&pr->out, "IN%d", pr->in_of[n]);
    return;
  }
  switch (nd->kind) {
    case N_NEG: {
      int k = nd->kid[0];
      int neg_kid = !is_input(pr, k) && pr->ep->nodes[k].kind == N_NEG;
      ft_sb_puts(&pr->out, neg_kid ? "- " : "-");
      print_wrapped(pr, k, prec(pr, k) < 3);
      return;
    }
    case N_ADD:
    case N_SUB:
    case N_MUL:
    case N_DIV:
      print_wrapped(pr, nd->kid[0], prec(pr, nd->kid[0]) < prec(pr, n));
      ft_sb_puts(&pr->out, ops[nd->kind]);
      print_wrapped(pr, nd->kid[1], prec(pr, nd->kid[1]) <= prec(pr, n));
      return;
    case N_CALL:
      print_call(pr, nd);
      return;
    default:
      print_leaf(pr, nd);
      return;
  }
}

/* The CUDA text is parenthesized when it is an operator, so callers may embed it anywhere. */
static char *print_cuda(const ft_epilogue *ep, int n, const int *in_of) {
  printer pr = {ep, PM_CUDA, in_of, {0}};
  print_wrapped(&pr, n, prec(&pr, n) < 4);
  if (pr.out.oom) {
    free(pr.out.p);
    return NULL;
  }
  return pr.out.p;
}

static void print_decl(ft_strbuf *b, const ft_ep_param *q) {
  char num[48];
  if (q->kind == FT_PARAM_COLVEC) ft_sb_printf(b, "col %s", q->name);
  else if (q->kind == FT_PARAM_ROWVEC) ft_sb_printf(b, "row %s", q->name);
  else if (!q->has_default) ft_sb_printf(b, "scalar %s", q->name);
  else {
    format_number(q->def, num, sizeof num);
    ft_sb_printf(b, "%s = %s", q->name, num);
  }
}

static char *print_canonical(const ft_epilogue *ep) {
  printer pr = {ep, PM_CANON, NULL, {0}};
  print_node(&pr, ep->root);
  int first = 1;
  for (int i = 0; i < ep->nparams; i++) {
    if (strcmp(ep->params[i].name, "bias") == 0) continue; /* implicit */
    ft_sb_puts(&pr.out, first ? " where " : ", ");
    print_decl(&pr.out, &ep->params[i]);
    first = 0;
  }
  if (pr.out.oom) {
    free(pr.out.p);
    return NULL;
  }
  return pr.out.p;
}

/* ------------------------------------------------------------------------------------------ */
/* Public: parse                                                                                */

void ft_ep_free(ft_epilogue *ep) {
  if (!ep) return;
  free(ep->nodes);
  free(ep->canon);
  free(ep->cuda);
  free(ep);
}

static int uses_x(const parser *p) {
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].kind == N_X) return 1;
  return 0;
}

static ft_status parse_text(parser *p, ft_epilogue *ep) {
  FT_TRY(next_token(p));
  if (p->tok.kind == T_END) return perr(p, p->tok.pos + 1, "empty expression");
  FT_TRY(parse_expr(p, &ep->root));
  if (tok_is(p, &p->tok, "where")) FT_TRY(parse_decls(p));
  if (p->tok.kind != T_END) return unexpected(p, "an operator, 'where' or the end");
  FT_TRY(resolve_names(p, ep));
  if (!uses_x(p)) return perr(p, 1, "the expression does not use x (the GEMM result)");
  return FT_OK;
}

static ft_status finish(ft_epilogue *ep, ft_err *err) {
  ep->canon = print_canonical(ep);
  ep->cuda = print_cuda(ep, ep->root, NULL);
  if (!ep->canon || !ep->cuda) return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  ft__hash_hex(ep->canon, strlen(ep->canon), ep->hash);
  return FT_OK;
}

/* The preset expansion when the whole text, spaces aside, is a preset name. */
static const char *expand_preset(const char *text) {
  const char *word = text;
  while (is_space(*word)) word++;
  size_t len = 0;
  while (is_alnum(word[len])) len++;
  for (size_t i = len; word[i]; i++)
    if (!is_space(word[i])) return text;
  for (int i = 0; i < N_PRESETS; i++)
    if (strlen(k_preset_names[i]) == len && memcmp(k_preset_names[i], word, len) == 0) return k_preset_texts[i];
  return text;
}


ft_status ft_ep_parse(const char *text, ft_epilogue **out, ft_err *err) {
  if (out) *out = NULL;
  if (!text || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: NULL argument");
  if (ft__bounded_len(text, FT_EP_MAX_TEXT + 1) > FT_EP_MAX_TEXT)
    return ft__fail(err, FT_ERR_PARSE, "epilogue: col %d: text longer than %d bytes", FT_EP_MAX_TEXT + 1,
                    FT_EP_MAX_TEXT);
  ft_epilogue *ep = calloc(1, sizeof *ep);
  if (!ep) return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  parser p = {0};
  p.src = expand_preset(text);
  p.err = err;
  ft_status s = parse_text(&p, ep);
  ep->nodes = p.nodes;
  ep->nnodes = p.nnodes;
  if (s == FT_OK) s = finish(ep, err);
  if (s != FT_OK) {
    ft_ep_free(ep);
    return s;
  }
  *out = ep;
  return FT_OK;
}

const char *ft_ep_canonical(const ft_epilogue *ep) { return ep->canon; }
const char *ft_ep_hash(const ft_epilogue *ep) { return ep->hash; }
const char *ft_ep_cuda(const ft_epilogue *ep) { return ep->cuda; }
int ft_ep_param_count(const ft_epilogue *ep) { return ep->nparams; }

const ft_ep_param *ft_ep_param_at(const ft_epilogue *ep, int slot) {
  if (slot < 0 || slot >= ep->nparams) return NULL;
  return &ep->params[slot];
}

/* ------------------------------------------------------------------------------------------ */
/* Float64 evaluator: the definitions of docs/EPILOGUE.md, mirrored by kernels_src/ft_math.cuh. */

/* min/max propagate a NaN from either side, as torch.minimum/maximum do. */
static double ev_min(double a, double b) { return (a < b || a != a) ? a : b; }
static double ev_max(double a, double b) { return (a > b || a != a) ? a : b; }
static double ev_softplus(double a) { return a > 20.0 ? a : log1p(exp(a)); }

/* 0.5 x (1 + erf(x / sqrt 2)), written with erfc to avoid cancellation for negative x. */
static double ev_gelu(double a) { return 0.5 * a * erfc(-a * 0.70710678118654752440); }

static double ev_gelu_tanh(double a) {
  return 0.5 * a * (1.0 + tanh(0.7978845608028654 * (a + 0.044715 * a * a * a)));
}

static double eval_call(fn_id fn, const double *a) {
  switch (fn) {
    case FN_MIN: return ev_min(a[0], a[1]);
    case FN_MAX: return ev_max(a[0], a[1]);
    case FN_RELU: return ev_max(a[0], 0.0);
    case FN_LEAKY_RELU: return a[0] > 0.0 ? a[0] : a[0] * a[1];
    case FN_GELU: return ev_gelu(a[0]);
    case FN_GELU_TANH: return ev_gelu_tanh(a[0]);
    case FN_SIGMOID: return 1.0 / (1.0 + exp(-a[0]));
    case FN_SILU: return a[0] / (1.0 + exp(-a[0]));
    case FN_TANH: return tanh(a[0]);
    case FN_MISH: return a[0] * tanh(ev_softplus(a[0]));
    case FN_SOFTPLUS: return ev_softplus(a[0]);
    case FN_ELU: return a[0] > 0.0 ? a[0] : expm1(a[0]);
    case FN_CLAMP: return ev_min(ev_max(a[0], a[1]), a[2]);
    case FN_ABS: return fabs(a[0]);
    case FN_EXP: return exp(a[0]);
    case FN_LOG: return log(a[0]);
    case FN_SQRT: return sqrt(a[0]);
    case FN_COUNT: break;
  }
  return NAN;
}

static double eval_node(const ft_epilogue *ep, int n, double x, const double *vals) {
  const ep_node *nd = &ep->nodes[n];
  double a[3] = {0.0, 0.0, 0.0};
  for (int i = 0; i < nd->nkids; i++) a[i] = eval_node(ep, nd->kid[i], x, vals);
  switch (nd->kind) {
    case N_NUM: return nd->num;
    case N_X: return x;
    case N_PARAM: return vals ? vals[nd->slot] : NAN;
    case N_NEG: return -a[0];
    case N_ADD: return a[0] + a[1];
    case N_SUB: return a[0] - a[1];
    case N_MUL: return a[0] * a[1];
    case N_DIV: return a[0] / a[1];
    case N_CALL: return eval_call((fn_id)nd->fn, a);
    case N_REF: break;
  }
  return NAN;
}

double ft_ep_eval(const ft_epilogue *ep, double x, const double *vals) {
  return eval_node(ep, ep->root, x, vals);
}

/* ------------------------------------------------------------------------------------------ */
/* Eager plan                                                                                   */

typedef struct eager_ctx {
  const ft_epilogue *ep;
  int *buf;     /* node -> buffer holding its value (0 = GEMM, j = step j-1), or -1 */
  int *in_of;   /* scratch for the printer */
  char *xdep;   /* node depends on x */
  ft_ep_eager *out;
  ft_err *err;
} eager_ctx;

static void mark_xdep(eager_ctx *c) {
  /* Children always precede parents in the node array, so one forward pass suffices. */
  for (int i = 0; i < c->ep->nnodes; i++) {
    const ep_node *nd = &c->ep->nodes[i];
    c->xdep[i] = nd->kind == N_X;
    for (int k = 0; k < nd->nkids; k++) c->xdep[i] |= c->xdep[nd->kid[k]];
  }
}

/* nn.Linear's addmm: the one `x + colvec` (either order) becomes the GEMM's own output. */
static void fold_bias(eager_ctx *c) {
  int xs = 0, xnode = -1;
  for (int i = 0; i < c->ep->nnodes; i++) {
    if (c->ep->nodes[i].kind != N_X) continue;
    xs++;
    xnode = i;
    c->buf[i] = 0; /* every x reads the GEMM output */
  }
  c->out->gemm_bias_slot = -1;
  if (xs != 1) return;
  for (int i = 0; i < c->ep->nnodes; i++) {
    const ep_node *nd = &c->ep->nodes[i];
    if (nd->kind != N_ADD || (nd->kid[0] != xnode && nd->kid[1] != xnode)) continue;
    const ep_node *other = &c->ep->nodes[nd->kid[0] == xnode ? nd->kid[1] : nd->kid[0]];
    if (other->kind != N_PARAM || c->ep->params[other->slot].kind != FT_PARAM_COLVEC) return;
    c->out->gemm_bias_slot = other->slot;
    c->buf[i] = 0;
  }
}

static ft_status emit_step(eager_ctx *c, int n) {
  const ep_node *nd = &c->ep->nodes[n];
  if (c->out->nsteps == FT_EP_MAX_STEPS)
    return ft__fail(c->err, FT_ERR_UNSUPPORTED, "epilogue: eager plan needs more than %d passes", FT_EP_MAX_STEPS);
  ft_ep_step *st = &c->out->steps[c->out->nsteps];
  memset(st, 0, sizeof *st);
  for (int k = 0; k < nd->nkids; k++) {
    int kid = nd->kid[k];
    if (!c->xdep[kid]) continue;
    int j = 0;
    while (j < st->nin && st->in[j] != c->buf[kid]) j++;
    if (j == st->nin) st->in[st->nin++] = c->buf[kid];
    c->in_of[kid] = j;
  }
  char *text = print_cuda(c->ep, n, c->in_of);
  for (int k = 0; k < nd->nkids; k++) c->in_of[nd->kid[k]] = -1;
  if (!text) return ft__fail(c->err, FT_ERR_NOMEM, "epilogue: out of memory");
  size_t len = strlen(text);
  if (len >= sizeof st->expr) {
    free(text);
    return ft__fail(c->err, FT_ERR_UNSUPPORTED, "epilogue: an eager step is longer than %zu characters",
                    sizeof st->expr - 1);
  }
  memcpy(st->expr, text, len + 1);
  free(text);
  c->buf[n] = ++c->out->nsteps;
  return FT_OK;
}

/* Post-order: operands first, left to right, as eager code would run them. Operations that do
 * not involve x (constants, parameters) are inlined into the step that uses them. */
static ft_status plan_node(eager_ctx *c, int n) {
  if (!c->xdep[n] || c->buf[n] >= 0) return FT_OK;
  const ep_node *nd = &c->ep->nodes[n];
  for (int k = 0; k < nd->nkids; k++) FT_TRY(plan_node(c, nd->kid[k]));
  return emit_step(c, n);
}

ft_status ft_ep_eager_plan(const ft_epilogue *ep, ft_ep_eager *out, ft_err *err) {
  if (!ep || !out) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: NULL argument");
  size_t nn = (size_t)ep->nnodes;
  eager_ctx c = {ep, malloc(nn * sizeof(int)), malloc(nn * sizeof(int)), malloc(nn), out, err};
  ft_status s = FT_OK;
  if (!c.buf || !c.in_of || !c.xdep) {
    s = ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  } else {
    for (size_t i = 0; i < nn; i++) c.buf[i] = c.in_of[i] = -1;
    out->nsteps = 0;
    mark_xdep(&c);
    fold_bias(&c);
    s = plan_node(&c, ep->root);
  }
  free(c.buf);
  free(c.in_of);
  free(c.xdep);
  return s;
}
