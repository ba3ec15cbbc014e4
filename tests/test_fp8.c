/* The fp8 (e4m3) math mode without a GPU: its name, element types and problem rules (K a multiple
 * of 16, the scales sx and sw multiplying x), the vector types a launch must bind, and the CLI's
 * one-line refusals. */
#include "cli_run.h"
#include "fp8.h"
#include "ft_test.h"
#include "fusedtune.h"

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
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP8, "bias"), FT_DTYPE_BF16);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_FP8, "sx"), FT_DTYPE_F32);
  ASSERT_EQ_INT(ft_vec_dtype(FT_MATH_BF16, "sx"), FT_DTYPE_BF16);
}

static void test_rules(void) {
  char msg[256];
  ASSERT_EQ_INT(check(64, "relu(x * sx * sw + bias) where row sx, col sw", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "x * sw * 2 * sx where scalar sx, scalar sw", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(64, "gelu(sx * (x * sw)) where row sx, scalar sw", msg, sizeof msg), FT_OK);
  ASSERT_EQ_INT(check(100, "x * sx * sw where scalar sx, scalar sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_STR(msg, "fp8: K = 100 is not a multiple of 16 (TMA reads e4m3 rows in 16-byte units)");
  ASSERT_EQ_INT(check(64, "relu(x + bias)", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: the epilogue must scale x by sx and sw");
  ASSERT_CONTAINS(msg, "'sx' is missing");
  ASSERT_EQ_INT(check(64, "x * sx where row sx", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "'sw' is missing");
  ASSERT_EQ_INT(check(64, "x * sx * sw where col sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "sx scales x's rows (scalar or row sx)");
  ASSERT_EQ_INT(check(64, "x * sx + sw where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(msg, "fp8: x must appear once, multiplied by sx and sw");
  ASSERT_EQ_INT(check(64, "x * sx * sw + sx where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(check(64, "-(x * sx) * sw where row sx, col sw", msg, sizeof msg), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(strchr(msg, '\n') == NULL);
  /* Other modes keep their rules: no scales needed, any K. */
  const ft_problem bf = {64, 256, 100, "relu(x + bias)", FT_MATH_BF16};
  ASSERT_EQ_INT(ft_check_problem(&bf, msg, sizeof msg), FT_OK);
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

int main(void) {
  cli = getenv("FT_CLI");
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(dir, sizeof dir, "%s", tmp ? tmp : ".");
  test_names();
  test_rules();
  if (cli) test_cli();
  return ft_test_failures ? 1 : 0;
}
