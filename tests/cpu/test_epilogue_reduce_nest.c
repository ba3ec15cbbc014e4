/* A row reduction of column-normalized values (`softmax(batchnorm(x + bias) * s)`, KernelBench
 * level 2's 84), GPU-free: the language states it (parse, canonical text, output shape), the float64
 * reference computes it (against values worked out here), the eager plan runs it as three steps,
 * and the reduction pass's column-then-row form serves softmax and log_softmax of it (its texts,
 * variants, codegen's refusals, NVRTC compiles); a one-value reduction of it is refused in one
 * line, as are the nesting rules around it. */
#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

#define REF_IS(text, m, n, x, params, want, count) \
  reference_is_at((text), (m), (n), (x), (params), (want), (count), 1e-14, __LINE__)

static void test_parse(void) {
  ft_epilogue *ep = canon_fixed_at("softmax( batchnorm((x + bias)) * s ) where col s",
                                   "softmax(batchnorm(x + bias) * s) where col s", __LINE__);
  if (ep) {
    int arg = -1, ndim = 0;
    int64_t rows = 0, cols = 0;
    ASSERT_EQ_INT(ft_ep_reduction(ep, &arg), FT_RED_SOFTMAX);
    ASSERT_EQ_INT(ft_ep_pool(ep, NULL, NULL), FT_RED_NONE);
    ASSERT_OK(ft_ep_output_shape(ep, 5, 7, &ndim, &rows, &cols, NULL));
    ASSERT_TRUE(ndim == 2 && rows == 5 && cols == 7);
    ft_err err;
    ASSERT_OK(ft_ep_check_kernels(ep, &err));
    const char *inner = NULL, *post = NULL, *norm_arg = NULL;
    ft_ep_cuda_reduce(ep, &inner, &post);
    ASSERT_EQ_STR(inner, "(IN0 * ep.v[1][col])"); /* the softmax's argument, of batchnorm's value */
    ASSERT_EQ_STR(post, "IN0");
    ASSERT_EQ_INT(ft_ep_norm(ep, &norm_arg), FT_RED_BATCHNORM);
    ASSERT_EQ_STR(norm_arg, "(x + ep.v[0][col])");
  }
  ft_ep_free(ep);
  ep = parse_ok("logsumexp(batchnorm(x) * 2)");
  if (ep) {
    ft_err err;
    const char *arg = "";
    ASSERT_EQ_INT(ft_ep_check_kernels(ep, &err), FT_ERR_UNSUPPORTED);
    ASSERT_CONTAINS(err.msg, "epilogue: no kernel serves 'logsumexp' of 'batchnorm' yet (");
    ASSERT_TRUE(strchr(err.msg, '\n') == NULL);
    ASSERT_EQ_INT(ft_ep_norm(ep, &arg), FT_RED_BATCHNORM);
    ASSERT_TRUE(arg == NULL);
  }
  ft_ep_free(ep);
  ep = canon_fixed_at("logsumexp(batchnorm(x * r) * r) where mat r", "logsumexp(batchnorm(x * r) * r) where mat r",
                      __LINE__);
  ft_ep_free(ep);
}

static void test_refusals(void) {
  REJECT("log_softmax(batchnorm(x) + x)", 28,
         "x is used inside 'log_softmax' but outside its 'batchnorm': read x inside the batchnorm");
  REJECT("rowsum(batchnorm(x) * maxpool(x, 2))", 23,
         "'maxpool' beside 'batchnorm' inside 'rowsum': a reduction holds one pool or batchnorm");
  REJECT("softmax(batchnorm(x) + batchnorm(x + 1))", 24, "'batchnorm' beside 'batchnorm' inside 'softmax'");
  REJECT("groupnorm(batchnorm(x), 2)", 11,
         "'batchnorm' inside 'groupnorm': a reduction may hold only a pool or batchnorm, and only a row reduction may "
         "hold one");
  REJECT("batchnorm(batchnorm(x))", 11, "'batchnorm' inside 'batchnorm': a reduction may hold only a pool or batchnorm");
  REJECT("logsumexp(batchnorm(x)) + batchnorm(x)", 11,
         "a second reduction 'batchnorm' (the first, 'logsumexp', is at col 1): an epilogue holds one");
  REJECT("logsumexp(batchnorm(x)) * s where col s", 27, "'s' is a col vector (N values) but meets the [M] result");
}

/* softmax of a row v: 1 / sum_k exp(v_k - v_j), another formula than the reference's. */
static void softmax_row(const double *v, int n, double *out) {
  for (int j = 0; j < n; j++) {
    double s = 0;
    for (int k = 0; k < n; k++) s += exp(v[k] - v[j]);
    out[j] = 1 / s;
  }
}

static void test_reference(void) {
  /* x = {1, 3; 0, 4} + bias {0.5, -1}: columns {1.5, 0.5} and {2, 3}, each of variance 0.25, so
   * batchnorm gives {c, -c} and {-c, c}, c = 0.5 / sqrt(0.25 + 1e-5); then * s = {1, 2}. */
  const double x[4] = {1, 3, 0, 4}, bias[2] = {0.5, -1}, s[2] = {1, 2}, *pbs[2] = {bias, s};
  const double c = 0.5 / sqrt(0.25 + 1e-5);
  const double v0[2] = {c, -2 * c}, v1[2] = {-c, 2 * c};
  double want[4];
  softmax_row(v0, 2, want);
  softmax_row(v1, 2, want + 2);
  REF_IS("softmax(batchnorm(x + bias) * s) where col s", 2, 2, x, pbs, want, 4);
  REF_IS("logsumexp(batchnorm(x + bias) * s) where col s", 2, 2, x, pbs,
         ((double[]){log(exp(c) + exp(-2 * c)), log(exp(-c) + exp(2 * c))}), 2);
  REF_IS("rowmax(batchnorm(x + bias)) + 1", 2, 2, x, pbs, ((double[]){c + 1, c + 1}), 2);
}

static void test_eager(void) {
  static ft_ep_eager pl;
  ft_epilogue *ep = parse_ok("softmax(batchnorm(x + bias) * s) where col s");
  if (ep && ft_ep_eager_plan(ep, &pl, NULL) == FT_OK) { /* addmm, batch_norm, mul, softmax */
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 3);
    ASSERT_TRUE(pl.steps[0].reduce == FT_RED_BATCHNORM && pl.steps[0].in[0] == 0 && pl.steps[0].shape == FT_EP_SHAPE_MN);
    ASSERT_EQ_STR(pl.steps[1].expr, "(IN0 * ep.v[1][col])");
    ASSERT_TRUE(pl.steps[1].nin == 1 && pl.steps[1].in[0] == 1);
    ASSERT_TRUE(pl.steps[2].reduce == FT_RED_SOFTMAX && pl.steps[2].in[0] == 2 && pl.steps[2].shape == FT_EP_SHAPE_MN);
  } else {
    FT_FAIL_AT_("no eager plan for softmax of batchnorm");
  }
  ft_ep_free(ep);
}

/* The pass's column-then-row form alone serves it (names "_n"); codegen refuses a variant of
 * another form for it, and that form for another reduction; one of each mode compiles for sm_90(a)
 * without a spill (in 3xtf32 after the tensor-core GEMM too: tc_pass). */
static void test_kernels(void) {
  static const char *const text = "softmax(batchnorm(x + bias) * s) where col s";
  static const struct {
    ft_variant_kind kind;
    ft_math math;
    const char *family;
  } cases[] = {{FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass"},
               {FT_VK_EPILOGUE, FT_MATH_FP32, "reduce_pass"},
               {FT_VK_GEMM, FT_MATH_3XTF32, "tc_pass"}};
  ft_kernel_src src[3];
  int n = 0;
  ft_epilogue *ep = parse_ok(text), *plain = parse_ok("softmax(x + bias)");
  for (size_t c = 0; ep && plain && c < sizeof cases / sizeof cases[0]; c++) {
    int count = 0, at = -1;
    ft_variant *v = enumerate_scope(text, cases[c].kind, 300, 4096, cases[c].math, FT_SPACE_PRUNED, &count);
    for (int j = 0; j < count; j++) {
      if (strcmp(ft_family_of(&v[j])->name, cases[c].family) != 0) continue;
      ASSERT_TRUE(v[j].red.norm == 1 && v[j].red.tile > 0 && v[j].red.team == 0 && v[j].red.cols == 0);
      char name[200];
      ft_variant_name(&v[j], name, sizeof name);
      ASSERT_CONTAINS(name, "_n");
      if (at < 0) at = j;
    }
    if (at < 0) {
      FT_FAIL_AT_("no %s variant for \"%s\" in case %zu", cases[c].family, text, c);
      free(v);
      continue;
    }
    ft_err e;
    ft_kernel_src k = {0};
    ASSERT_EQ_INT(ft_codegen_variant(&v[at], plain, &k, &e), FT_ERR_INVALID_ARG); /* norm 1, plain softmax */
    ASSERT_CONTAINS(e.msg, "codegen: norm 1 cannot compute 'softmax'");
    ft_variant other = v[at];
    other.red.norm = 0;
    ASSERT_EQ_INT(ft_codegen_variant(&other, ep, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "codegen: norm 0 cannot compute 'softmax' of 'batchnorm'");
    ASSERT_OK(ft_codegen_variant(&v[at], ep, &src[n], &e));
    if (src[n].text) {
      ASSERT_CONTAINS(src[n].text, "#define FT_RED_FORM 3");
      ASSERT_CONTAINS(src[n].text, "#define FT_RED_NORM_ARG ((x + ep.v[0][col]))");
      n++;
    }
    free(v);
  }
  ft_ep_free(ep);
  ft_ep_free(plain);
  compile_sources(src, n, "softmax-of-batchnorm");
}

int main(void) {
  test_parse();
  test_refusals();
  test_reference();
  test_eager();
  test_kernels();
  return FT_TEST_DONE();
}
