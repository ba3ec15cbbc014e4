/* The fp8 mode's problem rules (src/fp8.h). */
#include "fp8.h"

#include <string.h>

ft_status ft_fp8_check(ft_math math, int64_t k, const ft_epilogue *ep, ft_fp8_scales *out, ft_err *err) {
  if (math != FT_MATH_FP8) return FT_OK;
  if (k % 16)
    return ft__fail(err, FT_ERR_INVALID_ARG,
                    "fp8: K = %lld is not a multiple of 16 (TMA reads e4m3 rows in 16-byte units)", (long long)k);
  char why[256];
  ft_fp8_scales s;
  if (!ft_ep_fp8_scales(ep, &s.sx_slot, &s.sw_slot, why, sizeof why))
    return ft__fail(err, FT_ERR_INVALID_ARG, "%s", why);
  s.sx_kind = ft_ep_param_at(ep, s.sx_slot)->kind;
  s.sw_kind = ft_ep_param_at(ep, s.sw_slot)->kind;
  if (out) *out = s;
  return FT_OK;
}

ft_dtype ft_vec_dtype(ft_math math, const char *name) {
  if (math != FT_MATH_FP8) return ft_math_dtype(math);
  return name && !strcmp(name, "bias") ? FT_DTYPE_BF16 : FT_DTYPE_F32;
}

int ft_vec_is_f32(ft_math math, const ft_epilogue *ep, int slot) {
  const ft_ep_param *p = ft_ep_param_at(ep, slot);
  return math == FT_MATH_FP8 && p && p->kind != FT_PARAM_SCALAR && ft_vec_dtype(math, p->name) == FT_DTYPE_F32;
}
