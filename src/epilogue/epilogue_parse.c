/* The epilogue parser: tokens -> AST, the `where` declarations, name resolution and slot order.
 * Grammar: docs/EPILOGUE.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue_internal.h"

/* Other spellings of the same function; the canonical text uses the table name. */
static const struct {
  const char *name;
  fn_id id;
} k_aliases[] = {{"swish", FN_SILU}, {"hardtanh", FN_CLAMP}};

#define N_ALIASES (sizeof k_aliases / sizeof k_aliases[0])

/* Words that can never name a parameter. */
static const char *const k_reserved[] = {"x", "x2", "where", "scalar", "col", "row", "mat"};
#define N_RESERVED (sizeof k_reserved / sizeof k_reserved[0])

/* Names: functions, reserved words, suggestions. */

static int find_function(const char *s, int len) {
  for (int i = 0; i < FN_COUNT; i++)
    if ((int)strlen(ft__ep_fns[i].name) == len && memcmp(ft__ep_fns[i].name, s, (size_t)len) == 0) return i;
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

/* A function or a reduction: a word that names no parameter and is called, never read. */
static int is_callable(const char *s, int len) {
  return find_function(s, len) >= 0 || ft__ep_find_reduction(s, len) != FT_RED_NONE;
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
  for (int i = 0; i < FN_COUNT; i++) consider(&sg, name, len, ft__ep_fns[i].name);
  for (size_t i = 0; i < N_ALIASES; i++) consider(&sg, name, len, k_aliases[i].name);
  for (int r = FT_RED_NONE + 1; r < FT_RED_COUNT; r++) consider(&sg, name, len, ft_ep_red_name((ft_ep_red)r));
  format_hint(&sg, len, out, n);
}

static void suggest_name(const parser *p, const char *name, int len, char *out, size_t n) {
  suggestion sg = {NULL, 1 << 20};
  for (int i = 0; i < p->ndecls; i++) consider(&sg, name, len, p->decls[i].name);
  consider(&sg, name, len, "x");
  consider(&sg, name, len, "bias");
  for (int i = 0; i < FN_COUNT; i++) consider(&sg, name, len, ft__ep_fns[i].name);
  format_hint(&sg, len, out, n);
}

/* Parser: recursive descent, nesting bounded while parsing so no input can blow the stack. */

static ft_status new_node(parser *p, node_kind kind, int col, const int *kids, int nkids, int *out) {
  int depth = 0;
  for (int i = 0; i < nkids; i++)
    if (p->nodes[kids[i]].depth + 1 > depth) depth = p->nodes[kids[i]].depth + 1;
  if (depth > FT_EP_MAX_DEPTH) return ft__ep_perr(p, col, "nesting deeper than %d levels", FT_EP_MAX_DEPTH);
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
  if (++p->nest > FT_EP_MAX_DEPTH) return ft__ep_perr(p, col, "nesting deeper than %d levels", FT_EP_MAX_DEPTH);
  return FT_OK;
}

static ft_status parse_expr(parser *p, int *out);

static ft_status parse_call(parser *p, token name, int *out) {
  const char *s = p->src + name.pos;
  int fn = find_function(s, name.len);
  const ft_ep_red red = ft__ep_find_reduction(s, name.len);
  if (red != FT_RED_NONE) return ft__ep_parse_reduction(p, name, red, out);
  if (fn < 0) {
    char hint[64];
    suggest_function(s, name.len, hint, sizeof hint);
    return ft__ep_perr(p, name.pos + 1, "unknown function '%.*s'%s", name.len, s, hint);
  }
  FT_TRY(enter(p, name.pos + 1));
  FT_TRY(ft__ep_next_token(p)); /* '(' */
  int kids[3], nargs = 0, arity = ft__ep_fns[fn].arity;
  while (p->tok.kind != T_RPAREN || nargs > 0) {
    if (nargs == arity)
      return ft__ep_perr(p, p->tok.pos + 1, "'%.*s' takes %d argument%s", name.len, s, arity, arity > 1 ? "s" : "");
    FT_TRY(parse_expr(p, &kids[nargs++]));
    if (p->tok.kind != T_COMMA) break;
    FT_TRY(ft__ep_next_token(p));
  }
  FT_TRY(ft__ep_expect(p, T_RPAREN, "',' or ')'"));
  if (nargs != arity)
    return ft__ep_perr(p, name.pos + 1, "'%.*s' takes %d argument%s, got %d", name.len, s, arity,
                arity > 1 ? "s" : "", nargs);
  p->nest--;
  FT_TRY(new_node(p, N_CALL, name.pos + 1, kids, nargs, out));
  p->nodes[*out].fn = fn;
  return FT_OK;
}

static ft_status parse_name(parser *p, token name, int *out) {
  const char *s = p->src + name.pos;
  int col = name.pos + 1;
  if (ft__ep_tok_is(p, &name, "x")) return new_node(p, N_X, col, NULL, 0, out);
  if (ft__ep_tok_is(p, &name, "x2")) return new_node(p, N_X2, col, NULL, 0, out); /* a gated pair's second product */
  if (ft__ep_is_nonfinite_word(s, name.len)) return ft__ep_perr(p, col, "numbers must be finite ('%.*s')", name.len, s);
  if (is_callable(s, name.len))
    return ft__ep_perr(p, col, "'%.*s' is a function: call it as %.*s(...)", name.len, s, name.len, s);
  if (is_reserved(s, name.len)) return ft__ep_perr(p, col, "expected an operand, found '%.*s'", name.len, s);
  FT_TRY(new_node(p, N_REF, col, NULL, 0, out));
  p->nodes[*out].len = name.len;
  return FT_OK;
}

static ft_status parse_primary(parser *p, int *out) {
  token t = p->tok;
  if (t.kind == T_NUM) {
    FT_TRY(new_node(p, N_NUM, t.pos + 1, NULL, 0, out));
    p->nodes[*out].num = t.num;
    return ft__ep_next_token(p);
  }
  if (t.kind == T_LPAREN) {
    FT_TRY(enter(p, t.pos + 1));
    FT_TRY(ft__ep_next_token(p));
    FT_TRY(parse_expr(p, out));
    FT_TRY(ft__ep_expect(p, T_RPAREN, "')'"));
    p->nest--;
    return FT_OK;
  }
  if (t.kind != T_IDENT) return ft__ep_unexpected(p, "an operand");
  FT_TRY(ft__ep_next_token(p));
  if (p->tok.kind == T_LPAREN) return parse_call(p, t, out);
  return parse_name(p, t, out);
}

static ft_status parse_unary(parser *p, int *out) {
  if (p->tok.kind != T_MINUS) return parse_primary(p, out);
  int col = p->tok.pos + 1, kid;
  FT_TRY(enter(p, col));
  FT_TRY(ft__ep_next_token(p));
  FT_TRY(parse_unary(p, &kid));
  p->nest--;
  return new_node(p, N_NEG, col, &kid, 1, out);
}

static ft_status parse_binary_rest(parser *p, int lhs, tok_kind a, node_kind ka, tok_kind b,
                                   node_kind kb, ft_status (*operand)(parser *, int *), int *out) {
  while (p->tok.kind == a || p->tok.kind == b) {
    node_kind k = p->tok.kind == a ? ka : kb;
    int col = p->tok.pos + 1, kids[2] = {lhs, 0};
    FT_TRY(ft__ep_next_token(p));
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

/* Declarations: `where NAME = NUMBER, scalar NAME [= NUMBER], col NAME, row NAME`. */

static ft_status parse_signed_number(parser *p, double *out) {
  int neg = 0;
  if (p->tok.kind == T_MINUS) {
    neg = 1;
    FT_TRY(ft__ep_next_token(p));
  }
  if (p->tok.kind == T_IDENT && ft__ep_is_nonfinite_word(p->src + p->tok.pos, p->tok.len))
    return ft__ep_perr(p, p->tok.pos + 1, "numbers must be finite ('%.*s')", p->tok.len, p->src + p->tok.pos);
  if (p->tok.kind != T_NUM) return ft__ep_unexpected(p, "a number");
  *out = neg ? -p->tok.num : p->tok.num;
  return ft__ep_next_token(p);
}

static ft_status check_decl_name(parser *p, const token *t, ft_param_kind kind, int has_default) {
  const char *s = p->src + t->pos;
  int col = t->pos + 1;
  if (is_reserved(s, t->len)) return ft__ep_perr(p, col, "'%.*s' is reserved and cannot name a parameter", t->len, s);
  if (is_callable(s, t->len))
    return ft__ep_perr(p, col, "'%.*s' is a function and cannot name a parameter", t->len, s);
  if (ft__ep_is_nonfinite_word(s, t->len)) return ft__ep_perr(p, col, "'%.*s' cannot name a parameter", t->len, s);
  if (ft__ep_tok_is(p, t, "bias") && (kind != FT_PARAM_COLVEC || has_default))
    return ft__ep_perr(p, col, "'bias' is the built-in per-column vector; it can only be declared 'col bias'");
  for (int i = 0; i < p->ndecls; i++)
    if ((int)strlen(p->decls[i].name) == t->len && memcmp(p->decls[i].name, s, (size_t)t->len) == 0)
      return ft__ep_perr(p, col, "'%.*s' is declared twice", t->len, s);
  if (p->ndecls == FT_EP_MAX_PARAMS) return ft__ep_perr(p, col, "more than %d parameters", FT_EP_MAX_PARAMS);
  return FT_OK;
}

/* Reads the kind keyword, if any, and the name. */
static ft_status parse_decl_head(parser *p, ft_param_kind *kind, int *keyword, token *name) {
  static const char *const words[] = {"scalar", "col", "row", "mat"};
  static const ft_param_kind kinds[] = {FT_PARAM_SCALAR, FT_PARAM_COLVEC, FT_PARAM_ROWVEC, FT_PARAM_MATRIX};
  if (p->tok.kind != T_IDENT)
    return ft__ep_unexpected(p, "a declaration ('NAME = NUMBER', 'scalar NAME', 'col NAME', 'row NAME' or 'mat NAME')");
  *kind = FT_PARAM_SCALAR;
  *keyword = 0;
  for (int i = 0; i < 4; i++) {
    if (!ft__ep_tok_is(p, &p->tok, words[i])) continue;
    *kind = kinds[i];
    *keyword = 1;
    FT_TRY(ft__ep_next_token(p));
    if (p->tok.kind != T_IDENT) return ft__ep_unexpected(p, "a parameter name");
    break;
  }
  *name = p->tok;
  return ft__ep_next_token(p);
}

static ft_status parse_decl(parser *p) {
  ft_param_kind kind = FT_PARAM_SCALAR;
  int keyword = 0, has_default = 0;
  double def = 0.0;
  token name = {0};
  FT_TRY(parse_decl_head(p, &kind, &keyword, &name));
  if (p->tok.kind == T_EQ && kind == FT_PARAM_SCALAR) {
    FT_TRY(ft__ep_next_token(p));
    FT_TRY(parse_signed_number(p, &def));
    has_default = 1;
  } else if (p->tok.kind == T_EQ) {
    return ft__ep_perr(p, p->tok.pos + 1, "only scalars take a default value");
  } else if (!keyword) {
    return ft__ep_unexpected(p, "'=' (or declare the name with scalar, col, row or mat)");
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
  FT_TRY(ft__ep_next_token(p)); /* `where` */
  for (;;) {
    FT_TRY(parse_decl(p));
    if (p->tok.kind != T_COMMA) return FT_OK;
    FT_TRY(ft__ep_next_token(p));
  }
}

/* Name resolution and slot order. */

static int find_decl(const parser *p, const char *s, int len) {
  for (int i = 0; i < p->ndecls; i++)
    if ((int)strlen(p->decls[i].name) == len && memcmp(p->decls[i].name, s, (size_t)len) == 0) return i;
  return -1;
}

static ft_status resolve_ref(parser *p, ep_node *nd) {
  const char *s = p->src + nd->col - 1;
  int d = find_decl(p, s, nd->len);
  if (d < 0 && nd->len == 4 && memcmp(s, "bias", 4) == 0) {
    if (p->ndecls == FT_EP_MAX_PARAMS) return ft__ep_perr(p, nd->col, "more than %d parameters", FT_EP_MAX_PARAMS);
    d = p->ndecls++;
    memset(&p->decls[d], 0, sizeof p->decls[d]);
    strcpy(p->decls[d].name, "bias");
    p->decls[d].kind = FT_PARAM_COLVEC;
    p->decls[d].col = nd->col;
  }
  if (d < 0) {
    char hint[64];
    suggest_name(p, s, nd->len, hint, sizeof hint);
    return ft__ep_perr(p, nd->col, "unknown name '%.*s'%s", nd->len, s, hint);
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
    if (!p->decls[i].used) return ft__ep_perr(p, p->decls[i].col, "'%s' is declared but not used", p->decls[i].name);
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

static int uses_kind(const parser *p, node_kind kind) {
  for (int i = 0; i < p->nnodes; i++)
    if (p->nodes[i].kind == kind) return 1;
  return 0;
}

ft_status ft__ep_parse_text(parser *p, ft_epilogue *ep) {
  FT_TRY(ft__ep_next_token(p));
  if (p->tok.kind == T_END) return ft__ep_perr(p, p->tok.pos + 1, "empty expression");
  FT_TRY(parse_expr(p, &ep->root));
  if (ft__ep_tok_is(p, &p->tok, "where")) FT_TRY(parse_decls(p));
  if (p->tok.kind != T_END) return ft__ep_unexpected(p, "an operator, 'where' or the end");
  FT_TRY(resolve_names(p, ep));
  if (!uses_kind(p, N_X)) return ft__ep_perr(p, 1, "the expression does not use x (the GEMM result)");
  ep->uses_x2 = uses_kind(p, N_X2);
  /* A reduction's kernels do not compute x2 (matrices follow the col vectors' rules: epilogue_reduce.c). */
  if (uses_kind(p, N_RED) && ep->uses_x2) return ft__ep_perr(p, 1, "x2 in an expression with a reduction: not supported");
  return ft__ep_check_reductions(p, ep);
}

/* For epilogue_reduce.c's calls. */
ft_status ft__ep_parse_expr(parser *p, int *out) { return parse_expr(p, out); }
ft_status ft__ep_new_node(parser *p, node_kind kind, int col, const int *kids, int nkids, int *out) {
  return new_node(p, kind, col, kids, nkids, out);
}
ft_status ft__ep_enter(parser *p, int col) { return enter(p, col); }
