/* A reduction written twice with the same argument is one reduction whose value is reused
 * (`logsumexp(x + bias) * mish(logsumexp(x + bias))`, KernelBench level 2's 22), GPU-free: the
 * parse and its canonical text, the float64 reference against values worked out here, the eager
 * plan (one reduction step), the kernels' text (the rest of E reads the value twice) and their
 * NVRTC compiles for sm_90a, and the refusals of two different reductions. */
#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

#define REUSE_IS(text, want, inner, post) reduce_parts_at((text), (want), (inner), (post), __LINE__)

static void test_parse(void) {
  REUSE_IS("logsumexp(x+bias)*mish(logsumexp((x + bias)))", "logsumexp(x + bias) * mish(logsumexp(x + bias))",
           "(x + ep.v[0][col])", "(IN0 * ft_mish(IN0))");
  REUSE_IS("groupnorm(x, 2) * sigmoid(groupnorm(x, 2.0))", "groupnorm(x, 2) * sigmoid(groupnorm(x, 2))", "x",
           "(IN0 * ft_sigmoid(IN0))");
  REUSE_IS("softmax(x * s) * softmax(x*s) where s = 2", "softmax(x * s) * softmax(x * s) where s = 2",
           "(x * ep.s[0])", "(IN0 * IN0)");
  REUSE_IS("rowsum(maxpool(x, 2) * maxpool(x, 2))", "rowsum(maxpool(x, 2) * maxpool(x, 2))", "(IN0 * IN0)", "IN0");
  REUSE_IS("rowmax(x + b) - rowmax(x + b) * r where col b, row r", "rowmax(x + b) - rowmax(x + b) * r where col b, row r",
           "(x + ep.v[0][col])", "(IN0 - IN0 * ep.v[1][row])");
  /* Spelled differently, the same tree: one reduction. */
  ft_epilogue *a = parse_ok("logsumexp(x + bias) * mish(logsumexp(x + bias))"), *b = parse_ok("logsumexp(x + bias)");
  if (a && b) {
    int arg = -1;
    ASSERT_EQ_INT(ft_ep_reduction(a, &arg), FT_RED_LOGSUMEXP);
    ASSERT_TRUE(strcmp(ft_ep_hash(a), ft_ep_hash(b)) != 0);
    ASSERT_TRUE(ft_ep_cuda(a) == NULL);
    int ndim = 0;
    int64_t rows = 0, cols = 0;
    ASSERT_OK(ft_ep_output_shape(a, 5, 7, &ndim, &rows, &cols, NULL));
    ASSERT_EQ_INT(ndim, 1);
  }
  ft_ep_free(a), ft_ep_free(b);
}

static void test_refusals(void) {
  REJECT("rowsum(x) + rowmax(x)", 13, "a second reduction 'rowmax' (the first, 'rowsum', is at col 1): an epilogue holds one");
  REJECT("logsumexp(x) * logsumexp(x + bias)", 16,
         "a second 'logsumexp' with another argument (the first is at col 1): an epilogue holds one reduction, "
         "reused where it is written again with the same argument");
  REJECT("logsumexp(x + bias) * mish(logsumexp(x + b)) where col b", 28, "a second 'logsumexp' with another argument");
  REJECT("groupnorm(x, 2) + groupnorm(x, 4)", 19, "a second 'groupnorm' with another argument (the first is at col 1)");
  REJECT("softmax(x) + log_softmax(x)", 14,
         "a second reduction 'log_softmax' (the first, 'softmax', is at col 1): an epilogue holds one");
  /* A pool reused outside the row reduction holding it is a second reduction. */
  REJECT("rowsum(maxpool(x, 2)) + maxpool(x, 2)", 8, "a second reduction 'maxpool' (the first, 'rowsum', is at col 1)");
  /* The rules around the one reduction still hold at each use. */
  REJECT("logsumexp(x) * mish(logsumexp(x)) + x", 37, "x is used outside 'logsumexp'");
  REJECT("logsumexp(x) * mish(logsumexp(x)) + bias", 37, "'bias' is a col vector (N values) but meets the [M] result");
}

#define REF_IS(text, m, n, x, params, want, count) \
  reference_is_at((text), (m), (n), (x), (params), (want), (count), 1e-14, __LINE__)

static double mish(double v) { return v * tanh(log(1 + exp(v))); }

static void test_reference(void) {
  const double x[6] = {1, 2, 3, -1, 0.5, 4}, bias[3] = {0.5, -0.25, 10}, *pb[1] = {bias};
  const double l0 = log(exp(1.5) + exp(1.75) + exp(13)), l1 = log(exp(-0.5) + exp(0.25) + exp(14));
  REF_IS("logsumexp(x + bias) * mish(logsumexp(x + bias))", 2, 3, x, pb, ((double[]){l0 * mish(l0), l1 * mish(l1)}), 2);
  /* Groups {1, 3} and {2, 6}: mean 2, variance 1; mean 4, variance 4. */
  const double g[4] = {1, 3, 2, 6}, e1 = 1 / sqrt(1 + 1e-5), e2 = 2 / sqrt(4 + 1e-5);
  const double gn[4] = {-e1, e1, -e2, e2};
  double silu_gn[4];
  for (int i = 0; i < 4; i++) silu_gn[i] = gn[i] / (1 + exp(-gn[i]));
  REF_IS("groupnorm(x, 2) * sigmoid(groupnorm(x, 2))", 1, 4, g, NULL, silu_gn, 4);
  REF_IS("rowsum(maxpool(x, 2) * maxpool(x, 2))", 1, 4, g, NULL, ((double[]){3 * 3 + 6 * 6}), 1);
  const double s[2] = {0, log(3)};
  REF_IS("softmax(x) * softmax(x)", 1, 2, s, NULL, ((double[]){0.0625, 0.5625}), 2);
  REF_IS("maxpool(x, 2) - maxpool(x, 2) / 2", 1, 4, g, NULL, ((double[]){1.5, 3}), 2);
}

static void step_is_at(const ft_ep_step *s, ft_ep_red red, const char *expr, int nin, int in0, int in1,
                       ft_ep_shape shape, int line) {
  if (s->reduce != red || strcmp(s->expr, expr) != 0 || s->nin != nin || s->in[0] != in0 ||
      (nin > 1 && s->in[1] != in1) || s->shape != shape) {
    fprintf(stderr, "%s:%d: step %d \"%s\" nin %d in %d %d shape %d; want %d \"%s\" nin %d in %d %d shape %d\n",
            __FILE__, line, (int)s->reduce, s->expr, s->nin, s->in[0], s->in[1], (int)s->shape, (int)red, expr, nin,
            in0, in1, (int)shape);
    ft_test_failures++;
  }
}
#define STEP_IS(s, red, expr, nin, in0, in1, shape) step_is_at((s), (red), (expr), (nin), (in0), (in1), (shape), __LINE__)

/* Eager code computes the reduction once (`l = logsumexp(...)`) and reads it twice. */
static void test_eager(void) {
  static ft_ep_eager pl;
  ft_epilogue *ep = parse_ok("logsumexp(x + bias) * mish(logsumexp(x + bias))");
  if (ep && ft_ep_eager_plan(ep, &pl, NULL) == FT_OK) {
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0); /* addmm */
    ASSERT_EQ_INT(pl.nsteps, 3);
    STEP_IS(&pl.steps[0], FT_RED_LOGSUMEXP, "", 1, 0, 0, FT_EP_SHAPE_M);
    STEP_IS(&pl.steps[1], FT_RED_NONE, "ft_mish(IN0)", 1, 1, 0, FT_EP_SHAPE_M);
    STEP_IS(&pl.steps[2], FT_RED_NONE, "(IN0 * IN1)", 2, 1, 2, FT_EP_SHAPE_M);
  } else {
    FT_FAIL_AT_("no eager plan for the reused logsumexp");
  }
  ft_ep_free(ep);
  ep = parse_ok("softmax(x) * softmax(x)");
  if (ep && ft_ep_eager_plan(ep, &pl, NULL) == FT_OK) {
    ASSERT_EQ_INT(pl.nsteps, 2);
    STEP_IS(&pl.steps[0], FT_RED_SOFTMAX, "", 1, 0, 0, FT_EP_SHAPE_MN);
    STEP_IS(&pl.steps[1], FT_RED_NONE, "(IN0 * IN0)", 1, 1, 0, FT_EP_SHAPE_MN);
  }
  ft_ep_free(ep);
}

/* The variants of kind for text in math on sm_90, pruned. */
static ft_variant *variants(const char *text, ft_variant_kind kind, ft_math math, int *count) {
  return enumerate_scope(text, kind, 300, 4096, math, FT_SPACE_PRUNED, count);
}

/* Each kernel that serves a one-value reduction applies the rest of E with the value read twice:
 * the reduction pass's last chunk and tc_reduce's finalize. Their text holds FT_RED_POST with
 * IN0 twice, and the first variant of each family compiles for sm_90a without a spill. */
static void test_kernels(void) {
  static const char *const text = "logsumexp(x + bias) * mish(logsumexp(x + bias))";
  static const struct {
    ft_variant_kind kind;
    ft_math math;
    const char *family;
  } cases[] = {{FT_VK_EPILOGUE, FT_MATH_BF16, "reduce_pass"}, {FT_VK_GEMM, FT_MATH_BF16, "tc_reduce"},
               {FT_VK_EPILOGUE, FT_MATH_3XTF32, "reduce_pass"}, {FT_VK_GEMM, FT_MATH_3XTF32, "tc_reduce"}};
  ft_kernel_src src[4];
  int n = 0;
  ft_epilogue *ep = parse_ok(text);
  for (size_t c = 0; ep && c < sizeof cases / sizeof cases[0]; c++) {
    int count = 0;
    ft_variant *v = variants(text, cases[c].kind, cases[c].math, &count);
    int at = -1;
    for (int j = 0; j < count && at < 0; j++)
      if (strcmp(ft_family_of(&v[j])->name, cases[c].family) == 0) at = j;
    if (at < 0) {
      FT_FAIL_AT_("no %s variant for \"%s\" in case %zu", cases[c].family, text, c);
      free(v);
      continue;
    }
    ft_err e;
    ft_kernel_src k;
    ASSERT_OK(ft_codegen_variant(&v[at], ep, &k, &e));
    if (k.text) {
      ASSERT_CONTAINS(k.text, "(IN0 * ft_mish(IN0))");
      src[n++] = k;
    }
    free(v);
  }
  ft_ep_free(ep);
  compile_sources(src, n, "reused-reduction");
}

int main(void) {
  test_parse();
  test_refusals();
  test_reference();
  test_eager();
  test_kernels();
  return FT_TEST_DONE();
}
