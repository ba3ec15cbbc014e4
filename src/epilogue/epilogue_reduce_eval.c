/* The float64 reference of an epilogue over its whole output: elementwise expressions element by
 * element, reductions from their row's, group's, column's or window's values (docs/EPILOGUE.md,
 * "Reductions"). Sums in double, variances in two passes, exponentials max-subtracted. */
#include <math.h>
#include <stdlib.h>

#include "epilogue_internal.h"
#include "numbers.h"
#include "parallel.h"

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

static void normalize_rows(ft_ep_red r, int groups, double *a, int64_t i0, int64_t i1, int64_t len);
static void normalize_columns(double *a, int64_t m, int64_t j0, int64_t j1, int64_t len);

/* The argument of the outermost reduction r for rows [i0, i1), per element of the resolution it
 * reads: a[m x len]. With a pool inside, the pool's windows first (scratch: n doubles). */
static void eval_argument_rows(mat_ctx *c, int r, int pool, int64_t i0, int64_t i1, int64_t n, const double *x,
                               double *a, int64_t len, double *scratch) {
  const ep_node *o = &c->ep->nodes[r];
  for (int64_t i = i0; i < i1; i++) {
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

/* Mean and biased variance of count contiguous values (a group), in two passes. */
static void mean_var(const double *a, int64_t count, double *mean, double *var) {
  double s = 0.0, q = 0.0;
  for (int64_t k = 0; k < count; k++) s += a[k];
  *mean = s / (double)count;
  for (int64_t k = 0; k < count; k++) q += (a[k] - *mean) * (a[k] - *mean);
  *var = q / (double)count;
}

/* Replaces columns [j0, j1) of a (m x len) by batchnorm's value: mean_var's two passes, each
 * column's sums in row order, taken over blocks of columns row by row, so that the reads run along
 * rows rather than a column's stride apart. */
#define COL_BLOCK 64
static void normalize_columns(double *a, int64_t m, int64_t j0, int64_t j1, int64_t len) {
  for (int64_t jb = j0; jb < j1; jb += COL_BLOCK) {
    const int64_t w = j1 - jb < COL_BLOCK ? j1 - jb : COL_BLOCK;
    double mean[COL_BLOCK], q[COL_BLOCK], scale[COL_BLOCK];
    for (int64_t c = 0; c < w; c++) mean[c] = 0.0, q[c] = 0.0;
    for (int64_t i = 0; i < m; i++)
      for (int64_t c = 0; c < w; c++) mean[c] += a[i * len + jb + c];
    for (int64_t c = 0; c < w; c++) mean[c] /= (double)m;
    for (int64_t i = 0; i < m; i++)
      for (int64_t c = 0; c < w; c++) {
        const double d = a[i * len + jb + c] - mean[c];
        q[c] += d * d;
      }
    for (int64_t c = 0; c < w; c++) scale[c] = sqrt(q[c] / (double)m + NORM_EPS);
    for (int64_t i = 0; i < m; i++)
      for (int64_t c = 0; c < w; c++) a[i * len + jb + c] = (a[i * len + jb + c] - mean[c]) / scale[c];
  }
}

/* Replaces rows [i0, i1) of a (m x len) by the row reduction's per-element value: softmax,
 * log_softmax, groupnorm. */
static void normalize_rows(ft_ep_red r, int groups, double *a, int64_t i0, int64_t i1, int64_t len) {
  for (int64_t i = i0; i < i1; i++) {
    double *row = a + i * len;
    if (r == FT_RED_GROUPNORM) {
      const int64_t gs = len / groups;
      for (int g = 0; g < groups; g++) {
        double mean, var;
        mean_var(row + g * gs, gs, &mean, &var);
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

/* The reference's steps, each over rows (or batchnorm's over columns) on several threads
 * (src/base/parallel.h): every row and column is computed alone, in the same order whatever the
 * thread count, so the reference's bits do not depend on it. A large reduction's reference took
 * most of a tune's preparation on one thread (KernelBench 37, 32768 x 4096: about 15 s). */
typedef enum ref_step {
  STEP_ELEMENTWISE, /* y = E(x), no reduction */
  STEP_NORM_ARG,    /* a = the inner batchnorm's argument */
  STEP_NORM_COLS,   /* a normalized by column (batchnorm) */
  STEP_NORM_OUTER,  /* a = the outer reduction's argument of the batchnorm's value */
  STEP_ARG,         /* a = the outer reduction's argument (pools first) */
  STEP_ROW_STAT,    /* y[i] = E of the row's statistic */
  STEP_POOL,        /* y = E of each pooled window */
  STEP_NORM_ROWS,   /* a normalized by row (softmax, log_softmax, groupnorm) */
  STEP_POST         /* y = E of each normalized value */
} ref_step;

typedef struct ref_job {
  ref_step step;
  const ft_epilogue *ep;
  int64_t m, n, len, cols;
  const double *const *params;
  const double *x;
  double *a, *y;
  int r, pool, norm, groups;
  ft_ep_red red;
  int failed; /* a chunk could not get its scratch memory */
} ref_job;

static void ref_chunk(void *user, int chunk, size_t begin, size_t end) {
  (void)chunk;
  ref_job *j = user;
  mat_ctx c = {j->ep, j->n, j->params, {0}};
  const ft_epilogue *ep = j->ep;
  const ep_node *o = j->r >= 0 ? &ep->nodes[j->r] : NULL;
  const int64_t i0 = (int64_t)begin, i1 = (int64_t)end, n = j->n, len = j->len;
  switch (j->step) {
    case STEP_ELEMENTWISE:
      for (int64_t i = i0; i < i1; i++)
        for (int64_t q = 0; q < n; q++) j->y[i * n + q] = ft__ep_eval_at(ep, ep->root, j->x[i * n + q], vals_at(&c, i, q), -1, 0);
      break;
    case STEP_NORM_ARG:
      for (int64_t i = i0; i < i1; i++)
        for (int64_t q = 0; q < n; q++)
          j->a[i * n + q] = ft__ep_eval_at(ep, ep->nodes[j->norm].kid[0], j->x[i * n + q], vals_at(&c, i, q), -1, 0);
      break;
    case STEP_NORM_COLS:
      normalize_columns(j->a, j->m, i0, i1, len); /* begin, end: columns here */
      break;
    case STEP_NORM_OUTER:
      for (int64_t i = i0; i < i1; i++)
        for (int64_t q = 0; q < n; q++)
          j->a[i * n + q] = ft__ep_eval_at(ep, o->kid[0], NAN, vals_at(&c, i, q), j->norm, j->a[i * n + q]);
      break;
    case STEP_ARG: {
      double *scratch = j->pool >= 0 ? malloc((size_t)n * sizeof *scratch) : NULL;
      if (j->pool >= 0 && !scratch) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        break;
      }
      eval_argument_rows(&c, j->r, j->pool, i0, i1, n, j->x, j->a, len, scratch);
      free(scratch);
      break;
    }
    case STEP_ROW_STAT:
      for (int64_t i = i0; i < i1; i++)
        j->y[i] = ft__ep_eval_at(ep, ep->root, NAN, vals_at(&c, i, 0), j->r, row_stat(j->red, j->a + i * len, len));
      break;
    case STEP_POOL: {
      const int w = (int)o->num;
      for (int64_t i = i0; i < i1; i++)
        for (int64_t q = 0; q < j->cols; q++)
          j->y[i * j->cols + q] = ft__ep_eval_at(ep, ep->root, NAN, vals_at(&c, i, q), j->r,
                                                 pool_window(j->a + i * n + q * w, w, j->red == FT_RED_MAXPOOL));
      break;
    }
    case STEP_NORM_ROWS:
      normalize_rows(j->red, j->groups, j->a, i0, i1, len);
      break;
    case STEP_POST:
      for (int64_t i = i0; i < i1; i++)
        for (int64_t q = 0; q < len; q++)
          j->y[i * len + q] = ft__ep_eval_at(ep, ep->root, NAN, vals_at(&c, i, q), j->r, j->a[i * len + q]);
      break;
  }
}

/* Runs step over [0, count) rows (columns for STEP_NORM_COLS), chunked by the work of each. */
static void ref_run(ref_job *j, ref_step step, int64_t count, int64_t per_item) {
  j->step = step;
  const int chunks = ft_host_chunks((size_t)count * (size_t)(per_item > 0 ? per_item : 1));
  ft_parallel_chunks((size_t)count, chunks < count ? chunks : (int)count, 0, ref_chunk, j);
}

ft_status ft_ep_eval_matrix(const ft_epilogue *ep, int64_t m, int64_t n, const double *x,
                            const double *const *params, double *y, ft_err *err) {
  if (!ep || !x || !y || m <= 0 || n <= 0) return ft__fail(err, FT_ERR_INVALID_ARG, "epilogue: bad reference arguments");
  int dims, pool;
  int64_t rows, cols;
  FT_TRY(ft_ep_output_shape(ep, m, n, &dims, &rows, &cols, err));
  const int r = ft__ep_outer_reduction(ep, &pool);
  ref_job j = {STEP_ELEMENTWISE, ep, m, n, n, cols, params, x, NULL, y, r, pool, -1, 0, FT_RED_NONE, 0};
  if (r < 0) {
    ref_run(&j, STEP_ELEMENTWISE, m, n);
    return FT_OK;
  }
  const ep_node *o = &ep->nodes[r];
  j.red = (ft_ep_red)o->fn;
  j.groups = (int)o->num;
  const int top_pool = j.red == FT_RED_MAXPOOL || j.red == FT_RED_AVGPOOL;
  j.len = pool >= 0 ? n / (int64_t)ep->nodes[pool].num : n; /* the values per row it reads */
  j.a = malloc((size_t)(m * j.len) * sizeof *j.a);
  if (!j.a) return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory for the reference");
  j.norm = ft__ep_inner_norm(ep);
  if (j.norm >= 0) { /* a batchnorm inside: its argument over the whole matrix, normalized by column */
    ref_run(&j, STEP_NORM_ARG, m, n);
    ref_run(&j, STEP_NORM_COLS, n, m);
    ref_run(&j, STEP_NORM_OUTER, m, n);
  } else {
    ref_run(&j, STEP_ARG, m, n);
  }
  if (j.failed) {
    free(j.a);
    return ft__fail(err, FT_ERR_NOMEM, "epilogue: out of memory for the reference");
  }
  if (dims == 1) {
    ref_run(&j, STEP_ROW_STAT, m, j.len);
  } else if (top_pool) {
    ref_run(&j, STEP_POOL, m, n);
  } else {
    if (j.red == FT_RED_BATCHNORM) ref_run(&j, STEP_NORM_COLS, j.len, m);
    else ref_run(&j, STEP_NORM_ROWS, m, j.len);
    ref_run(&j, STEP_POST, m, j.len);
  }
  free(j.a);
  return FT_OK;
}
