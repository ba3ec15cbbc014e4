/* Reductions in the epilogue language, GPU-free: parsing and canonical form, the nesting rules
 * and their one-line errors, output shapes, the float64 reference against sums written out by
 * hand, the eager-style steps, and the API's shape query and refusal. */
#include <float.h>

#include "epilogue_test_util.h"
#include "fusedtune_tool.h"
#include "parallel.h"

/* Canonical text of text is want, and it is a fixed point; no elementwise expression computes a
 * reduction. */
static void canon_is_at(const char *text, const char *want, int line) {
  ft_epilogue *ep = canon_fixed_at(text, want, line);
  if (ep) ASSERT_TRUE(ft_ep_cuda(ep) == NULL);
  ft_ep_free(ep);
}
#define CANON_IS(text, want) canon_is_at((text), (want), __LINE__)

static void test_canonical(void) {
  CANON_IS("  logsumexp( clamp(2*(x+bias), -10, 1e1) )", "logsumexp(clamp(2 * (x + bias), -10, 10))");
  CANON_IS("gelu(softmax((x + bias)))", "gelu(softmax(x + bias))");
  CANON_IS("swish(groupnorm(x + bias, 16) * g + b) where col g, col b",
           "silu(groupnorm(x + bias, 16) * g + b) where col b, col g");
  CANON_IS("rowsum(maxpool(x,2))", "rowsum(maxpool(x, 2))");
  CANON_IS("avgpool(x, 4.0)", "avgpool(x, 4)");
  CANON_IS("rowmean(x) * r + s where row r, s = 2", "rowmean(x) * r + s where row r, s = 2");
  CANON_IS("-rowmax(-x)", "-rowmax(-x)");
  CANON_IS("log_softmax(x) * w where col w", "log_softmax(x) * w where col w");
  CANON_IS("batchnorm(x + bias) * g + b where col g, col b", "batchnorm(x + bias) * g + b where col b, col g");
  CANON_IS("rowmin(x)", "rowmin(x)");
  CANON_IS("softmax(avgpool(x, 3))", "softmax(avgpool(x, 3))");

  ft_epilogue *a = parse_ok("rowsum(x)"), *b = parse_ok("rowmean(x)"), *c = parse_ok("groupnorm(x, 4)"),
              *d = parse_ok("groupnorm(x, 8)");
  if (a && b && c && d) {
    ASSERT_TRUE(strcmp(ft_ep_hash(a), ft_ep_hash(b)) != 0);
    ASSERT_TRUE(strcmp(ft_ep_hash(c), ft_ep_hash(d)) != 0);
    int arg = -1;
    ASSERT_EQ_INT(ft_ep_reduction(a, &arg), FT_RED_ROWSUM);
    ASSERT_EQ_INT(arg, 0);
    ASSERT_EQ_INT(ft_ep_reduction(d, &arg), FT_RED_GROUPNORM);
    ASSERT_EQ_INT(arg, 8);
    ft_err err;
    ASSERT_OK(ft_ep_check_kernels(a, &err)); /* the reduction pass serves row reductions */
    ASSERT_OK(ft_ep_check_kernels(c, &err)); /* groupnorm too */
    const char *inner = NULL, *post = NULL;
    ft_ep_cuda_reduce(a, &inner, &post);
    ASSERT_EQ_STR(inner, "x");
    ASSERT_EQ_STR(post, "IN0");
    ft_epilogue *bn = parse_ok("batchnorm(x * 2) * g where col g"), *pool = parse_ok("softmax(avgpool(x, 4))");
    if (bn && pool) {
      ASSERT_OK(ft_ep_check_kernels(bn, &err)); /* batchnorm too */
      ft_ep_cuda_reduce(bn, &inner, &post);
      ASSERT_EQ_STR(inner, "(x * 2.0f)");
      ASSERT_EQ_STR(post, "(IN0 * ep.v[0][col])");
      ASSERT_EQ_INT(ft_ep_check_kernels(pool, &err), FT_ERR_UNSUPPORTED);
      ASSERT_CONTAINS(err.msg, "epilogue: no kernel serves 'softmax' of 'avgpool' yet");
      ft_ep_cuda_reduce(pool, &inner, &post);
      ASSERT_TRUE(inner == NULL && post == NULL);
    }
    ft_ep_free(bn), ft_ep_free(pool);
    ASSERT_TRUE(isnan(ft_ep_eval(a, 1.0, NULL))); /* a row's value: ft_ep_eval_matrix */
  }
  ft_epilogue *e = parse_ok("relu(x + bias)");
  ft_epilogue *f = parse_ok("exp(logsumexp(clamp(2 * (x + bias), -10, 10)) * r) where row r"),
              *g = parse_ok("rowsum(exp(maxpool(x * 2, 2)) * r) where row r"), *h = parse_ok("maxpool(x * 2, 2) + 1");
  if (f && g) {
    const char *inner = NULL, *post = NULL;
    ft_ep_cuda_reduce(f, &inner, &post);
    ASSERT_EQ_STR(inner, "ft_clamp(2.0f * (x + ep.v[0][col]), -10.0f, 10.0f)");
    ASSERT_EQ_STR(post, "ft_exp(IN0 * ep.v[1][row])");
    ft_err err;
    ASSERT_OK(ft_ep_check_kernels(g, &err)); /* a pool inside: its windows' argument, the row's of a window */
    const char *arg = NULL;
    int w = 0;
    ASSERT_EQ_INT(ft_ep_pool(g, &w, &arg), FT_RED_MAXPOOL);
    ASSERT_EQ_INT(w, 2);
    ASSERT_EQ_STR(arg, "(x * 2.0f)");
    ft_ep_cuda_reduce(g, &inner, &post);
    ASSERT_EQ_STR(inner, "(ft_exp(IN0) * ep.v[0][row])");
    ASSERT_EQ_STR(post, "IN0");
    ASSERT_EQ_INT(ft_ep_pool(f, &w, &arg), FT_RED_NONE); /* no pool */
    ASSERT_TRUE(w == 0 && arg == NULL);
    if (h) { /* the pool outermost: each window's value as it is */
      ASSERT_EQ_INT(ft_ep_pool(h, &w, &arg), FT_RED_MAXPOOL);
      ASSERT_EQ_STR(arg, "(x * 2.0f)");
      ft_ep_cuda_reduce(h, &inner, &post);
      ASSERT_EQ_STR(inner, "IN0");
      ASSERT_EQ_STR(post, "(IN0 + 1.0f)");
    }
  }
  ft_ep_free(f), ft_ep_free(g), ft_ep_free(h);
  if (e) {
    ASSERT_EQ_INT(ft_ep_reduction(e, NULL), FT_RED_NONE);
    ASSERT_OK(ft_ep_check_kernels(e, NULL));
    ASSERT_TRUE(ft_ep_cuda(e) != NULL);
  }
  ft_ep_free(a), ft_ep_free(b), ft_ep_free(c), ft_ep_free(d), ft_ep_free(e);
  ASSERT_EQ_STR(ft_ep_red_name(FT_RED_LOG_SOFTMAX), "log_softmax");
  ASSERT_EQ_STR(ft_ep_red_name(FT_RED_NONE), "");
  ASSERT_EQ_STR(ft_ep_red_name(FT_RED_COUNT), "");
}

static void test_rejections(void) {
  REJECT("rowsum(softmax(x))", 8, "'softmax' inside 'rowsum': a reduction may hold only a pool");
  REJECT("maxpool(softmax(x), 2)", 9, "'softmax' inside 'maxpool'");
  REJECT("batchnorm(maxpool(x, 2))", 11, "'maxpool' inside 'batchnorm'");
  REJECT("rowsum(maxpool(avgpool(x, 2), 2))", 16, "'avgpool' inside 'maxpool'");
  REJECT("rowsum(x) + rowmax(x)", 13, "a second reduction 'rowmax' (the first, 'rowsum', is at col 1)");
  REJECT("x - rowmax(x)", 1, "x is used outside 'rowmax'");
  REJECT("softmax(x) * x", 14, "x is used outside 'softmax'");
  REJECT("rowsum(x) + bias", 13, "'bias' is a col vector (N values) but meets the [M] result of 'rowsum'");
  REJECT("maxpool(x, 2) + bias", 17, "meets the [M, N / w] result of 'maxpool'");
  REJECT("rowsum(maxpool(x, 2) * g) where col g", 24, "meets the [M, N / w] result of 'maxpool'");
  REJECT("rowsum(maxpool(x, 2) + x)", 24, "x is used inside 'rowsum' but outside its 'maxpool'");
  REJECT("rowsum(maxpool(x, 2) + maxpool(x, 4))", 24, "a second pool 'maxpool' inside 'rowsum'");
  REJECT("rowsum(bias) + x", 1, "the argument of 'rowsum' does not use x");
  REJECT("groupnorm(x)", 12, "'groupnorm' takes 2 arguments: an expression and its group count");
  REJECT("groupnorm(x, 0)", 14, "the group count of 'groupnorm' must be a whole number from 1 to 65536");
  REJECT("groupnorm(x, 2.5)", 14, "whole number");
  REJECT("groupnorm(x, -2)", 14, "whole number");
  REJECT("groupnorm(x, c) where c = 2", 14, "whole number");
  REJECT("groupnorm(x, 2 + 2)", 16, "expected ')'");
  REJECT("maxpool(x, 1e9)", 12, "the window of 'maxpool' must be a whole number from 1 to 1024");
  REJECT("avgpool(x, 1025)", 12, "from 1 to 1024");
  REJECT("rowsum(x, 2)", 9, "'rowsum' takes 1 argument");
  REJECT("rowsum()", 1, "'rowsum' takes 1 argument, got 0");
  REJECT("groupnorm()", 1, "'groupnorm' takes 2 arguments, got 0");
  REJECT("x + softmax", 5, "'softmax' is a function: call it as softmax(...)");
  REJECT("x * c where c = 1, scalar rowsum", 27, "'rowsum' is a function and cannot name a parameter");
  REJECT("logsumexpp(x)", 1, "(did you mean 'logsumexp'?)");
  REJECT("sofmax(x)", 1, "(did you mean 'softmax'?)");
  REJECT("rowsum(x", 9, "expected ')'");
  REJECT("rowsum(x))", 10, "expected an operator");
  /* Nesting is bounded with reductions as with any call. */
  char deep[600] = "";
  for (int i = 0; i < 64; i++) strcat(deep, "softmax(");
  strcat(deep, "x");
  for (int i = 0; i < 64; i++) strcat(deep, ")");
  REJECT(deep, 9, "'softmax' inside 'softmax'");
  deep[0] = 0;
  for (int i = 0; i < 65; i++) strcat(deep, "rowsum(");
  REJECT(deep, 449, "nesting deeper than 64 levels");
  /* Accepted neighbours of the refusals. */
  const char *ok[] = {"softmax(x) * g + bias where col g", "rowsum(x + bias) * r + 1 where row r",
                      "logsumexp(x * r) where row r", "rowsum(maxpool(x * g, 2)) where col g",
                      "softmax(avgpool(x + bias, 4)) * r where row r", "exp(rowmax(x)) / 2"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) ft_ep_free(parse_ok(ok[i]));
}

static void shape_is_at(const char *text, int64_t m, int64_t n, int ndim, int64_t rows, int64_t cols, int line) {
  ft_epilogue *ep = parse_ok_at(text, line);
  if (!ep) return;
  int d = -1;
  int64_t r = -1, c = -1;
  ft_err err;
  ft_status s = ft_ep_output_shape(ep, m, n, &d, &r, &c, &err);
  if (s != FT_OK || d != ndim || r != rows || c != cols) {
    fprintf(stderr, "%s:%d: shape of \"%s\" at %lldx%lld: status %d, %d dims [%lld, %lld]; want %d dims [%lld, %lld]\n",
            __FILE__, line, text, (long long)m, (long long)n, (int)s, d, (long long)r, (long long)c, ndim,
            (long long)rows, (long long)cols);
    ft_test_failures++;
  }
  ft_ep_free(ep);
}
#define SHAPE_IS(text, m, n, ndim, rows, cols) shape_is_at((text), (m), (n), (ndim), (rows), (cols), __LINE__)

static void shape_refused_at(const char *text, int64_t n, const char *what, int line) {
  ft_epilogue *ep = parse_ok_at(text, line);
  if (!ep) return;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_output_shape(ep, 3, n, NULL, NULL, NULL, &err);
  if (s != FT_ERR_INVALID_ARG || !strstr(err.msg, what)) {
    fprintf(stderr, "%s:%d: \"%s\" at N %lld: status %d \"%s\", want \"%s\"\n", __FILE__, line, text, (long long)n,
            (int)s, err.msg, what);
    ft_test_failures++;
  }
  ft_ep_free(ep);
}
#define SHAPE_REFUSED(text, n, what) shape_refused_at((text), (n), (what), __LINE__)

static void test_shapes(void) {
  SHAPE_IS("relu(x + bias)", 7, 12, 2, 7, 12);
  SHAPE_IS("logsumexp(x + bias)", 7, 12, 1, 7, 1);
  SHAPE_IS("rowmean(x) * 2", 1, 12, 1, 1, 1);
  SHAPE_IS("gelu(softmax(x))", 7, 12, 2, 7, 12);
  SHAPE_IS("groupnorm(x, 4)", 7, 12, 2, 7, 12);
  SHAPE_IS("batchnorm(x)", 7, 12, 2, 7, 12);
  SHAPE_IS("maxpool(x, 5)", 7, 12, 2, 7, 2); /* the last, partial window is dropped, as torch's */
  SHAPE_IS("rowsum(avgpool(x, 5))", 7, 12, 1, 7, 1);
  SHAPE_IS("softmax(avgpool(x, 3))", 7, 12, 2, 7, 4);
  SHAPE_IS("avgpool(x, 12)", 1, 12, 2, 1, 1);
  SHAPE_REFUSED("groupnorm(x, 5)", 12, "groupnorm(..., 5) needs N divisible by 5, N is 12");
  SHAPE_REFUSED("maxpool(x, 13)", 12, "maxpool(..., 13) needs N >= 13, N is 12");
  SHAPE_REFUSED("rowsum(avgpool(x, 13))", 12, "avgpool(..., 13) needs N >= 13");
}

/* The reference of text over an m x n matrix, against want (computed here by hand). */
#define REF_IS(text, m, n, x, params, want, count) \
  reference_is_at((text), (m), (n), (x), (params), (want), (count), 1e-15, __LINE__)

static void test_row_reductions(void) {
  const double x[6] = {1, 2, 3, -1, 0.5, 4};
  const double lse0 = log(exp(1) + exp(2) + exp(3)), lse1 = log(exp(-1) + exp(0.5) + exp(4));
  REF_IS("rowsum(x)", 2, 3, x, NULL, ((double[]){6, 3.5}), 2);
  REF_IS("rowmean(x)", 2, 3, x, NULL, ((double[]){2, 3.5 / 3}), 2);
  REF_IS("rowmax(x)", 2, 3, x, NULL, ((double[]){3, 4}), 2);
  REF_IS("rowmin(x)", 2, 3, x, NULL, ((double[]){1, -1}), 2);
  REF_IS("logsumexp(x)", 2, 3, x, NULL, ((double[]){lse0, lse1}), 2);
  REF_IS("exp(rowmax(x)) / 2", 2, 3, x, NULL, ((double[]){exp(3) / 2, exp(4) / 2}), 2);
  /* Max-subtracted: no overflow at 1000, nor underflow at -1000; all -inf gives -inf (torch). */
  const double big[4] = {1000, 1000, -1000, -1000};
  REF_IS("logsumexp(x)", 2, 2, big, NULL, ((double[]){1000 + log(2), -1000 + log(2)}), 2);
  const double ninf[2] = {-INFINITY, -INFINITY};
  REF_IS("logsumexp(x)", 1, 2, ninf, NULL, ((double[]){-INFINITY}), 1);
  const double with_nan[3] = {1, NAN, 2};
  REF_IS("rowmax(x)", 1, 3, with_nan, NULL, ((double[]){NAN}), 1); /* NaN propagates, as torch.amax */
  REF_IS("rowmin(x)", 1, 3, with_nan, NULL, ((double[]){NAN}), 1);
  /* The elementwise part inside and a row vector outside; M = 1. */
  const double bias[3] = {0.5, -0.25, 10}, r[2] = {3, -2}, *pb[1] = {bias};
  const double want_clamp = log(exp(3) + exp(3.5) + exp(10));
  REF_IS("logsumexp(clamp(2 * (x + bias), -10, 10))", 1, 3, x, pb, ((double[]){want_clamp}), 1);
  const double *pr[2] = {bias, r}; /* slots: bias, r */
  REF_IS("rowsum(x + bias) * r where row r", 2, 3, x, pr, ((double[]){(6 + 10.25) * 3, (3.5 + 10.25) * -2}), 2);
}

static void test_softmax(void) {
  const double x[6] = {1, 2, 3, 1000, 1000, -1000}, bias[3] = {0, 0, 0}, *pb[1] = {bias};
  double want[6], lwant[6];
  const double s0 = exp(-2) + exp(-1) + 1;
  for (int j = 0; j < 3; j++) want[j] = exp(x[j] - 3) / s0, lwant[j] = x[j] - 3 - log(s0);
  want[3] = want[4] = 0.5, want[5] = 0;
  lwant[3] = lwant[4] = -log(2), lwant[5] = -2000 - log(2);
  REF_IS("softmax(x + bias)", 2, 3, x, pb, want, 6);
  REF_IS("log_softmax(x)", 2, 3, x, NULL, lwant, 6);
  ft_epilogue *g = parse_ok("gelu(x)");
  double gw[6];
  for (int i = 0; g && i < 6; i++) gw[i] = ft_ep_eval(g, want[i], NULL);
  REF_IS("gelu(softmax(x + bias))", 2, 3, x, pb, gw, 6);
  ft_ep_free(g);
  /* Rows sum to 1. */
  ft_epilogue *ep = parse_ok("softmax(x * 3)");
  double y[6];
  if (ep && ft_ep_eval_matrix(ep, 2, 3, x, NULL, y, NULL) == FT_OK) {
    ASSERT_NEAR(y[0] + y[1] + y[2], 1.0, 1e-15);
    ASSERT_NEAR(y[3] + y[4] + y[5], 1.0, 1e-15);
  }
  ft_ep_free(ep);
  /* A col vector after a per-element result: indexed by column. */
  const double w[3] = {1, 10, 100}, *pw[1] = {w};
  double ww[6];
  for (int i = 0; i < 6; i++) ww[i] = want[i] * w[i % 3];
  REF_IS("softmax(x) * w where col w", 2, 3, x, pw, ww, 6);
}

static void mean_var(const double *v, int count, int stride, double *mean, double *var) {
  double s = 0, q = 0;
  for (int i = 0; i < count; i++) s += v[i * stride];
  *mean = s / count;
  for (int i = 0; i < count; i++) q += (v[i * stride] - *mean) * (v[i * stride] - *mean);
  *var = q / count;
}

static void test_norms(void) {
  const double x[8] = {1, 2, 4, 8, -3, 0, 3, 30};
  /* groupnorm(x + bias, 2) * g + b, swish after: two groups of two per row. */
  const double bias[4] = {0.5, 0, -1, 2}, g[4] = {1, 2, 3, 4}, b[4] = {0, 0.1, 0.2, 0.3};
  const double *params[3] = {b, bias, g}; /* slots sorted: b, bias, g */
  double want[8];
  for (int i = 0; i < 2; i++)
    for (int grp = 0; grp < 2; grp++) {
      double v[2], mean, var;
      for (int k = 0; k < 2; k++) v[k] = x[i * 4 + grp * 2 + k] + bias[grp * 2 + k];
      mean_var(v, 2, 1, &mean, &var);
      for (int k = 0; k < 2; k++) {
        const int j = grp * 2 + k;
        const double t = (v[k] - mean) / sqrt(var + 1e-5) * g[j] + b[j];
        want[i * 4 + j] = t / (1 + exp(-t));
      }
    }
  REF_IS("swish(groupnorm(x + bias, 2) * g + b) where col g, col b", 2, 4, x, params, want, 8);
  /* batchnorm: each column over the M rows. */
  double bw[8];
  for (int j = 0; j < 4; j++) {
    double mean, var;
    mean_var(x + j, 2, 4, &mean, &var);
    for (int i = 0; i < 2; i++) bw[i * 4 + j] = (x[i * 4 + j] - mean) / sqrt(var + 1e-5);
  }
  REF_IS("batchnorm(x)", 2, 4, x, NULL, bw, 8);
  /* Variance is never negative: a constant row normalizes to exactly 0. */
  const double flat[4] = {3, 3, 3, 3};
  REF_IS("groupnorm(x, 1)", 1, 4, flat, NULL, ((double[]){0, 0, 0, 0}), 4);
}

static void test_pools(void) {
  const double x[14] = {1, 5, 2, 7, 3, 0, 9, -1, -2, -3, -4, -5, -6, 100};
  /* N = 7, w = 3: two windows per row, the 7th column dropped. */
  REF_IS("maxpool(x, 3)", 2, 7, x, NULL, ((double[]){5, 7, -1, -4}), 4);
  REF_IS("avgpool(x, 3)", 2, 7, x, NULL, ((double[]){8.0 / 3, 10.0 / 3, -2, -5}), 4);
  REF_IS("rowsum(maxpool(x, 3))", 2, 7, x, NULL, ((double[]){12, -5}), 2);
  REF_IS("rowmax(avgpool(x * 2, 3) + 1) * 2", 2, 7, x, NULL, ((double[]){(20.0 / 3 + 1) * 2, (-4 + 1) * 2.0}), 2);
  const double l0 = log(exp(8.0 / 3) + exp(10.0 / 3)), l1 = log(exp(-2) + exp(-5));
  REF_IS("logsumexp(avgpool(x, 3))", 2, 7, x, NULL, ((double[]){l0, l1}), 2);
  ft_epilogue *ep = parse_ok("maxpool(x, 8)");
  double y[4];
  ft_err err;
  if (ep) ASSERT_EQ_INT(ft_ep_eval_matrix(ep, 2, 7, x, NULL, y, &err), FT_ERR_INVALID_ARG);
  ft_ep_free(ep);
}

/* An elementwise epilogue through the matrix reference equals ft_ep_eval element by element. */
static void test_elementwise_matrix(void) {
  const double x[6] = {-2, -0.5, 0, 0.5, 2, 7}, bias[3] = {1, 2, 3}, r[2] = {-1, 4};
  const double *params[2] = {bias, r};
  ft_epilogue *ep = parse_ok("mish(x + bias) * r where row r");
  double y[6];
  if (ep && ft_ep_eval_matrix(ep, 2, 3, x, params, y, NULL) == FT_OK) {
    for (int i = 0; i < 6; i++) {
      const double v[2] = {bias[i % 3], r[i / 3]};
      ASSERT_TRUE(y[i] == ft_ep_eval(ep, x[i], v));
    }
  }
  ft_ep_free(ep);
}

/* The reference of many rows, in chunks on several threads (src/base/parallel.h: 4 threads here,
 * whatever the cores), equals the same on one thread and each row's reference computed alone, bit
 * for bit, for row-wise reductions and pools; batchnorm's columns equal the columns computed one at
 * a time (a 1-column matrix each). 300 x 4096: 18 chunks. */
static void test_chunked_rows(void) {
  enum { M = 300, N = 4096 };
  double *x = malloc(sizeof(double) * M * N), *y = malloc(sizeof(double) * M * N), *one = malloc(sizeof(double) * M * N);
  double *colv = malloc(sizeof(double) * N);
  ASSERT_TRUE(x && y && one && colv);
  if (!x || !y || !one || !colv) goto done;
  for (int i = 0; i < M * N; i++) x[i] = sin(0.37 * i) * 3 + (i % 11) * 0.05;
  for (int j = 0; j < N; j++) colv[j] = cos(0.11 * j);
  const double *params[1] = {colv};
  static const char *const rows[] = {"groupnorm(silu(x + bias) + 1, 64)", "log_softmax(gelu(x + bias))",
                                     "softmax(x * bias)", "rowsum(maxpool(x + bias, 2)) * 0.5",
                                     "logsumexp(x + bias) * 2", "rowmax(x) - 1", "rowmin(x * 2)", "rowmean(tanh(x))",
                                     "avgpool(x * bias, 4)"};
  for (size_t e = 0; e < sizeof rows / sizeof *rows; e++) {
    ft_epilogue *ep = parse_ok(rows[e]);
    int dims = 0;
    int64_t orows, ocols = 0;
    ASSERT_TRUE(ep != NULL);
    if (!ep) continue;
    ASSERT_OK(ft_ep_output_shape(ep, M, N, &dims, &orows, &ocols, NULL));
    const int64_t per_row = dims == 1 ? 1 : ocols;
    ft_parallel_set_threads(1);
    ASSERT_OK(ft_ep_eval_matrix(ep, M, N, x, params, one, NULL));
    ft_parallel_set_threads(4);
    ASSERT_OK(ft_ep_eval_matrix(ep, M, N, x, params, y, NULL));
    ASSERT_TRUE(memcmp(y, one, sizeof(double) * (size_t)(M * per_row)) == 0);
    for (int i = 0; i < M; i++) ASSERT_OK(ft_ep_eval_matrix(ep, 1, N, x + (size_t)i * N, params, one + i * per_row, NULL));
    ASSERT_TRUE(memcmp(y, one, sizeof(double) * (size_t)(M * per_row)) == 0);
    ft_ep_free(ep);
  }
  ft_epilogue *bn = parse_ok("batchnorm(x * 2)"); /* on 4 threads */
  ASSERT_TRUE(bn != NULL);
  if (bn) {
    ASSERT_OK(ft_ep_eval_matrix(bn, M, N, x, NULL, y, NULL));
    for (int j = 0; j < N; j += 511) {
      double xc[M], yc[M];
      for (int i = 0; i < M; i++) xc[i] = x[(size_t)i * N + j];
      ASSERT_OK(ft_ep_eval_matrix(bn, M, 1, xc, NULL, yc, NULL));
      for (int i = 0; i < M; i++) ASSERT_TRUE(yc[i] == y[(size_t)i * N + j]);
    }
  }
  ft_ep_free(bn);
  /* A batchnorm inside a row reduction: its columns over all rows, then each row's reduction; the
   * rows computed again one at a time from the normalized matrix (batchnorm(x) itself, above). */
  ft_epilogue *in = parse_ok("rowsum(batchnorm(x * 2) * 3)"), *bn2 = parse_ok("batchnorm(x * 2)");
  ft_epilogue *outer = parse_ok("rowsum(x * 3)");
  ASSERT_TRUE(in && bn2 && outer);
  if (in && bn2 && outer) {
    ASSERT_OK(ft_ep_eval_matrix(in, M, N, x, NULL, y, NULL));
    ASSERT_OK(ft_ep_eval_matrix(bn2, M, N, x, NULL, one, NULL));
    for (int i = 0; i < M; i++) {
      double r;
      ASSERT_OK(ft_ep_eval_matrix(outer, 1, N, one + (size_t)i * N, NULL, &r, NULL));
      ASSERT_TRUE(r == y[i]);
    }
  }
  ft_ep_free(in), ft_ep_free(bn2), ft_ep_free(outer);
  ft_parallel_set_threads(0);
done:
  free(x), free(y), free(one), free(colv);
}

static void step_is_at(const ft_ep_step *s, ft_ep_red red, int arg, const char *expr, int in0, ft_ep_shape shape,
                       int line) {
  if (s->reduce != red || s->arg != arg || strcmp(s->expr, expr) != 0 || s->nin != 1 || s->in[0] != in0 ||
      s->shape != shape) {
    fprintf(stderr, "%s:%d: step %d/%d \"%s\" nin %d in0 %d shape %d; want %d/%d \"%s\" in0 %d shape %d\n", __FILE__,
            line, (int)s->reduce, s->arg, s->expr, s->nin, s->in[0], (int)s->shape, (int)red, arg, expr, in0,
            (int)shape);
    ft_test_failures++;
  }
}
#define STEP_IS(s, red, arg, expr, in0, shape) step_is_at((s), (red), (arg), (expr), (in0), (shape), __LINE__)

static int plan_of(const char *text, ft_ep_eager *pl) {
  ft_epilogue *ep = parse_ok(text);
  ft_status s = ep ? ft_ep_eager_plan(ep, pl, NULL) : FT_ERR_PARSE;
  ft_ep_free(ep);
  ASSERT_OK(s);
  return s == FT_OK;
}

static void test_eager(void) {
  static ft_ep_eager pl;
  if (plan_of("logsumexp(x + bias)", &pl)) { /* the LM head: addmm, then the reduction */
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 1);
    STEP_IS(&pl.steps[0], FT_RED_LOGSUMEXP, 0, "", 0, FT_EP_SHAPE_M);
  }
  if (plan_of("gelu(softmax(x + bias))", &pl)) {
    ASSERT_EQ_INT(pl.nsteps, 2);
    STEP_IS(&pl.steps[0], FT_RED_SOFTMAX, 0, "", 0, FT_EP_SHAPE_MN);
    STEP_IS(&pl.steps[1], FT_RED_NONE, 0, "ft_gelu(IN0)", 1, FT_EP_SHAPE_MN);
  }
  if (plan_of("rowsum(sigmoid(x))", &pl)) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, -1);
    ASSERT_EQ_INT(pl.nsteps, 2);
    STEP_IS(&pl.steps[0], FT_RED_NONE, 0, "ft_sigmoid(IN0)", 0, FT_EP_SHAPE_MN);
    STEP_IS(&pl.steps[1], FT_RED_ROWSUM, 0, "", 1, FT_EP_SHAPE_M);
  }
  if (plan_of("rowsum(maxpool(x, 2)) * 2", &pl)) {
    ASSERT_EQ_INT(pl.nsteps, 3);
    STEP_IS(&pl.steps[0], FT_RED_MAXPOOL, 2, "", 0, FT_EP_SHAPE_POOLED);
    STEP_IS(&pl.steps[1], FT_RED_ROWSUM, 0, "", 1, FT_EP_SHAPE_M);
    STEP_IS(&pl.steps[2], FT_RED_NONE, 0, "(IN0 * 2.0f)", 2, FT_EP_SHAPE_M);
  }
  if (plan_of("swish(groupnorm(x + bias, 16) * g + b) where col g, col b", &pl)) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, 1);
    ASSERT_EQ_INT(pl.nsteps, 4);
    STEP_IS(&pl.steps[0], FT_RED_GROUPNORM, 16, "", 0, FT_EP_SHAPE_MN);
    STEP_IS(&pl.steps[1], FT_RED_NONE, 0, "(IN0 * ep.v[2][col])", 1, FT_EP_SHAPE_MN);
    STEP_IS(&pl.steps[2], FT_RED_NONE, 0, "(IN0 + ep.v[0][col])", 2, FT_EP_SHAPE_MN);
    STEP_IS(&pl.steps[3], FT_RED_NONE, 0, "ft_silu(IN0)", 3, FT_EP_SHAPE_MN);
  }
}

/* The public API: the shape is known before launch; checks, tunes and plans refuse reductions. */
static void test_api(void) {
  ft_problem p = {8192, 128256, 4096, "logsumexp(x + bias)", FT_MATH_BF16};
  int ndim = 0;
  int64_t shape[2] = {0, 0};
  char msg[256] = "";
  ASSERT_OK(ft_output_shape(&p, &ndim, shape, msg, sizeof msg));
  ASSERT_EQ_INT(ndim, 1);
  ASSERT_EQ_INT(shape[0], 8192);
  ASSERT_EQ_INT(shape[1], 1);
  ASSERT_OK(ft_check_problem(&p, msg, sizeof msg));
  p.epilogue = "batchnorm(x)";
  ASSERT_OK(ft_output_shape(&p, &ndim, shape, msg, sizeof msg));
  ASSERT_OK(ft_check_problem(&p, msg, sizeof msg));
  p.epilogue = "rowsum(maxpool(x, 2))";
  ASSERT_OK(ft_check_problem(&p, msg, sizeof msg));
  p.epilogue = "log_softmax(maxpool(x, 2))";
  ASSERT_EQ_INT(ft_check_problem(&p, msg, sizeof msg), FT_ERR_UNSUPPORTED);
  ASSERT_CONTAINS(msg, "no kernel serves 'log_softmax' of 'maxpool' yet");
  p.epilogue = "maxpool(x, 16)";
  ASSERT_OK(ft_output_shape(&p, &ndim, shape, msg, sizeof msg));
  ASSERT_EQ_INT(ndim, 2);
  ASSERT_EQ_INT(shape[1], 128256 / 16);
  p.epilogue = "groupnorm(x, 7)";
  ASSERT_EQ_INT(ft_output_shape(&p, &ndim, shape, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "groupnorm(..., 7) needs N divisible by 7, N is 128256");
  ASSERT_EQ_INT(ft_check_problem(&p, msg, sizeof msg), FT_ERR_INVALID_ARG);
  p.epilogue = "relu(x + bias)";
  ASSERT_OK(ft_output_shape(&p, &ndim, shape, msg, sizeof msg));
  ASSERT_EQ_INT(ndim, 2);
  ASSERT_EQ_INT(shape[1], 128256);
  ASSERT_OK(ft_check_problem(&p, msg, sizeof msg));
  p.epilogue = "rowsum(softmax(x))";
  ASSERT_EQ_INT(ft_output_shape(&p, &ndim, shape, msg, sizeof msg), FT_ERR_PARSE);
  ASSERT_CONTAINS(msg, "epilogue: col 8: 'softmax' inside 'rowsum'");
  ASSERT_EQ_INT(ft_output_shape(&p, NULL, shape, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_output_shape(NULL, &ndim, shape, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ft_epilogue_info *info = NULL;
  ASSERT_OK(ft_epilogue_inspect("softmax(x)", &info, msg, sizeof msg));
  if (info) ASSERT_EQ_STR(info->cuda, "");
  if (info) ASSERT_EQ_STR(info->canonical, "softmax(x)");
  ft_epilogue_info_free(info);
}

int main(void) {
  test_canonical();
  test_rejections();
  test_shapes();
  test_row_reductions();
  test_softmax();
  test_norms();
  test_pools();
  test_elementwise_matrix();
  test_chunked_rows();
  test_eager();
  test_api();
  return FT_TEST_DONE();
}
