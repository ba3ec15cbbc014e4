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
 * output channel). A gated pair's x2 has its own weight's scale sw2 (sw2_slot -1 without x2): the
 * second weight's rows are quantized on their own, so sw and sw2 are both in output-column order. */
typedef struct ft_fp8_scales {
  int sx_slot, sw_slot, sw2_slot;
  ft_param_kind sx_kind, sw_kind, sw2_kind;
} ft_fp8_scales;

/* In fp8 mode: N and K multiples of 16 and E scaling x by sx and sw, x2 by sx and sw2
 * (ft_ep_fp8_scales); out (may be NULL) gets the scales. Other modes: FT_OK. FT_ERR_INVALID_ARG
 * with a one-line message (FT_ERR_UNSUPPORTED for a reduction in E: no fp8 kernel serves one yet). */
ft_status ft_fp8_check(ft_math math, int64_t n, int64_t k, const ft_epilogue *ep, ft_fp8_scales *out, ft_err *err);

/* The element type of epilogue operand p (a vector or matrix) in mode math: in fp8 the bias and
 * every matrix operand (a residual, of y's kind) are bf16 as the output, every other vector (the
 * scales, E's own vectors) fp32; in the other modes, the mode's own. */
ft_dtype ft_vec_dtype(ft_math math, const ft_ep_param *p);

/* Whether E in mode math reads vector slot i of ep as fp32 though the mode's vectors are 16-bit
 * (fp8's scales). */
int ft_vec_is_f32(ft_math math, const ft_epilogue *ep, int slot);

#endif
