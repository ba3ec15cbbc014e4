/* The fp8 mode's problem rules (src/epilogue/fp8.h). */
#include "fp8.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ft_status ft_fp8_check(ft_math math, int64_t n, int64_t k, const ft_epilogue *ep, ft_fp8_scales *out, ft_err *err) {
  if (math != FT_MATH_FP8) return FT_OK;
  if (k % 16)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "fp8: K = %lld is not a multiple of 16 (TMA reads e4m3 rows in 16-byte units)", (long long)k);
  /* cuBLASLt's fp8 GEMM, the tune's baseline and the yardstick of its check, has no algorithm for
   * other N (torch._scaled_mm asks the same). */
  if (n % 16)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "fp8: N = %lld is not a multiple of 16 (cuBLASLt's fp8 GEMM, the baseline fp8 is checked "
                    "against, needs it)", (long long)n);
  if (ft_ep_reduction(ep, NULL) != FT_RED_NONE)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "fp8: the epilogue reduces (%s): reductions are not served in fp8 yet",
                    ft_ep_red_name(ft_ep_reduction(ep, NULL)));
  char why[400];
  ft_fp8_scales s;
  if (!ft_ep_fp8_scales(ep, &s.sx_slot, &s.sw_slot, &s.sw2_slot, why, sizeof why))
    return ft__fail(err, FT_ERR_INVALID_ARG, "%s", why);
  s.sx_kind = ft_ep_param_at(ep, s.sx_slot)->kind;
  s.sw_kind = ft_ep_param_at(ep, s.sw_slot)->kind;
  s.sw2_kind = s.sw2_slot >= 0 ? ft_ep_param_at(ep, s.sw2_slot)->kind : FT_PARAM_SCALAR;
  if (out) *out = s;
  return FT_OK;
}

ft_dtype ft_vec_dtype(ft_math math, const ft_ep_param *p) {
  if (math != FT_MATH_FP8) return ft_math_dtype(math);
  return p && (p->kind == FT_PARAM_MATRIX || !strcmp(p->name, "bias")) ? FT_DTYPE_BF16 : FT_DTYPE_F32;
}

int ft_vec_is_f32(ft_math math, const ft_epilogue *ep, int slot) {
  const ft_ep_param *p = ft_ep_param_at(ep, slot);
  return math == FT_MATH_FP8 && p && p->kind != FT_PARAM_SCALAR && ft_vec_dtype(math, p) == FT_DTYPE_F32;
}

ft_status ft_fp8_epilogue(const char *epilogue, char *out, size_t out_size) {
  if (!epilogue || !out || out_size == 0) return FT_ERR_INVALID_ARG;
  out[0] = 0;
  ft_err err;
  ft__err_clear(&err);
  ft_epilogue *ep = NULL;
  FT_TRY(ft_ep_parse(epilogue, &ep, &err));
  const char *canon = ft_ep_canonical(ep), *where = strstr(canon, " where ");
  const size_t body = where ? (size_t)(where - canon) : strlen(canon);
  const int pair = ft_ep_uses_x2(ep);
  char *text = malloc(14 * strlen(canon) + 64); /* "x" grows to 13 characters, "x2" to 15 */
  ft_status s = text ? FT_OK : FT_ERR_NOMEM;
  size_t at = 0;
  /* each name token x becomes (x * sx * sw), x2 (x2 * sx * sw2): its own weight's scales */
  for (size_t i = 0; s == FT_OK && i < body;) {
    const char c = canon[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
      size_t j = i;
      while (j < body && (isalnum((unsigned char)canon[j]) || canon[j] == '_')) j++;
      if (j - i == 1 && c == 'x') at += (size_t)sprintf(text + at, "(x * sx * sw)");
      else if (j - i == 2 && !strncmp(canon + i, "x2", 2)) at += (size_t)sprintf(text + at, "(x2 * sx * sw2)");
      else memcpy(text + at, canon + i, j - i), at += j - i;
      i = j;
    } else {
      text[at++] = canon[i++];
    }
  }
  if (s == FT_OK)
    sprintf(text + at, " where %s%srow sx, col sw%s", where ? where + 7 : "", where ? ", " : "", pair ? ", col sw2" : "");
  ft_ep_free(ep);
  ep = NULL;
  if (s == FT_OK) s = ft_ep_parse(text, &ep, &err); /* sx or sw already named: a duplicate declaration */
  /* x or x2 not once, a reduction: no fp8 problem has this form (K 16: any valid K). */
  if (s == FT_OK && ft_fp8_check(FT_MATH_FP8, 16, 16, ep, NULL, &err) != FT_OK) s = FT_ERR_UNSUPPORTED;
  if (s == FT_OK && strlen(ft_ep_canonical(ep)) >= out_size) s = FT_ERR_INVALID_ARG;
  if (s == FT_OK) snprintf(out, out_size, "%s", ft_ep_canonical(ep));
  ft_ep_free(ep);
  free(text);
  return s;
}
