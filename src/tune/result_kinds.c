/* Names of the strategy, result-status and math-mode lists (fusedtune.h, fusedtune_tool.h): the text the database and
 * the exports store, made from the lists in one place. */
#include <string.h>

#include "fusedtune_tool.h"

static const char *const k_strategy[] = {
#define FT_NAME_(name, text) text,
    FT_STRATEGY_MAP(FT_NAME_)
#undef FT_NAME_
};
static const char *const k_status[] = {
#define FT_NAME_(name, text) text,
    FT_RESULT_STATUS_MAP(FT_NAME_)
#undef FT_NAME_
};

/* Index of text in names[0..n), -1 when none. */
static int find_name(const char *const *names, int n, const char *text) {
  for (int i = 0; text && i < n; i++)
    if (names[i] && strcmp(text, names[i]) == 0) return i;
  return -1;
}

const char *ft_strategy_name(ft_strategy s) {
  return (unsigned)s < FT_STRATEGY_COUNT ? k_strategy[s] : "?";
}

const char *ft_result_status_name(ft_result_status s) {
  return (unsigned)s < FT_RESULT_STATUS_COUNT ? k_status[s] : "?";
}

int ft_strategy_from_name(const char *text, ft_strategy *out) {
  const int i = find_name(k_strategy, FT_STRATEGY_COUNT, text);
  if (i >= 0 && out) *out = (ft_strategy)i;
  return i >= 0;
}

int ft_result_status_from_name(const char *text, ft_result_status *out) {
  const int i = find_name(k_status, FT_RESULT_STATUS_COUNT, text);
  if (i >= 0 && out) *out = (ft_result_status)i;
  return i >= 0;
}

static const char *const k_math[FT_MATH_COUNT] = {
#define FT_NAME_(name, value, text) [value] = text,
    FT_MATH_MAP(FT_NAME_)
#undef FT_NAME_
};

const char *ft_math_name(ft_math m) { return (unsigned)m < FT_MATH_COUNT ? k_math[m] : "?"; }

int ft_math_from_name(const char *text, ft_math *out) {
  const int i = find_name(k_math, FT_MATH_COUNT, text);
  if (i >= 0 && out) *out = (ft_math)i;
  return i >= 0;
}

ft_dtype ft_math_dtype(ft_math m) {
  return m == FT_MATH_BF16 ? FT_DTYPE_BF16 : m == FT_MATH_FP16 ? FT_DTYPE_F16 : m == FT_MATH_FP8 ? FT_DTYPE_E4M3 : FT_DTYPE_F32;
}

ft_dtype ft_math_out_dtype(ft_math m) { return m == FT_MATH_FP8 ? FT_DTYPE_BF16 : ft_math_dtype(m); }

const char *ft_dtype_name(ft_dtype d) {
  static const char *const names[] = {"fp32", "bf16", "fp16", "e4m3"};
  return (unsigned)d < sizeof names / sizeof *names ? names[d] : "?";
}
