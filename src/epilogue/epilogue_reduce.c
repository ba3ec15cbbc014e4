/* Reductions in the epilogue language: their table, their calls' parsing, the nesting rules the
 * design accepts, the output shape and the refusal where no kernel serves them. The rules and
 * every definition: docs/EPILOGUE.md, "Reductions". */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "epilogue_internal.h"

/* What a reduction reduces over, which decides what may surround it. */
typedef enum red_class {
  RC_ROW,     /* the row, one value per row: [M] */
  RC_ROWWISE, /* the row, a value per element: [M, N] */
  RC_GROUP,   /* G groups of consecutive features of the row: [M, N] */
  RC_COLUMN,  /* the M rows of each column: [M, N] */
  RC_POOL     /* windows of w consecutive features: [M, N / w] */
} red_class;

typedef struct red_def {
  const char *name;
  red_class cls;
  const char *arg; /* what the integer second argument is, or NULL when there is none */
  int max_arg;
} red_def;

static const red_def k_reds[FT_RED_COUNT] = {
    [FT_RED_NONE] = {"", RC_ROW, NULL, 0},
    [FT_RED_ROWSUM] = {"rowsum", RC_ROW, NULL, 0},
    [FT_RED_ROWMEAN] = {"rowmean", RC_ROW, NULL, 0},
    [FT_RED_ROWMAX] = {"rowmax", RC_ROW, NULL, 0},
    [FT_RED_ROWMIN] = {"rowmin", RC_ROW, NULL, 0},
    [FT_RED_LOGSUMEXP] = {"logsumexp", RC_ROW, NULL, 0},
    [FT_RED_SOFTMAX] = {"softmax", RC_ROWWISE, NULL, 0},
    [FT_RED_LOG_SOFTMAX] = {"log_softmax", RC_ROWWISE, NULL, 0},
    [FT_RED_GROUPNORM] = {"groupnorm", RC_GROUP, "group count", 65536},
    [FT_RED_BATCHNORM] = {"batchnorm", RC_COLUMN, NULL, 0},
    [FT_RED_MAXPOOL] = {"maxpool", RC_POOL, "window", 1024},
    [FT_RED_AVGPOOL] = {"avgpool", RC_POOL, "window", 1024},
};

const char *ft_ep_red_name(ft_ep_red r) {
  return (r > FT_RED_NONE && r < FT_RED_COUNT) ? k_reds[r].name : "";
}

ft_ep_red ft__ep_find_reduction(const char *s, int len) {
  for (int r = FT_RED_NONE + 1; r < FT_RED_COUNT; r++)
    if ((int)strlen(k_reds[r].name) == len && memcmp(k_reds[r].name, s, (size_t)len) == 0) return (ft_ep_red)r;
  return FT_RED_NONE;
}

/* Whether the subtrees at a and b are the same expression: the same tree, names compared by their
 * text (they are resolved after parsing), so the same canonical text. */
static int same_tree(const parser *p, int a, int b) {
  const ep_node *x = &p->nodes[a], *y = &p->nodes[b];
  if (x->kind != y->kind || x->fn != y->fn || x->nkids != y->nkids || x->num != y->num) return 0;
  if (x->kind == N_REF && (x->len != y->len || memcmp(p->src + x->col - 1, p->src + y->col - 1, (size_t)x->len) != 0))
    return 0;
  for (int k = 0; k < x->nkids; k++)
    if (!same_tree(p, x->kid[k], y->kid[k])) return 0;
  return 1;
}

/* A reduction written again with the same argument is the first one's node: its value is reused
 * (`l * mish(l)` with l = logsumexp(...)), so the tree becomes a DAG. The new node's subtree is
 * the tail of the node array from first on (the parser appends), so it is dropped whole. */
static void reuse_reduction(parser *p, int first, int *out) {
  for (int i = 0; i < first; i++)
    if (p->nodes[i].kind == N_RED && same_tree(p, i, *out)) {
      p->nnodes = first;
      *out = i;
      return;
    }
}

/* `name(e)`, or `name(e, INTEGER)` for groupnorm and the pools. The integer is a literal: it sizes
 * the groups or windows, which a kernel fixes when it is compiled. */
ft_status ft__ep_parse_reduction(parser *p, token name, ft_ep_red r, int *out) {
  const red_def *d = &k_reds[r];
  const int col = name.pos + 1, nargs = d->arg ? 2 : 1, first = p->nnodes;
  FT_TRY(ft__ep_enter(p, col));
  FT_TRY(ft__ep_next_token(p)); /* '(' */
  if (p->tok.kind == T_RPAREN)
    return ft__ep_perr(p, col, "'%s' takes %d argument%s, got 0", d->name, nargs, nargs > 1 ? "s" : "");
  int kid;
  double arg = 0.0;
  FT_TRY(ft__ep_parse_expr(p, &kid));
  if (d->arg) {
    if (p->tok.kind != T_COMMA)
      return ft__ep_perr(p, p->tok.pos + 1, "'%s' takes 2 arguments: an expression and its %s", d->name, d->arg);
    FT_TRY(ft__ep_next_token(p));
    const token t = p->tok;
    if (t.kind != T_NUM || t.num != floor(t.num) || t.num < 1 || t.num > d->max_arg)
      return ft__ep_perr(p, t.pos + 1, "the %s of '%s' must be a whole number from 1 to %d", d->arg, d->name,
                         d->max_arg);
    arg = t.num;
    FT_TRY(ft__ep_next_token(p));
  } else if (p->tok.kind == T_COMMA) {
    return ft__ep_perr(p, p->tok.pos + 1, "'%s' takes 1 argument", d->name);
  }
  FT_TRY(ft__ep_expect(p, T_RPAREN, "')'"));
  p->nest--;
  FT_TRY(ft__ep_new_node(p, N_RED, col, &kid, 1, out));
  p->nodes[*out].fn = (int)r;
  p->nodes[*out].num = arg;
  reuse_reduction(p, first, out);
  return FT_OK;
}

/* The nesting rules. One reduction per expression, which may hold one pool (a row reduction of
 * pooled values) or one batchnorm (a row reduction of column-normalized values); its argument uses
 * x; around it, x is not read again and a col vector or a matrix only where the result still has N
 * columns. Each rule is one the kernels' split needs: the fused GEMM computes
 * the part inside on the accumulator and emits partial statistics, the finalize applies the rest
 * from the statistics (and y where the output is [M, N]), never from x. */
typedef struct red_walk {
  parser *p;
  const ft_epilogue *ep;
  const char *xdep;
  int outer, pool; /* the outermost reduction and the pool or batchnorm inside it, or -1 */
  /* The first x and the first col vector read outside every reduction ([0]) and inside the
   * outermost one but outside its pool or batchnorm ([1]): nodes, or -1. */
  int x_at[2], vec_at[2];
} red_walk;

static const char *shape_text(const ep_node *r) {
  return k_reds[r->fn].cls == RC_ROW ? "[M]" : k_reds[r->fn].cls == RC_POOL ? "[M, N / w]" : "[M, N]";
}

static ft_status walk(red_walk *w, int n, int encl) {
  const ep_node *nd = &w->p->nodes[n];
  if (nd->kind == N_RED) {
    const red_def *d = &k_reds[nd->fn];
    /* A reduction reused (written again with the same argument) was walked at its first use; a
     * pool reused outside the reduction holding it is a second reduction, below. */
    if ((n == w->outer && encl < 0) || (n == w->pool && encl >= 0)) return FT_OK;
    if (!w->xdep[nd->kid[0]]) return ft__ep_perr(w->p, nd->col, "the argument of '%s' does not use x", d->name);
    if (encl >= 0) {
      const ep_node *e = &w->p->nodes[encl];
      const red_class ec = k_reds[e->fn].cls;
      if ((d->cls != RC_POOL && d->cls != RC_COLUMN) || (ec != RC_ROW && ec != RC_ROWWISE))
        return ft__ep_perr(w->p, nd->col,
                           "'%s' inside '%s': a reduction may hold only a pool or batchnorm, and only a row reduction "
                           "may hold one", d->name, k_reds[e->fn].name);
      if (w->pool >= 0 && k_reds[w->p->nodes[w->pool].fn].cls == RC_POOL && d->cls == RC_POOL)
        return ft__ep_perr(w->p, nd->col, "a second pool '%s' inside '%s': one pool per reduction", d->name,
                           k_reds[e->fn].name);
      if (w->pool >= 0)
        return ft__ep_perr(w->p, nd->col, "'%s' beside '%s' inside '%s': a reduction holds one pool or batchnorm",
                           d->name, k_reds[w->p->nodes[w->pool].fn].name, k_reds[e->fn].name);
      w->pool = n;
    } else if (w->outer >= 0) {
      const ep_node *o = &w->p->nodes[w->outer];
      if (o->fn == nd->fn)
        return ft__ep_perr(w->p, nd->col,
                           "a second '%s' with another argument (the first is at col %d): an epilogue holds one "
                           "reduction, reused where it is written again with the same argument",
                           d->name, o->col);
      return ft__ep_perr(w->p, nd->col, "a second reduction '%s' (the first, '%s', is at col %d): an epilogue holds one",
                         d->name, k_reds[o->fn].name, o->col);
    } else {
      w->outer = n;
    }
    return walk(w, nd->kid[0], n);
  }
  /* Inside a pool or batchnorm held by the outermost reduction, x and vectors are read per element
   * of the GEMM result: always fine (as inside a pool that is the outermost). */
  const int where = encl < 0 ? 0 : encl != w->outer || k_reds[w->p->nodes[encl].fn].cls == RC_POOL ? -1 : 1;
  if (where >= 0 && nd->kind == N_X && w->x_at[where] < 0) w->x_at[where] = n;
  const ft_param_kind pk = nd->kind == N_PARAM ? w->ep->params[nd->slot].kind : FT_PARAM_SCALAR;
  if (where >= 0 && (pk == FT_PARAM_COLVEC || pk == FT_PARAM_MATRIX) && w->vec_at[where] < 0) w->vec_at[where] = n;
  for (int k = 0; k < nd->nkids; k++) FT_TRY(walk(w, nd->kid[k], encl));
  return FT_OK;
}

ft_status ft__ep_check_reductions(parser *p, const ft_epilogue *ep) {
  int any = 0;
  for (int i = 0; i < p->nnodes && !any; i++) any = p->nodes[i].kind == N_RED;
  if (!any) return FT_OK;
  char *xdep = malloc((size_t)p->nnodes);
  if (!xdep) return ft__fail(p->err, FT_ERR_NOMEM, "epilogue: out of memory");
  for (int i = 0; i < p->nnodes; i++) { /* children precede their parents */
    const ep_node *nd = &p->nodes[i];
    xdep[i] = nd->kind == N_X;
    for (int k = 0; k < nd->nkids; k++) xdep[i] |= xdep[nd->kid[k]];
  }
  red_walk w = {p, ep, xdep, -1, -1, {-1, -1}, {-1, -1}};
  ft_status s = walk(&w, ep->root, -1);
  free(xdep);
  FT_TRY(s);
  const ep_node *o = &p->nodes[w.outer];
  const char *oname = k_reds[o->fn].name;
  if (w.x_at[0] >= 0)
    return ft__ep_perr(p, p->nodes[w.x_at[0]].col,
                       "x is used outside '%s': its result combines only with constants, scalars and vectors", oname);
  const int pooled = w.pool >= 0 && k_reds[p->nodes[w.pool].fn].cls == RC_POOL;
  if (w.pool >= 0 && w.x_at[1] >= 0)
    return ft__ep_perr(p, p->nodes[w.x_at[1]].col, "x is used inside '%s' but outside its '%s': read x inside the %s",
                       oname, k_reds[p->nodes[w.pool].fn].name, pooled ? "pool" : "batchnorm");
  /* A col vector has N values and a matrix N columns: neither can meet an [M] or pooled result. */
  const int narrow = pooled || k_reds[o->fn].cls == RC_ROW || k_reds[o->fn].cls == RC_POOL;
  const int vec = w.vec_at[0] >= 0 && narrow ? w.vec_at[0] : pooled ? w.vec_at[1] : -1;
  if (vec >= 0) {
    const ep_node *by = pooled ? &p->nodes[w.pool] : o;
    const ft_ep_param *q = &ep->params[p->nodes[vec].slot];
    return ft__ep_perr(p, p->nodes[vec].col, "'%s' is a %s but meets the %s result of '%s'", q->name,
                       q->kind == FT_PARAM_MATRIX ? "matrix ([M, N])" : "col vector (N values)", shape_text(by),
                       k_reds[by->fn].name);
  }
  return FT_OK;
}

/* The outermost reduction and the reduction of class c inside it, or -1. Children precede parents,
 * so the outermost is the last; one inside it comes before it. */
static int outer_and_inner(const ft_epilogue *ep, red_class c, int *inner) {
  int outer = -1;
  *inner = -1;
  for (int i = 0; i < ep->nnodes; i++)
    if (ep->nodes[i].kind == N_RED) outer = i;
  for (int i = 0; i < outer; i++)
    if (ep->nodes[i].kind == N_RED && k_reds[ep->nodes[i].fn].cls == c) *inner = i;
  return outer;
}

int ft__ep_outer_reduction(const ft_epilogue *ep, int *inner) { return outer_and_inner(ep, RC_POOL, inner); }

int ft__ep_inner_norm(const ft_epilogue *ep) {
  int norm;
  outer_and_inner(ep, RC_COLUMN, &norm);
  return norm;
}

ft_ep_red ft_ep_reduction(const ft_epilogue *ep, int *arg) {
  int inner, outer = ep ? ft__ep_outer_reduction(ep, &inner) : -1;
  if (arg) *arg = outer >= 0 ? (int)ep->nodes[outer].num : 0;
  return outer >= 0 ? (ft_ep_red)ep->nodes[outer].fn : FT_RED_NONE;
}

ft_status ft_ep_output_shape(const ft_epilogue *ep, int64_t m, int64_t n, int *ndim, int64_t *rows, int64_t *cols,
                             ft_err *err) {
  if (!ep) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: NULL argument");
  int inner, outer = ft__ep_outer_reduction(ep, &inner), dims = 2;
  int64_t c = n;
  if (outer >= 0) {
    const ep_node *o = &ep->nodes[outer];
    const int pool = k_reds[o->fn].cls == RC_POOL ? outer : inner;
    if (pool >= 0) {
      const int64_t win = (int64_t)ep->nodes[pool].num;
      if (win > n)
        return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: %s(..., %lld) needs N >= %lld, N is %lld",
                        k_reds[ep->nodes[pool].fn].name, (long long)win, (long long)win, (long long)n);
      c = n / win; /* as torch's pools: a last, partial window is dropped */
    }
    if (k_reds[o->fn].cls == RC_GROUP && n % (int64_t)o->num != 0)
      return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: groupnorm(..., %lld) needs N divisible by %lld, N is %lld",
                      (long long)o->num, (long long)o->num, (long long)n);
    if (k_reds[o->fn].cls == RC_ROW) dims = 1, c = 1;
  }
  if (ndim) *ndim = dims;
  if (rows) *rows = m;
  if (cols) *cols = c;
  return FT_OK;
}

/* The kinds the cuBLAS + reduction pass serves: over the row, its groups, the column or windows of
 * the row, a row reduction of pooled values (not softmax or log_softmax of them), and softmax or
 * log_softmax of batchnorm's values (not a one-value reduction of them). */
static int served(const ft_epilogue *ep, int outer, int pool) {
  const red_class c = outer >= 0 ? k_reds[ep->nodes[outer].fn].cls : RC_ROWWISE;
  if (ft__ep_inner_norm(ep) >= 0) return c == RC_ROWWISE;
  return pool < 0 ? outer >= 0 : c == RC_ROW;
}

ft_status ft_ep_check_kernels(const ft_epilogue *ep, ft_err *err) {
  int pool, outer = ft__ep_outer_reduction(ep, &pool);
  if (outer < 0 || served(ep, outer, pool)) return FT_OK;
  if (pool < 0) pool = ft__ep_inner_norm(ep);
  const char *name = k_reds[ep->nodes[outer].fn].name, *of = pool >= 0 ? k_reds[ep->nodes[pool].fn].name : "";
  return ft__fail(err, FT_ERR_UNSUPPORTED,
                  "epilogue: no kernel serves '%s' of '%s' yet (row reductions, softmax, log_softmax, groupnorm, "
                  "batchnorm, pools, row reductions of a pool and softmax or log_softmax of batchnorm do; "
                  "ft_output_shape and the float64 reference serve every reduction)",
                  name, of);
}

ft_status ft__ep_reduce_texts(ft_epilogue *ep, ft_err *err) {
  int pool, norm = -1, outer = ft__ep_outer_reduction(ep, &pool);
  if (!served(ep, outer, pool)) return FT_OK;
  int *in_of = malloc((size_t)ep->nnodes * sizeof *in_of);
  if (!in_of) return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  for (int i = 0; i < ep->nnodes; i++) in_of[i] = -1;
  const int top_pool = k_reds[ep->nodes[outer].fn].cls == RC_POOL;
  if (top_pool) { /* the windows' argument, and each window's value as it is */
    ep->red_pool_arg = ft__ep_print_cuda(ep, ep->nodes[outer].kid[0], NULL);
    ep->red_inner = strdup("IN0");
  } else if (pool >= 0) { /* the windows' argument; the reduction's, of a window's value (IN0) */
    ep->red_pool_arg = ft__ep_print_cuda(ep, ep->nodes[pool].kid[0], NULL);
    in_of[pool] = 0;
    ep->red_inner = ft__ep_print_cuda(ep, ep->nodes[outer].kid[0], in_of);
    in_of[pool] = -1;
  } else if ((norm = ft__ep_inner_norm(ep)) >= 0) { /* batchnorm's argument; the reduction's, of its value */
    ep->red_norm_arg = ft__ep_print_cuda(ep, ep->nodes[norm].kid[0], NULL);
    in_of[norm] = 0;
    ep->red_inner = ft__ep_print_cuda(ep, ep->nodes[outer].kid[0], in_of);
    in_of[norm] = -1;
  } else {
    ep->red_inner = ft__ep_print_cuda(ep, ep->nodes[outer].kid[0], NULL);
  }
  in_of[outer] = 0; /* the reduction's value: IN0 */
  ep->red_post = ft__ep_print_cuda(ep, ep->root, in_of);
  free(in_of);
  if (!ep->red_inner || !ep->red_post || (pool >= 0 || top_pool) != (ep->red_pool_arg != NULL) ||
      (norm >= 0) != (ep->red_norm_arg != NULL))
    return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory");
  return FT_OK;
}

void ft_ep_cuda_reduce(const ft_epilogue *ep, const char **inner, const char **post) {
  if (inner) *inner = ep ? ep->red_inner : NULL;
  if (post) *post = ep ? ep->red_post : NULL;
}

ft_ep_red ft_ep_pool(const ft_epilogue *ep, int *w, const char **arg) {
  int pool, outer = ep ? ft__ep_outer_reduction(ep, &pool) : -1;
  if (outer >= 0 && pool < 0 && k_reds[ep->nodes[outer].fn].cls == RC_POOL) pool = outer;
  if (w) *w = pool >= 0 ? (int)ep->nodes[pool].num : 0;
  if (arg) *arg = pool >= 0 ? ep->red_pool_arg : NULL;
  return pool >= 0 ? (ft_ep_red)ep->nodes[pool].fn : FT_RED_NONE;
}

ft_ep_red ft_ep_norm(const ft_epilogue *ep, const char **arg) {
  const int norm = ep ? ft__ep_inner_norm(ep) : -1;
  if (arg) *arg = norm >= 0 ? ep->red_norm_arg : NULL;
  return norm >= 0 ? (ft_ep_red)ep->nodes[norm].fn : FT_RED_NONE;
}
