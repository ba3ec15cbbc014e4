/* A matrix operand (`mat r`, [M, N]) with a reduction, GPU-free: it goes where a col vector may
 * (inside the argument, and after the reduction where y keeps N columns: softmax, log_softmax,
 * groupnorm, batchnorm), the canonical text, the float64 reference against values worked out
 * here, the eager plan, the refusals (after a one-value reduction or a pool; tc_reduce's kernels),
 * which families serve it and NVRTC compiles of their forms for sm_90(a). */
#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

#define MAT1 "ep.v[1][(long long)row * __float_as_int(ep.s[1]) + col]"
#define MAT0 "ep.v[0][(long long)row * __float_as_int(ep.s[0]) + col]"

/* text is canonical, a kernel serves it, and its CUDA parts are inner and post. */
#define PARTS_ARE(text, inner, post) reduce_parts_at((text), (text), (inner), (post), __LINE__)

static void test_parse(void) {
  PARTS_ARE("(groupnorm(x + bias, 1) + r) * r where mat r", "(x + ep.v[0][col])", "((IN0 + " MAT1 ") * " MAT1 ")");
  PARTS_ARE("softmax(x + r) * r where mat r", "(x + " MAT0 ")", "(IN0 * " MAT0 ")");
  PARTS_ARE("batchnorm(x) * r where mat r", "x", "(IN0 * " MAT0 ")");
  PARTS_ARE("rowsum(x * r) where mat r", "(x * " MAT0 ")", "IN0");
  PARTS_ARE("maxpool(x * r, 2) where mat r", "IN0", "IN0");
  PARTS_ARE("logsumexp(x + r) * mish(logsumexp(x + r)) where mat r", "(x + " MAT0 ")", "(IN0 * ft_mish(IN0))");
  ft_epilogue *ep = parse_ok("maxpool(x * r, 2) where mat r");
  if (ep) {
    const char *arg = NULL;
    int w = 0;
    ASSERT_EQ_INT(ft_ep_pool(ep, &w, &arg), FT_RED_MAXPOOL);
    ASSERT_EQ_STR(arg, "(x * " MAT0 ")"); /* the windows' argument reads the matrix per element */
  }
  ft_ep_free(ep);
}

static void test_refusals(void) {
  REJECT("rowsum(x) + r where mat r", 13, "'r' is a matrix ([M, N]) but meets the [M] result of 'rowsum'");
  REJECT("logsumexp(x) * r where mat r", 16, "'r' is a matrix ([M, N]) but meets the [M] result of 'logsumexp'");
  REJECT("maxpool(x, 2) + r where mat r", 17, "'r' is a matrix ([M, N]) but meets the [M, N / w] result of 'maxpool'");
  REJECT("rowsum(maxpool(x, 2) * r) where mat r", 24,
         "'r' is a matrix ([M, N]) but meets the [M, N / w] result of 'maxpool'");
  REJECT("softmax(x) * x2 + r where mat r", 1, "x2 in an expression with a reduction: not supported");
}

#define REF_IS(text, m, n, x, params, want, count) \
  reference_is_at((text), (m), (n), (x), (params), (want), (count), 1e-14, __LINE__)

static void test_reference(void) {
  /* x [2, 2] = {1, 3; 0, 4}, r = {2, -1; 0.5, 3}. */
  const double x[4] = {1, 3, 0, 4}, r[4] = {2, -1, 0.5, 3}, bias[2] = {0.5, 0.5};
  const double *pr[1] = {r}, *pbr[2] = {bias, r};
  /* groupnorm of one group per row: {1.5, 3.5} and {0.5, 4.5}: mean 2.5, 4 variance 1 and 2.5, 4. */
  const double a = 1 / sqrt(1 + 1e-5), b = 2 / sqrt(4 + 1e-5);
  REF_IS("(groupnorm(x + bias, 1) + r) * r where mat r", 2, 2, x, pbr,
         ((double[]){(-a + 2) * 2, (a - 1) * -1, (-b + 0.5) * 0.5, (b + 3) * 3}), 4);
  /* batchnorm per column: {1, 0} mean 0.5, variance 0.25; {3, 4} mean 3.5, variance 0.25. */
  const double c = 0.5 / sqrt(0.25 + 1e-5);
  REF_IS("batchnorm(x) * r where mat r", 2, 2, x, pr, ((double[]){c * 2, -c * -1, -c * 0.5, c * 3}), 4);
  REF_IS("rowsum(x * r) where mat r", 2, 2, x, pr, ((double[]){1 * 2 + 3 * -1, 0 * 0.5 + 4 * 3}), 2);
  /* softmax of {0, log 3} is {1/4, 3/4}. */
  const double z[2] = {0, 0}, s[2] = {0, log(3)}, *ps[1] = {s};
  REF_IS("softmax(x + r) * r where mat r", 1, 2, z, ps, ((double[]){0, 0.75 * log(3)}), 2);
  REF_IS("log_softmax(x + r) where mat r", 1, 2, z, ps, ((double[]){log(0.25), log(0.75)}), 2);
  /* Windows of x * r = {1, -2, 6, 2}. */
  const double x4[4] = {1, 2, 3, 4}, r4[4] = {1, -1, 2, 0.5}, *p4[1] = {r4};
  REF_IS("maxpool(x * r, 2) where mat r", 1, 4, x4, p4, ((double[]){1, 6}), 2);
}

static void test_eager(void) {
  static ft_ep_eager pl;
  ft_epilogue *ep = parse_ok("(groupnorm(x + bias, 1) + r) * r where mat r");
  if (ep && ft_ep_eager_plan(ep, &pl, NULL) == FT_OK) { /* addmm, group_norm, then two elementwise steps */
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 3);
    ASSERT_TRUE(pl.steps[0].reduce == FT_RED_GROUPNORM && pl.steps[0].arg == 1 && pl.steps[0].in[0] == 0);
    ASSERT_EQ_STR(pl.steps[1].expr, "(IN0 + " MAT1 ")");
    ASSERT_TRUE(pl.steps[1].nin == 1 && pl.steps[1].in[0] == 1 && pl.steps[1].shape == FT_EP_SHAPE_MN);
    ASSERT_EQ_STR(pl.steps[2].expr, "(IN0 * " MAT1 ")");
    ASSERT_TRUE(pl.steps[2].nin == 1 && pl.steps[2].in[0] == 2);
  } else {
    FT_FAIL_AT_("no eager plan for the groupnorm with a matrix");
  }
  ft_ep_free(ep);
  ep = parse_ok("rowsum(x * r) where mat r");
  if (ep && ft_ep_eager_plan(ep, &pl, NULL) == FT_OK) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, -1);
    ASSERT_EQ_INT(pl.nsteps, 2);
    ASSERT_EQ_STR(pl.steps[0].expr, "(IN0 * " MAT0 ")");
    ASSERT_TRUE(pl.steps[1].reduce == FT_RED_ROWSUM && pl.steps[1].in[0] == 1 && pl.steps[1].shape == FT_EP_SHAPE_M);
  }
  ft_ep_free(ep);
}

/* How many of the pruned variants of text in math are of family fam. */
static int count_family(const char *text, ft_variant_kind kind, ft_math math, const char *fam, ft_variant *first) {
  int count = 0, found = 0;
  ft_variant *v = enumerate_scope(text, kind, 300, 4096, math, FT_SPACE_PRUNED, &count);
  for (int j = 0; j < count; j++)
    if (strcmp(ft_family_of(&v[j])->name, fam) == 0 && found++ == 0 && first) *first = v[j];
  free(v);
  return found;
}

/* The reduction pass serves every form (in 3xtf32 tc_pass too); tc_reduce, which would read the
 * matrix in its tile, none, and its codegen refuses one in one line. */
static void test_families(void) {
  static const char *const gn = "(groupnorm(x + bias, 1) + r) * r where mat r", *sum = "rowsum(x * r) where mat r";
  ASSERT_TRUE(count_family(gn, FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass", NULL) > 0);
  ASSERT_TRUE(count_family(sum, FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass", NULL) > 0);
  ASSERT_EQ_INT(count_family(sum, FT_VK_GEMM, FT_MATH_BF16, "tc_reduce", NULL), 0);
  ASSERT_EQ_INT(count_family(sum, FT_VK_GEMM, FT_MATH_3XTF32, "tc_reduce", NULL), 0);
  ASSERT_TRUE(count_family(sum, FT_VK_GEMM, FT_MATH_3XTF32, "tc_pass", NULL) > 0);
  ASSERT_TRUE(count_family(gn, FT_VK_GEMM, FT_MATH_3XTF32, "tc_pass", NULL) > 0);
  ASSERT_TRUE(count_family("rowsum(x)", FT_VK_GEMM, FT_MATH_BF16, "tc_reduce", NULL) > 0);
  ft_variant tcr;
  ft_epilogue *ep = parse_ok(sum);
  if (ep && count_family("rowsum(x)", FT_VK_GEMM, FT_MATH_BF16, "tc_reduce", &tcr) > 0) {
    ft_kernel_src k = {0};
    ft_err e;
    ASSERT_EQ_INT(ft_codegen_variant(&tcr, ep, &k, &e), FT_ERR_UNSUPPORTED);
    ASSERT_EQ_STR(e.msg, "codegen: the tc_reduce kernels do not read matrix 'r' in a reduction's argument (the "
                         "reduction pass does)");
    ft_kernel_src_free(&k);
  }
  ft_ep_free(ep);
}

/* One variant of each form that reads the matrix, through NVRTC without a spill: block per row and
 * held (groupnorm, softmax), column tiles (batchnorm), chunks (rowsum, a pool), tc_pass (3xtf32). */
static void test_compiles(void) {
  static const struct {
    const char *text;
    ft_variant_kind kind;
    ft_math math;
    const char *family;
    int form; /* 0 any, 1 held (team > 0), 2 column tiles (tile > 0) */
  } cases[] = {
      {"(groupnorm(x + bias, 1) + r) * r where mat r", FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass", 0},
      {"(groupnorm(x + bias, 1) + r) * r where mat r", FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass", 1},
      {"softmax(x + r) * r where mat r", FT_VK_EPILOGUE, FT_MATH_3XTF32, "reduce_pass", 1},
      {"batchnorm(x + r) - r where mat r", FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass", 2},
      {"rowsum(x * r) where mat r", FT_VK_EPILOGUE, FT_MATH_FP32, "reduce_pass", 0},
      {"maxpool(x * r, 2) where mat r", FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass", 0},
      {"(groupnorm(x + bias, 1) + r) * r where mat r", FT_VK_GEMM, FT_MATH_3XTF32, "tc_pass", 0},
  };
  enum { NCASES = sizeof cases / sizeof cases[0] };
  ft_kernel_src src[NCASES];
  int n = 0;
  for (int c = 0; c < NCASES; c++) {
    int count = 0, at = -1;
    ft_variant *v = enumerate_scope(cases[c].text, cases[c].kind, 300, 4096, cases[c].math, FT_SPACE_PRUNED, &count);
    for (int j = 0; j < count && at < 0; j++) {
      const int form = v[j].kind == FT_VK_EPILOGUE ? (v[j].red.team > 0 ? 1 : v[j].red.tile > 0 ? 2 : 0) : 0;
      if (strcmp(ft_family_of(&v[j])->name, cases[c].family) == 0 && form == cases[c].form) at = j;
    }
    ft_epilogue *ep = parse_ok(cases[c].text);
    if (at < 0 || !ep) {
      FT_FAIL_AT_("case %d \"%s\": no %s variant of form %d", c, cases[c].text, cases[c].family, cases[c].form);
    } else {
      ft_err e;
      ASSERT_OK(ft_codegen_variant(&v[at], ep, &src[n], &e));
      if (src[n].text) n++;
    }
    ft_ep_free(ep);
    free(v);
  }
  compile_sources(src, n, "matrix-with-reduction");
}

int main(void) {
  test_parse();
  test_refusals();
  test_reference();
  test_eager();
  test_families();
  test_compiles();
  return FT_TEST_DONE();
}
