/* Matrix operands (`mat r`) and gated pairs (`x2`) in the epilogue language, GPU-free: parsing,
 * canonical text and hash, slots, the float64 reference, the CUDA text, the eager plan and the
 * rejections that name what is wrong, the launch's binding of matrices by name (ft__bind_args,
 * on fake pointers: nothing is dereferenced), what codegen and the enumeration do with them, and
 * codegen's refusal of x2 where a variant computes E of x alone. */
#include "api_internal.h"
#include "codegen.h"
#include "epilogue.h"
#include "ft_test.h"
#include "space.h"

static ft_epilogue *parse_ok_at(const char *text, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  ft__err_clear(&err);
  if (ft_ep_parse(text, &ep, &err) != FT_OK) {
    fprintf(stderr, "%s:%d: parse of \"%s\" failed: %s\n", __FILE__, line, text, err.msg);
    ft_test_failures++;
  }
  return ep;
}
#define parse_ok(text) parse_ok_at((text), __LINE__)

static void reject_at(const char *text, const char *what, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_parse(text, &ep, &err);
  if (s != FT_ERR_PARSE || ep || !strstr(err.msg, what)) {
    fprintf(stderr, "%s:%d: \"%s\": status %d, message \"%s\"; want \"%s\"\n", __FILE__, line, text, (int)s, err.msg,
            what);
    ft_test_failures++;
  }
  ft_ep_free(ep);
}
#define REJECT(text, what) reject_at((text), (what), __LINE__)

static void test_matrix_parse(void) {
  ft_epilogue *ep = parse_ok("x + bias + r where mat r");
  if (ep) {
    ASSERT_EQ_STR(ft_ep_canonical(ep), "x + bias + r where mat r");
    ASSERT_EQ_INT(ft_ep_param_count(ep), 2);
    ASSERT_EQ_STR(ft_ep_param_at(ep, 1)->name, "r");
    ASSERT_EQ_INT(ft_ep_param_at(ep, 1)->kind, FT_PARAM_MATRIX);
    ASSERT_TRUE(ft_ep_has_matrix(ep));
    ASSERT_TRUE(!ft_ep_uses_x2(ep));
    /* The kernel reads the matrix at row * pitch + col, the pitch in the slot's scalar word. */
    ASSERT_EQ_STR(ft_ep_cuda(ep), "(x + ep.v[0][col] + ep.v[1][(long long)row * __float_as_int(ep.s[1]) + col])");
    double vals[2] = {0.25, -1.5};
    ASSERT_NEAR(ft_ep_eval(ep, 2.0, vals), 0.75, 1e-15);
    ft_ep_free(ep);
  }
  /* Any number of uses, other spellings, several matrices: one canonical text and hash. */
  ft_epilogue *a = parse_ok("(x+r)*sigmoid(r) + g where mat r, mat g");
  ft_epilogue *b = parse_ok("(x + r) * sigmoid(r) + g   where   mat g , mat r");
  if (a && b) {
    ASSERT_EQ_STR(ft_ep_canonical(a), "(x + r) * sigmoid(r) + g where mat g, mat r");
    ASSERT_EQ_STR(ft_ep_canonical(a), ft_ep_canonical(b));
    ASSERT_EQ_STR(ft_ep_hash(a), ft_ep_hash(b));
    double vals[2] = {3.0, 0.5}; /* slots by name: g, r */
    ASSERT_NEAR(ft_ep_eval(a, 1.5, vals), 2.0 * (1.0 / (1.0 + exp(-0.5))) + 3.0, 1e-15);
  }
  /* The canonical text parses back to itself; a matrix changes the hash. */
  if (a) {
    ft_epilogue *c = parse_ok(ft_ep_canonical(a));
    if (c) ASSERT_EQ_STR(ft_ep_canonical(c), ft_ep_canonical(a));
    ft_ep_free(c);
  }
  ft_epilogue *row = parse_ok("x + r where row r");
  ft_epilogue *mat = parse_ok("x + r where mat r");
  if (row && mat) ASSERT_TRUE(strcmp(ft_ep_hash(row), ft_ep_hash(mat)) != 0);
  ft_ep_free(row);
  ft_ep_free(mat);
  ft_ep_free(a);
  ft_ep_free(b);
  /* The pitch word: int bits in a float. */
  float f = ft_ep_mat_pitch(14336);
  int back;
  memcpy(&back, &f, sizeof back);
  ASSERT_EQ_INT(back, 14336);
}

static void test_matrix_rejections(void) {
  REJECT("x + r", "unknown name 'r'");
  REJECT("x + bias where mat bias", "'bias' is the built-in per-column vector");
  REJECT("x where mat r", "'r' is declared but not used");
  REJECT("x + mat where mat r", "expected an operand, found 'mat'");
  REJECT("x + r where mat r = 2", "only scalars take a default value");
  REJECT("x + r where mat r, mat r", "'r' is declared twice");
  REJECT("x * m where scalar mat", "'mat' is reserved");
  REJECT("x + r where mat", "expected a parameter name");
  /* With a reduction, a matrix goes where a col vector may (tests/test_epilogue_reduce_mat.c). */
  REJECT("logsumexp(x) + r where mat r", "'r' is a matrix ([M, N]) but meets the [M] result of 'logsumexp'");
}

static void test_matrix_eager(void) {
  ft_epilogue *ep = parse_ok("x + bias + r where mat r");
  static ft_ep_eager pl;
  ft_err err;
  if (ep && ft_ep_eager_plan(ep, &pl, &err) == FT_OK) {
    /* addmm folds the bias, then one add of the residual, as eager's F.linear(h, W, b) + r. */
    ASSERT_EQ_INT(pl.gemm_bias_slot, 0);
    ASSERT_EQ_INT(pl.nsteps, 1);
    ASSERT_EQ_STR(pl.steps[0].expr, "(IN0 + ep.v[1][(long long)row * __float_as_int(ep.s[1]) + col])");
    ASSERT_EQ_INT(pl.steps[0].nin, 1);
    ASSERT_EQ_INT(pl.steps[0].in[0], 0);
  } else {
    ft_test_failures++;
  }
  int slot = 9;
  if (ep) ASSERT_EQ_STR(ft_ep_cuda_folded(ep, &slot), "(x + ep.v[1][(long long)row * __float_as_int(ep.s[1]) + col])");
  ASSERT_EQ_INT(slot, 0);
  ft_ep_free(ep);
}

/* addmm's form (ft_ep_cuda_resid): `x + r` or `x + bias + r` (r a matrix, either order) read as
 * x, the slots of r and of the bias; nothing where x is not added to r first. */
static void test_matrix_resid(void) {
  static const struct {
    const char *text, *rest;
    int mat, bias;
  } cases[] = {
      {"x + r where mat r", "x", 0, -1},
      {"r + x where mat r", "x", 0, -1},
      {"x + bias + r where mat r", "x", 1, 0},
      {"relu(x + r) where mat r", "ft_relu(x)", 0, -1},
      {"(x + r) * sigmoid(r) where mat r", "(x * ft_sigmoid(ep.v[0][(long long)row * __float_as_int(ep.s[0]) + col]))", 0,
       -1},
      {"x + r + bias where mat r", "(x + ep.v[0][col])", 1, -1},
      {"2 * x + r where mat r", NULL, -1, -1},
      {"x * r where mat r", NULL, -1, -1},
      {"x + g where row g", NULL, -1, -1},
      {"x + r + x where mat r", NULL, -1, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ft_epilogue *ep = parse_ok(cases[i].text);
    if (!ep) continue;
    int mat = 7, bias = 7;
    const char *rest = ft_ep_cuda_resid(ep, &mat, &bias);
    if (cases[i].rest) {
      ASSERT_TRUE(rest != NULL);
      if (rest) ASSERT_EQ_STR(rest, cases[i].rest);
    } else {
      ASSERT_TRUE(rest == NULL);
    }
    ASSERT_EQ_INT(mat, cases[i].mat);
    ASSERT_EQ_INT(bias, cases[i].bias);
    ft_ep_free(ep);
  }
}

static void test_gated(void) {
  ft_epilogue *ep = parse_ok("silu(x) * x2");
  if (ep) {
    ASSERT_TRUE(ft_ep_uses_x2(ep));
    ASSERT_EQ_STR(ft_ep_canonical(ep), "silu(x) * x2");
    ASSERT_EQ_STR(ft_ep_cuda(ep), "(ft_silu(x) * x2)");
    ASSERT_NEAR(ft_ep_eval2(ep, 1.0, 3.0, NULL), 3.0 / (1.0 + exp(-1.0)), 1e-15);
    ASSERT_TRUE(isnan(ft_ep_eval(ep, 1.0, NULL))); /* x2 unknown without its product */
    ft_ep_free(ep);
  }
  ep = parse_ok("gelu_tanh(x+b1)*(x2+b2) where col b2, col b1");
  if (ep) {
    ASSERT_EQ_STR(ft_ep_canonical(ep), "gelu_tanh(x + b1) * (x2 + b2) where col b1, col b2");
    /* The GEMM of a gated pair has 2N columns: no [N] bias folds into it. */
    int slot = 5;
    ASSERT_TRUE(ft_ep_cuda_folded(ep, &slot) == NULL);
    ASSERT_EQ_INT(slot, -1);
    static ft_ep_eager pl;
    ft_err err;
    if (ft_ep_eager_plan(ep, &pl, &err) == FT_OK) {
      ASSERT_EQ_INT(pl.gemm_bias_slot, -1);
      ASSERT_EQ_INT(pl.nsteps, 4); /* x + b1, gelu_tanh, x2 + b2, the product */
      ASSERT_EQ_INT(pl.steps[2].in[0], FT_EP_BUF_X2);
    } else {
      ft_test_failures++;
    }
    ft_ep_free(ep);
  }
  REJECT("x2 * 2", "the expression does not use x");
  REJECT("x * x3", "unknown name 'x3'");
  REJECT("x * x2 where col x2", "'x2' is reserved");
  REJECT("softmax(x) * x2", "x2 in an expression with a reduction: not supported");
  ep = parse_ok("silu(x + bias)");
  if (ep) ASSERT_TRUE(!ft_ep_uses_x2(ep) && !ft_ep_has_matrix(ep));
  ft_ep_free(ep);
}

static void bind_fails_at(const ft_epilogue *ep, const ft_args *a, const char *what, int line) {
  ft_ep_args_dev dev;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft__bind_args(ep, a, 100, 64, &dev, &err);
  if (s != FT_ERR_INVALID_ARG || !strstr(err.msg, what)) {
    fprintf(stderr, "%s:%d: bind: status %d, message \"%s\"; want \"%s\"\n", __FILE__, line, (int)s, err.msg, what);
    ft_test_failures++;
  }
}
#define BIND_FAILS(ep, a, what) bind_fails_at((ep), (a), (what), __LINE__)

static void test_bind(void) {
  ft_epilogue *ep = parse_ok("x + bias + r where mat r");
  if (!ep) return;
  static char y[100 * 64 * 2 + 64], r[100 * 64 * 2 + 64], bias[256];
  ft_vec_arg vecs[2] = {{"bias", bias}, {"r", r}};
  ft_args a = {.x = bias, .w = bias, .y = y, .vecs = vecs, .n_vecs = 2, .dtype = FT_DTYPE_BF16};
  ft_ep_args_dev dev;
  ft_err err;
  ASSERT_OK(ft__bind_args(ep, &a, 100, 64, &dev, &err));
  ASSERT_TRUE(dev.v[1] == r && dev.v[0] == bias);
  int pitch;
  memcpy(&pitch, &dev.s[1], sizeof pitch);
  ASSERT_EQ_INT(pitch, 64); /* the kernel's row pitch: N */
  a.n_vecs = 1;
  BIND_FAILS(ep, &a, "epilogue matrix 'r' is not bound");
  a.n_vecs = 2;
  vecs[1].data = r + 1;
  BIND_FAILS(ep, &a, "matrix 'r' is not 2-byte aligned");
  vecs[1].data = y + 64; /* inside y: the kernels write y while reading r */
  BIND_FAILS(ep, &a, "matrix 'r' overlaps y");
  vecs[1].data = y + 100 * 64 * 2; /* just past y: apart */
  ASSERT_OK(ft__bind_args(ep, &a, 100, 64, &dev, &err));
  vecs[1].name = "q";
  BIND_FAILS(ep, &a, "vector 'q' is not a vector or matrix of the epilogue");
  ft_ep_free(ep);
}

/* The tensor-core kernel learns its matrix slots (FT_EP_MAT_MASK, for the producer's L2
 * prefetch); the passes keep at most 8 elements per thread with a matrix; codegen refuses x2 in a
 * variant that computes E of x alone. */
static void test_codegen_and_space(void) {
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90a", &lim, &e));
  ft_epilogue *mat = parse_ok("(x + r) * g + bias where mat g, mat r");
  ft_epilogue *plain = parse_ok("x + bias");
  ft_epilogue *gated = parse_ok("silu(x) * x2");
  if (!mat || !plain || !gated) goto done;
  ft_variant *vs = NULL;
  int n = 0;
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_GEMM, 256, 512, 1024, FT_MATH_BF16, FT_SPACE_PRUNED, mat, &lim, &vs, NULL, &n,
                                  &e));
  int tc = -1;
  for (int i = 0; i < n && tc < 0; i++)
    if (vs[i].family == 4) tc = i;
  ASSERT_TRUE(tc >= 0);
  if (tc >= 0) {
    ft_kernel_src k;
    ASSERT_OK(ft_codegen_variant(&vs[tc], mat, &k, &e));
    ASSERT_TRUE(k.text && strstr(k.text, "#define FT_EP_MAT_MASK 6u")); /* slots 1 (g) and 2 (r) */
    ft_kernel_src_free(&k);
    ASSERT_OK(ft_codegen_variant(&vs[tc], plain, &k, &e));
    ASSERT_TRUE(k.text && strstr(k.text, "#define FT_EP_MAT_MASK 0u"));
    ft_kernel_src_free(&k);
    /* A variant of E of x alone does not take a pair's E (tc.gated variants do: test_gated). */
    ASSERT_TRUE(ft_codegen_variant(&vs[tc], gated, &k, &e) == FT_ERR_INVALID_ARG && strstr(e.msg, "the epilogue uses x2"));
  }
  free(vs);
  vs = NULL;
  int with16 = 0, passes = 0;
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 256, 512, 1024, FT_MATH_BF16, FT_SPACE_FULL, mat, &lim, &vs, NULL, &n,
                                  &e));
  for (int i = 0; i < n; i++) passes++, with16 += vs[i].pass.ept > 8;
  ASSERT_TRUE(passes > 0 && with16 == 0);
  free(vs);
  vs = NULL;
  ASSERT_OK(ft_space_enumerate_ep(FT_VK_EPILOGUE, 256, 512, 1024, FT_MATH_BF16, FT_SPACE_FULL, plain, &lim, &vs, NULL,
                                  &n, &e));
  with16 = 0;
  for (int i = 0; i < n; i++) with16 += vs[i].pass.ept > 8;
  ASSERT_TRUE(with16 > 0); /* without a matrix they stay */
  free(vs);
done:
  ft_ep_free(mat);
  ft_ep_free(plain);
  ft_ep_free(gated);
}

int main(void) {
  test_codegen_and_space();
  test_bind();
  test_matrix_parse();
  test_matrix_rejections();
  test_matrix_eager();
  test_matrix_resid();
  test_gated();
  return FT_TEST_DONE();
}
