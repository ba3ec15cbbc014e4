/* The fp8 (e4m3) math mode without a GPU: its name, element types and problem rules (K a multiple
 * of 16, the scales sx and sw multiplying x), the vector types a launch must bind, the checks of
 * an e4m3 y's launch fields, and the CLI's one-line refusals. */
#include "api_internal.h"
#include "cli_run.h"
#include "compile.h"
#include "e4m3.h"
#include "embedded.h"
#include "fp8.h"
#include "ft_test.h"
#include "fusedtune.h"
#include "numbers.h"

static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static ft_status check(int64_t k, const char *epilogue, char *msg, size_t size) {
  const ft_problem p = {64, 256, k, epilogue, FT_MATH_FP8};
  return ft_check_problem(&p, msg, size);
}

static void test_names(void) {
  ft_math m;
  ASSERT_TRUE(ft_math_from_name("fp8", &m));
  ASSERT_EQ_INT(m, FT_MATH_FP8);
  ASSERT_EQ_STR(ft_math_name(FT_MATH_FP8), "fp8");
  ASSERT_EQ_INT(ft_math_dtype(FT_MATH_FP8), FT_DTYPE_E4M3);
  ASSERT_EQ_INT(ft_math_out_dtype(FT_MATH_FP8), FT_DTYPE_BF16);
  ASSERT_EQ_INT(ft_math_out_dtype(FT_MATH_FP16), FT_DTYPE_F16);
  ASSERT_EQ_STR(ft_dtype_name(FT_DTYPE_E4M3), "e4m3");
  ASSERT_EQ_STR(ft_dtype_name((ft_dtype)9), "?");
  /* bf16 the bias and a matrix operand (y's kind: a residual), fp32 the scales and E's own vectors. */
  const ft_ep_param bias = {"bias", FT_PARAM_COLVEC, 0, 0}, sx = {"sx", FT_PARAM_ROWVEC, 0, 0};
  const ft_ep_param r = {"r", FT_PARAM_MATRIX, 0, 0}, g = {"g", FT_PARAM_COLVEC, 0, 0};
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP8, &bias), FT_DTYPE_BF16);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP8, &sx), FT_DTYPE_F32);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP8, &r), FT_DTYPE_BF16);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP8, &g), FT_DTYPE_F32);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_BF16, &sx), FT_DTYPE_BF16);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP16, &r), FT_DTYPE_F16);
}

static void test_rules(void) {
  char msg[256];
  ASSERT_EQ_INT(check(64, "relu(x * sx * sw + bias) where row sx, col sw", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "x * sw * 2 * sx where scalar sx, scalar sw", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "gelu(sx * (x * sw)) where row sx, scalar sw", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(100, "x * sx * sw where scalar sx, scalar sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_STR(msg, "fp8: K = 100 is not a multiple of 16 (TMA reads e4m3 rows in 16-byte units)");
  const ft_problem ragged_n = {64, 129, 64, "x * sx * sw where row sx, col sw", FT_MATH_FP8};
  ASSERT_EQ_INT(ft_check_problem(&ragged_n, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: N = 129 is not a multiple of 16");
  ASSERT_EQ_INT(check(64, "relu(x + bias)", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: the epilogue must scale x by sx and sw");
  ASSERT_CONTAINS(msg, "'sx' is missing");
  ASSERT_EQ_INT(check(64, "x * sx where row sx", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "'sw' is missing");
  ASSERT_EQ_INT(check(64, "x * sx * sw where col sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "sx scales x's rows (scalar or row sx)");
  /* A scale declared a matrix is the same usage error (issue 58 item 9: d57500e answered "matrix
   * operands are not served in fp8 yet", FT_ERR_UNSUPPORTED, and took a mat sw as a scale). */
  const char *mat_scales[] = {"x * sx * sw where mat sx, col sw", "x * sx * sw where row sx, mat sw",
                              "x * sx * sw where mat sx, mat sw"};
  for (size_t i = 0; i < sizeof mat_scales / sizeof *mat_scales; i++) {
    ASSERT_EQ_INT(check(64, mat_scales[i], msg, sizeof msg), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(msg, "sx scales x's rows (scalar or row sx)");
  }
  ASSERT_EQ_INT(check(64, "x * sx + sw where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: x must appear once, multiplied by sx and sw");
  ASSERT_EQ_INT(check(64, "x * sx * sw + sx where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(check(64, "-(x * sx) * sw where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(strchr(msg, '\n') == NULL);
  ASSERT_EQ_INT(check(64, "logsumexp(x * sx * sw + bias) where row sx, col sw", msg, sizeof msg), FT_ERR_UNSUPPORTED);
  ASSERT_EQ_STR(msg, "fp8: the epilogue reduces (logsumexp): reductions are not served in fp8 yet");
  /* A matrix operand (a residual) is served: bf16, as y. */
  ASSERT_EQ_INT(check(64, "x * sx * sw + bias + r where row sx, col sw, mat r", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "relu(x * sx * sw) * r where scalar sx, scalar sw, mat r", msg, sizeof msg), FT_OK);
  /* Other modes keep their rules: no scales needed, any K. */
  const ft_problem bf = {64, 256, 100, "relu(x + bias)", FT_MATH_BF16};
  ASSERT_EQ_INT(ft_check_problem(&bf, msg, sizeof msg), FT_OK);
}

/* A gated pair in fp8: x2 scaled by sx and its own weight's sw2 (scalar or col), each scale of a
 * product once; what is wrong said in one line. */
static void test_gated_rules(void) {
  char msg[512];
  ASSERT_EQ_INT(check(64, "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "gelu_tanh(x * sx * sw + b1) * (sw2 * x2 * sx + b2) where row sx, col sw, col sw2, col b1, "
                      "col b2", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "x * sx * sw * x2 * sx * sw2 where scalar sx, scalar sw, scalar sw2", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "silu(x * sx * sw) * (x2 * sx * sw2) + r where row sx, col sw, scalar sw2, mat r", msg,
                      sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "silu(x * sx * sw) * x2 where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_STR(msg, "fp8: a gated pair's x2 must be scaled by sx and its own weight's scale sw2 (e.g. \"silu(x * sx * "
                     "sw) * (x2 * sx * sw2) where row sx, col sw, col sw2\"): 'sw2' is missing");
  /* Each refusal: E, then what its one line says. */
  static const char *const wrong[][2] = {
      {"silu(x * sx * sw) * (x2 * sw2)", "fp8: x2 must appear once, multiplied by sx and sw2; sx scales x and x2 once each"},
      {"silu(x * sx * sw) * (x2 * sx * sw2 * sw2)", "fp8: x2 must appear once"},
      {"silu(x * sx * sw) * (x2 * sx * sw2) * sx", "fp8: x2 must appear once"},
      {"silu(x * sw) * (x2 * sx * sx * sw2)", "fp8: x must appear once, multiplied by sx and sw"},
  };
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    char text[200];
    snprintf(text, sizeof text, "%s where row sx, col sw, col sw2", wrong[i][0]);
    ASSERT_EQ_INT(check(64, text, msg, sizeof msg), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(msg, wrong[i][1]);
  }
  ASSERT_EQ_INT(check(64, "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, row sw2", msg, sizeof msg),
                FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "sw2 the same for x2's weight");
  ASSERT_TRUE(strchr(msg, '\n') == NULL);
  /* The interleave's group comes first, then fp8's N. */
  const ft_problem odd = {64, 100, 64, "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2", FT_MATH_FP8};
  ASSERT_EQ_INT(ft_check_problem(&odd, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "needs n a multiple of 8");
  const ft_problem n8 = {64, 104, 64, "silu(x * sx * sw) * (x2 * sx * sw2) where row sx, col sw, col sw2", FT_MATH_FP8};
  ASSERT_EQ_INT(ft_check_problem(&n8, msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: N = 104 is not a multiple of 16");
  /* sw2 is a name like any other where E has no x2. */
  ASSERT_EQ_INT(check(64, "x * sx * sw + sw2 where row sx, col sw, col sw2", msg, sizeof msg), FT_OK);
}

/* A bf16 layer's E in its fp8 form: x scaled per token and per channel, declarations kept. */
static void test_fp8_epilogue(void) {
  char out[512];
  ASSERT_OK(ft_fp8_epilogue("relu(x + bias)", out, sizeof out));
  ASSERT_EQ_STR(out, "relu(x * sx * sw + bias) where col sw, row sx");
  ASSERT_OK(ft_fp8_epilogue("minsub", out, sizeof out));
  ASSERT_EQ_STR(out, "min(x * sx * sw + bias, c) - c where c = 2, col sw, row sx");
  ASSERT_OK(ft_fp8_epilogue("gelu(x * g + bias) where row g", out, sizeof out));
  ASSERT_EQ_STR(out, "gelu(x * sx * sw * g + bias) where row g, col sw, row sx");
  char msg[256];
  ASSERT_EQ_INT(check(64, out, msg, sizeof msg), FT_OK); /* what it writes is a valid fp8 problem */
  /* A matrix stays; a gated pair's x2 takes its own weight's scales, sw2. */
  ASSERT_OK(ft_fp8_epilogue("x + bias + r where mat r", out, sizeof out));
  ASSERT_EQ_STR(out, "x * sx * sw + bias + r where mat r, col sw, row sx");
  ASSERT_EQ_INT(check(64, out, msg, sizeof msg), FT_OK);
  ASSERT_OK(ft_fp8_epilogue("silu(x) * x2", out, sizeof out));
  ASSERT_EQ_STR(out, "silu(x * sx * sw) * (x2 * sx * sw2) where col sw, col sw2, row sx");
  ASSERT_EQ_INT(check(64, out, msg, sizeof msg), FT_OK);
  ASSERT_OK(ft_fp8_epilogue("gelu_tanh(x + b1) * (x2 + b2) where col b1, col b2", out, sizeof out));
  ASSERT_EQ_INT(check(64, out, msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(ft_fp8_epilogue("x * x2 + x2", out, sizeof out), FT_ERR_UNSUPPORTED); /* x2 twice */
  ASSERT_EQ_INT(ft_fp8_epilogue("x * sx where row sx", out, sizeof out), FT_ERR_PARSE);
  ASSERT_EQ_INT(ft_fp8_epilogue("relu(x + bias)", out, 8), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_fp8_epilogue(NULL, out, sizeof out), FT_ERR_INVALID_ARG);
}

static void test_cli(void) {
  ASSERT_EQ_INT(run("--db f.db tune --shape 64x256x100 --math fp8 --epilogue 'x * sx * sw where scalar sx, scalar sw'"), 2);
  ASSERT_CONTAINS(R.out, "fp8: K = 100 is not a multiple of 16");
  ASSERT_EQ_INT(run("--db f.db query --shape 64x256x64 --math fp8 --epilogue 'relu(x + bias)'"), 2);
  ASSERT_CONTAINS(R.out, "fp8: the epilogue must scale x by sx and sw");
  char db[512];
  snprintf(db, sizeof db, "%s/f.db", dir);
  ASSERT_TRUE(access(db, F_OK) != 0); /* refused before the database is created */
  ASSERT_EQ_INT(lines(R.out), 1);
}

/* Every code's value; the encoder's result is the nearest code (ties to even, saturated at 448)
 * against a search over all 254 finite codes. */
static void test_e4m3(void) {
  ASSERT_NEAR(ft_e4m3_to_double(0x7e), 448.0, 0);
  ASSERT_NEAR(ft_e4m3_to_double(0x01), 0x1p-9, 0);
  ASSERT_NEAR(ft_e4m3_to_double(0x08), 0x1p-6, 0);
  ASSERT_NEAR(ft_e4m3_to_double(0xb8), -1.0, 0);
  ASSERT_TRUE(isnan(ft_e4m3_to_double(0x7f)) && isnan(ft_e4m3_to_double(0xff)));
  int bad = 0;
  for (int c = 0; c < 256; c++)
    if ((c & 0x7f) != 0x7f) bad += ft_e4m3_from_f32((float)ft_e4m3_to_double((uint8_t)c)) != c;
  ASSERT_EQ_INT(bad, 0);
  ASSERT_EQ_INT(ft_e4m3_from_f32(1000.0f), 0x7e);
  ASSERT_EQ_INT(ft_e4m3_from_f32(-460.0f), 0xfe);
  ASSERT_EQ_INT(ft_e4m3_from_f32(NAN), 0x7f);
  ASSERT_EQ_INT(ft_e4m3_from_f32(1.0625f), 0x38); /* tie between 1 and 1.125: the even code */
  ASSERT_EQ_INT(ft_e4m3_from_f32(1.1875f), 0x3a); /* tie between 1.125 and 1.25: even */
  uint64_t s = 7;
  for (int i = 0; i < 200000 && !bad; i++) {
    const uint64_t z = next_u64(&s);
    const float f = ldexpf((float)(z >> 40) / 16777216.0f, (int)(z % 24) - 14) * ((z >> 8) & 1 ? -1.0f : 1.0f);
    const uint8_t got = ft_e4m3_from_f32(f);
    const double d = fabs(f - ft_e4m3_to_double(got));
    for (int c = 0; c < 256; c++) {
      if ((c & 0x7f) == 0x7f || ((c ^ got) & 0x80)) continue;
      const double dc = fabs(f - ft_e4m3_to_double((uint8_t)c));
      if (fabs(f) <= 448 && (dc < d || (dc == d && c != got && (got & 1)))) bad++;
    }
  }
  ASSERT_EQ_INT(bad, 0);
}

/* The quantizer's model: per row and per tensor, the scales from the data, every value within
 * half a step of its code times the scale, each block's amax at +-448. */
static void test_quantize_model(void) {
  enum { R = 5, C = 37 };
  uint16_t x[R * C];
  uint64_t s = 11;
  for (int i = 0; i < R * C; i++) x[i] = ft_f32_to_bf16(((float)(next_u64(&s) >> 40) / 16777216.0f - 0.5f) * (float)(1 + i / C));
  for (int i = 0; i < C; i++) x[3 * C + i] = 0; /* an all-zero row: scale 1 */
  uint8_t q[R * C];
  float sc[R];
  for (int per_row = 0; per_row < 2; per_row++) {
    ft_e4m3_quantize_model(x, FT_DTYPE_BF16, R, C, per_row, q, sc);
    int worst = 0;
    for (int r = 0; r < R; r++) {
      float amax = 0;
      for (int c = 0; c < C; c++) amax = fmaxf(amax, fabsf(ft_bf16_to_f32(x[r * C + c])));
      if (per_row) ASSERT_NEAR(sc[r], amax > 0 ? amax / 448.0f : 1.0f, 0);
      for (int c = 0; c < C; c++) {
        const double v = ft_bf16_to_f32(x[r * C + c]), back = ft_e4m3_to_double(q[r * C + c]) * sc[per_row ? r : 0];
        /* e4m3 keeps 3 mantissa bits: within 2^-4 relative, or the subnormal step times the scale */
        if (fabs(back - v) > fmax(fabs(v) * 0x1p-4, 0x1p-10 * sc[per_row ? r : 0])) worst++;
        if (per_row && fabsf((float)v) == amax && amax > 0) ASSERT_EQ_INT(q[r * C + c] & 0x7f, 0x7e);
      }
    }
    ASSERT_EQ_INT(worst, 0);
  }
}

/* The quantizer's kernels compile for sm_90 (NVRTC needs no GPU). */
static void test_quantizer_compiles(void) {
  size_t len = 0;
  const char *src = ft__embedded("kernels_src/quantize.cu", &len);
  ASSERT_TRUE(src != NULL);
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  ft_err err;
  ft__err_clear(&err);
  ASSERT_OK(ft_compile_one(src, "sm_90", &cubin, &size, &log, &err));
  ASSERT_TRUE(size > 0);
  free(cubin);
  free(log);
}

/* An e4m3 y's fields, checked before a launch (ft__e4m3_out_check): addresses only, never read. */
static void expect_e4m3_out(const ft_typed_args *a, const char *epi, int64_t m, int64_t n, ft_math math,
                            const char *fragment, int64_t want_rows, int64_t want_cols) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(epi, &ep, &e));
  if (!ep) return;
  int64_t rows = -1, cols = -1;
  const ft_status st = ft__e4m3_out_check(a, ep, m, n, math, &rows, &cols, &e);
  if (fragment) {
    ASSERT_EQ_INT(st, FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, fragment);
  } else {
    ASSERT_OK(st);
    ASSERT_TRUE(rows == want_rows && cols == want_cols);
  }
  ft_ep_free(ep);
}

static void test_e4m3_out_checks(void) {
  const char *e8 = "relu(x * sx * sw + bias) where row sx, col sw";
  const int64_t m = 37, n = 144;
  /* y: m * n codes at 0x100000; y_work: m * n bf16 at 0x200000; y_scales at 0x300000 */
  ft_typed_args a = FT_TYPED_ARGS_INIT;
  a.y = (ft_tensor_arg){NULL, (void *)(uintptr_t)0x100000, FT_DTYPE_E4M3};
  a.y_work = (void *)(uintptr_t)0x200000;
  a.y_scales = (float *)(uintptr_t)0x300000;
  a.quantizer = (ft_quantizer *)(uintptr_t)0x400000;
  expect_e4m3_out(&a, e8, m, n, FT_MATH_FP8, NULL, m, n);
  ft_typed_args b = a;
  b.struct_size = offsetof(ft_typed_args, n_scalars) + sizeof b.n_scalars; /* an older header's struct */
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "end before y_scales, y_work and quantizer", 0, 0);
  b = a, b.quantizer = NULL;
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "set y (the codes), y_work", 0, 0);
  b = a, b.y.data = NULL;
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "set y (the codes), y_work", 0, 0);
  b = a, b.y_scales = (float *)(uintptr_t)0x300002;
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "y_scales 0x300002 is not aligned", 0, 0);
  b = a, b.y_work = (void *)(uintptr_t)0x200008;
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "is not 16-byte aligned", 0, 0);
  /* y_work's bytes: 2 per element in fp8 (bf16), 4 in fp32; codes 1 */
  b = a, b.y_scales = (float *)(uintptr_t)(0x200000 + m * n * 2);
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, NULL, m, n);
  b.y_scales -= 1;
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "overlap", 0, 0);
  b = a, b.y_scales = (float *)(uintptr_t)(0x200000 + m * n * 2);
  expect_e4m3_out(&b, "x + bias", m, n, FT_MATH_FP32, "overlap", 0, 0);
  b = a, b.y.data = (void *)(uintptr_t)(0x300000 - m * n);
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, NULL, m, n);
  b.y.data = (void *)(uintptr_t)(0x300000 - m * n + 1);
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "overlap", 0, 0);
  b = a, b.y_work = (void *)(uintptr_t)(0x100000 + 16);
  expect_e4m3_out(&b, e8, m, n, FT_MATH_FP8, "overlap", 0, 0);
  /* the output's shape: a pool's [M, N / w] is quantized per row, a one-value reduction's [M] refused */
  expect_e4m3_out(&a, "maxpool(x, 4)", m, n, FT_MATH_BF16, NULL, m, n / 4);
  expect_e4m3_out(&a, "rowsum(x)", m, n, FT_MATH_BF16, "this plan's output is [37] (a row reduction)", 0, 0);
  expect_e4m3_out(&a, "x", (int64_t)1 << 31, 16, FT_MATH_BF16, "of 2147483648 rows: at most 2^31-1", 0, 0);
}

int main(void) {
  cli = getenv("FT_CLI");
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(dir, sizeof dir, "%s", tmp ? tmp : ".");
  test_names();
  test_rules();
  test_gated_rules();
  test_fp8_epilogue();
  test_e4m3();
  test_quantize_model();
  test_quantizer_compiles();
  test_e4m3_out_checks();
  if (cli) test_cli();
  return ft_test_failures ? 1 : 0;
}
