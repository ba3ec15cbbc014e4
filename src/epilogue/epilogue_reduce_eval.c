/* The float64 reference of an epilogue over its whole output: elementwise expressions element by
 * element, reductions from their row's, group's, column's or window's values (docs/EPILOGUE.md,
 * "Reductions"). Sums in double, variances in two passes, exponentials max-subtracted. */
#include <math.h>
#include <stdlib.h>

#include "epilogue_internal.h"

#define NORM_EPS 1e-5 /* torch's GroupNorm and BatchNorm default */

typedef struct mat_ctx {
  const ft_epilogue *ep;
  int64_t n; /* the GEMM result's columns: a matrix operand's row pitch */
  const double *const *params;
  double vals[FT_EP_MAX_PARAMS];
} mat_ctx;

/* The parameters' values at element (i, j) (j is a pooled column where the values are pooled;
 * col vectors and matrices never meet those, so the read stays within N). */
static const double *vals_at(mat_ctx *c, int64_t i, int64_t j) {
  for (int s = 0; s < c->ep->nparams; s++) {
    const double *v = c->params ? c->params[s] : NULL;
    const ft_param_kind k = c->ep->params[s].kind;
    c->vals[s] = !v                     ? NAN
                 : k == FT_PARAM_SCALAR ? v[0]
                 : k == FT_PARAM_COLVEC ? v[j]
                 : k == FT_PARAM_MATRIX ? v[i * c->n + j]
                                        : v[i];
  }
  return c->vals;
}

/* NaN-propagating, as torch.amax / amin. */
static double max_nan(double a, double b) { return (b > a || b != b) ? b : a; }
static double min_nan(double a, double b) { return (b < a || b != b) ? b : a; }

static double pool_window(const double *a, int w, int is_max) {
  double r = a[0];
  for (int k = 1; k < w; k++) r = is_max ? max_nan(r, a[k]) : r + a[k];
  return is_max ? r : r / w;
}

static void normalize(ft_ep_red r, int groups, double *a, int64_t m, int64_t len);

/* The argument of the outermost reduction r, per element of the resolution it reads: a[m x len].
 * With a pool inside, the pool's windows first; with a batchnorm inside, its argument over the
 * whole matrix first, normalized by column. */
static void eval_argument(mat_ctx *c, int r, int pool, int64_t m, int64_t n, const double *x, double *a,
                          int64_t len, double *scratch) {
  const ep_node *o = &c->ep->nodes[r];
  const int norm = ft__ep_inner_norm(c->ep);
  if (norm >= 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        a[i * n + j] = ft__ep_eval_at(c->ep, c->ep->nodes[norm].kid[0], x[i * n + j], vals_at(c, i, j), -1, 0);
    normalize(FT_RED_BATCHNORM, 0, a, m, n);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++)
        a[i * n + j] = ft__ep_eval_at(c->ep, o->kid[0], NAN, vals_at(c, i, j), norm, a[i * n + j]);
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    if (pool < 0) {
      for (int64_t j = 0; j < n; j++) a[i * n + j] = ft__ep_eval_at(c->ep, o->kid[0], x[i * n + j], vals_at(c, i, j), -1, 0);
      continue;
    }
    const ep_node *pn = &c->ep->nodes[pool];
    const int w = (int)pn->num;
    for (int64_t j = 0; j < len * w; j++)
      scratch[j] = ft__ep_eval_at(c->ep, pn->kid[0], x[i * n + j], vals_at(c, i, j), -1, 0);
    for (int64_t q = 0; q < len; q++) {
      const double pv = pool_window(scratch + q * w, w, pn->fn == FT_RED_MAXPOOL);
      a[i * len + q] = ft__ep_eval_at(c->ep, o->kid[0], NAN, vals_at(c, i, q), pool, pv);
    }
  }
}

/* A row's statistic for the [M] reductions. */
static double row_stat(ft_ep_red r, const double *a, int64_t len) {
  double acc = a[0];
  switch (r) {
    case FT_RED_ROWMAX:
      for (int64_t j = 1; j < len; j++) acc = max_nan(acc, a[j]);
      return acc;
    case FT_RED_ROWMIN:
      for (int64_t j = 1; j < len; j++) acc = min_nan(acc, a[j]);
      return acc;
    case FT_RED_LOGSUMEXP: {
      for (int64_t j = 1; j < len; j++) acc = max_nan(acc, a[j]);
      const double shift = isinf(acc) ? 0.0 : acc; /* torch: all -inf gives -inf, an inf gives inf */
      double sum = 0.0;
      for (int64_t j = 0; j < len; j++) sum += exp(a[j] - shift);
      return log(sum) + shift;
    }
    default: /* rowsum, rowmean */
      for (int64_t j = 1; j < len; j++) acc += a[j];
      return r == FT_RED_ROWMEAN ? acc / (double)len : acc;
  }
}

/* Mean and biased variance of count values stride apart, in two passes. */
static void mean_var(const double *a, int64_t count, int64_t stride, double *mean, double *var) {
  double s = 0.0, q = 0.0;
  for (int64_t k = 0; k < count; k++) s += a[k * stride];
  *mean = s / (double)count;
  for (int64_t k = 0; k < count; k++) q += (a[k * stride] - *mean) * (a[k * stride] - *mean);
  *var = q / (double)count;
}

/* Replaces a (m x len) by the reduction's per-element value: softmax, log_softmax, groupnorm,
 * batchnorm. */
static void normalize(ft_ep_red r, int groups, double *a, int64_t m, int64_t len) {
  if (r == FT_RED_BATCHNORM) {
    for (int64_t j = 0; j < len; j++) {
      double mean, var;
      mean_var(a + j, m, len, &mean, &var);
      for (int64_t i = 0; i < m; i++) a[i * len + j] = (a[i * len + j] - mean) / sqrt(var + NORM_EPS);
    }
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    double *row = a + i * len;
    if (r == FT_RED_GROUPNORM) {
      const int64_t gs = len / groups;
      for (int g = 0; g < groups; g++) {
        double mean, var;
        mean_var(row + g * gs, gs, 1, &mean, &var);
        for (int64_t j = g * gs; j < (g + 1) * gs; j++) row[j] = (row[j] - mean) / sqrt(var + NORM_EPS);
      }
      continue;
    }
    double mx = row[0], sum = 0.0;
    for (int64_t j = 1; j < len; j++) mx = max_nan(mx, row[j]);
    for (int64_t j = 0; j < len; j++) sum += exp(row[j] - mx);
    for (int64_t j = 0; j < len; j++)
      row[j] = r == FT_RED_SOFTMAX ? exp(row[j] - mx) / sum : row[j] - mx - log(sum);
  }
}

ft_status ft_ep_eval_matrix(const ft_epilogue *ep, int64_t m, int64_t n, const double *x,
                            const double *const *params, double *y, ft_err *err) {
  if (!ep || !x || !y || m <= 0 || n <= 0) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: bad reference arguments");
  int dims, pool;
  int64_t rows, cols;
  FT_TRY(ft_ep_output_shape(ep, m, n, &dims, &rows, &cols, err));
  mat_ctx c = {ep, n, params, {0}};
  const int r = ft__ep_outer_reduction(ep, &pool);
  if (r < 0) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) y[i * n + j] = ft__ep_eval_at(ep, ep->root, x[i * n + j], vals_at(&c, i, j), -1, 0);
    return FT_OK;
  }
  const ep_node *o = &ep->nodes[r];
  const ft_ep_red red = (ft_ep_red)o->fn;
  const int top_pool = red == FT_RED_MAXPOOL || red == FT_RED_AVGPOOL;
  const int64_t len = pool >= 0 ? n / (int64_t)ep->nodes[pool].num : n; /* the values per row it reads */
  double *a = malloc((size_t)(m * len) * sizeof *a), *scratch = malloc((size_t)n * sizeof *scratch);
  if (!a || !scratch) {
    free(a);
    free(scratch);
    return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory for the reference");
  }
  eval_argument(&c, r, pool, m, n, x, a, len, scratch);
  if (dims == 1) {
    for (int64_t i = 0; i < m; i++) y[i] = ft__ep_eval_at(ep, ep->root, NAN, vals_at(&c, i, 0), r, row_stat(red, a + i * len, len));
  } else if (top_pool) {
    const int w = (int)o->num;
    for (int64_t i = 0; i < m; i++)
      for (int64_t q = 0; q < cols; q++)
        y[i * cols + q] = ft__ep_eval_at(ep, ep->root, NAN, vals_at(&c, i, q), r,
                                         pool_window(a + i * n + q * w, w, red == FT_RED_MAXPOOL));
  } else {
    normalize(red, (int)o->num, a, m, len);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < len; j++)
        y[i * len + j] = ft__ep_eval_at(ep, ep->root, NAN, vals_at(&c, i, j), r, a[i * len + j]);
  }
  free(a);
  free(scratch);
  return FT_OK;
}
