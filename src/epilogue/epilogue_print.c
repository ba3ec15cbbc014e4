/* The epilogue printers: one walk of the AST for the canonical text, the CUDA text and the
 * eager steps' expressions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue_internal.h"
#include "strbuf.h"

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

typedef enum print_mode { PM_CANON, PM_CUDA } print_mode;

typedef struct printer {
  const ft_epilogue *ep;
  print_mode mode;
  const int *in_of; /* PM_CUDA steps: node -> IN operand index, or -1; NULL otherwise */
  ft_strbuf out;
} printer;

static int is_input(const printer *pr, int n) { return pr->in_of && pr->in_of[n] >= 0; }
static int is_as_x(const printer *pr, int n) { return pr->in_of && pr->in_of[n] == FT__EP_AS_X; }

static int prec(const printer *pr, int n) {
  if (is_input(pr, n) || is_as_x(pr, n)) return 4;
  switch (pr->ep->nodes[n].kind) {
    case N_ADD:
    case N_SUB:
      return 1;
    case N_MUL:
      return 2;
    case N_DIV: /* ft_div(a, b) in CUDA text: a call */
      return pr->mode == PM_CUDA ? 4 : 2;
    case N_NEG:
      return 3;
    default:
      return 4;
  }
}

static void print_node(printer *pr, int n);
static void print_binary(printer *pr, int n);

static void print_wrapped(printer *pr, int n, int parens) {
  if (parens) ft_sb_puts(&pr->out, "(");
  print_node(pr, n);
  if (parens) ft_sb_puts(&pr->out, ")");
}

static void print_param(printer *pr, const ep_node *nd) {
  const ft_ep_param *q = &pr->ep->params[nd->slot];
  if (pr->mode == PM_CANON) ft_sb_puts(&pr->out, q->name);
  else if (q->kind == FT_PARAM_SCALAR) ft_sb_printf(&pr->out, "ep.s[%d]", nd->slot);
  else if (q->kind == FT_PARAM_MATRIX) /* the row pitch rides in the slot's scalar (ft_ep_mat_pitch) */
    ft_sb_printf(&pr->out, "ep.v[%d][(long long)row * __float_as_int(ep.s[%d]) + col]", nd->slot, nd->slot);
  else ft_sb_printf(&pr->out, "ep.v[%d][%s]", nd->slot, q->kind == FT_PARAM_COLVEC ? "col" : "row");
}

static void print_leaf(printer *pr, const ep_node *nd) {
  char num[48];
  if (nd->kind == N_X || nd->kind == N_X2) {
    ft_sb_puts(&pr->out, nd->kind == N_X ? "x" : "x2");
  } else if (nd->kind == N_PARAM) {
    print_param(pr, nd);
  } else {
    if (pr->mode == PM_CANON) format_number(nd->num, num, sizeof num);
    else format_float_literal(nd->num, num, sizeof num);
    ft_sb_puts(&pr->out, num);
  }
}

static void print_call(printer *pr, const ep_node *nd) {
  /* tanh(softplus(e)) in CUDA as one function (ft_math.cuh): e^e (e^e + 2) / (e^e (e^e + 2) + 2),
   * one exponential and a quotient instead of an exponential, a logarithm and a tanh. */
  if (pr->mode == PM_CUDA && nd->fn == FN_TANH && !is_input(pr, nd->kid[0]) && !is_as_x(pr, nd->kid[0]) &&
      pr->ep->nodes[nd->kid[0]].kind == N_CALL && pr->ep->nodes[nd->kid[0]].fn == FN_SOFTPLUS) {
    ft_sb_puts(&pr->out, "ft_tanh_softplus(");
    print_node(pr, pr->ep->nodes[nd->kid[0]].kid[0]);
    ft_sb_puts(&pr->out, ")");
    return;
  }
  ft_sb_puts(&pr->out, pr->mode == PM_CANON ? ft__ep_fns[nd->fn].name : ft__ep_fns[nd->fn].cuda);
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
  if (is_input(pr, n)) {
    ft_sb_printf(&pr->out, "IN%d", pr->in_of[n]);
    return;
  }
  if (is_as_x(pr, n)) {
    ft_sb_puts(&pr->out, "x");
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
    case N_DIV:
      /* CUDA's "/" is IEEE division: a branch to a slow path per quotient, which keeps the
       * scheduler from interleaving a tile's epilogue (ft_math.cuh, ft_div). */
      if (pr->mode == PM_CUDA) {
        ft_sb_puts(&pr->out, "ft_div(");
        print_node(pr, nd->kid[0]);
        ft_sb_puts(&pr->out, ", ");
        print_node(pr, nd->kid[1]);
        ft_sb_puts(&pr->out, ")");
      } else {
        print_binary(pr, n);
      }
      return;
    case N_ADD:
    case N_SUB:
    case N_MUL:
      print_binary(pr, n);
      return;
    case N_CALL:
      print_call(pr, nd);
      return;
    case N_RED: /* canonical only: reductions have no CUDA expression (ft_ep_cuda) */
      ft_sb_printf(&pr->out, "%s(", ft_ep_red_name((ft_ep_red)nd->fn));
      print_node(pr, nd->kid[0]);
      if (nd->num > 0) ft_sb_printf(&pr->out, ", %d", (int)nd->num);
      ft_sb_puts(&pr->out, ")");
      return;
    default:
      print_leaf(pr, nd);
      return;
  }
}

/* a op b with the parentheses print_node's comment describes. */
static void print_binary(printer *pr, int n) {
  static const char *const ops[] = {[N_ADD] = " + ", [N_SUB] = " - ", [N_MUL] = " * ", [N_DIV] = " / "};
  const ep_node *nd = &pr->ep->nodes[n];
  print_wrapped(pr, nd->kid[0], prec(pr, nd->kid[0]) < prec(pr, n));
  ft_sb_puts(&pr->out, ops[nd->kind]);
  print_wrapped(pr, nd->kid[1], prec(pr, nd->kid[1]) <= prec(pr, n));
}

/* The CUDA text is parenthesized when it is an operator, so callers may embed it anywhere. */
char *ft__ep_print_cuda(const ft_epilogue *ep, int n, const int *in_of) {
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
  else if (q->kind == FT_PARAM_MATRIX) ft_sb_printf(b, "mat %s", q->name);
  else if (!q->has_default) ft_sb_printf(b, "scalar %s", q->name);
  else {
    format_number(q->def, num, sizeof num);
    ft_sb_printf(b, "%s = %s", q->name, num);
  }
}

char *ft__ep_print_canonical(const ft_epilogue *ep) {
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
