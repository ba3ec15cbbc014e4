/* The fp8 (e4m3) math mode's rules on a problem and its tensors, shared by the API, the tuner,
 * codegen and the launch checks. GPU-free. */
#ifndef FT_FP8_H
#define FT_FP8_H

#include <stdint.h>

#include "common.h"
#include "epilogue.h"

/* Largest finite e4m3 value: a scale is amax / FT_E4M3_MAX. */
#define FT_E4M3_MAX 448.0f

/* Where the scales are: slots and kinds (scalar: per tensor; row sx: per token; col sw: per
 * output channel). */
typedef struct ft_fp8_scales {
  int sx_slot, sw_slot;
  ft_param_kind sx_kind, sw_kind;
} ft_fp8_scales;

/* In fp8 mode: N and K multiples of 16 and E scaling x by sx and sw (ft_ep_fp8_scales); out (may
 * be NULL) gets the scales. Other modes: FT_OK. FT_ERR_INVALID_ARG with a one-line message
 * (FT_ERR_UNSUPPORTED for a reduction in E: no fp8 kernel serves one yet). */
ft_status ft_fp8_check(ft_math math, int64_t n, int64_t k, const ft_epilogue *ep, ft_fp8_scales *out, ft_err *err);

/* The element type of the epilogue vector `name` in mode math: in fp8 the bias is bf16 (as the
 * output) and every other vector (the scales) fp32; in the other modes, the mode's own. */
ft_dtype ft_vec_dtype(ft_math math, const char *name);

/* Whether E in mode math reads vector slot i of ep as fp32 though the mode's vectors are 16-bit
 * (fp8's scales). */
int ft_vec_is_f32(ft_math math, const ft_epilogue *ep, int slot);

#endif
