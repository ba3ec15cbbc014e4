/* What src/gpu/verify.c shares with src/gpu/verify_fp8.c (the fp8 mode's inputs). Internal. */
#ifndef FT_VERIFY_INTERNAL_H
#define FT_VERIFY_INTERNAL_H

#include "verify.h"

/* acc[m][n] = sum_k x[m][k] W[n][k] in float64 (cuBLAS DGEMM) from host floats. */
ft_status ft__reference_gemm(ft_gpu *g, const float *hx, const float *hw, int m, int n, int k, double *acc,
                             ft_err *err);
/* The epilogue's parameters: random vectors (uploaded in their element type), scalars at their
 * default or 1.5. */
ft_status ft__make_params(ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *seed, ft_err *err);
/* The value E reads for parameter slot s at output (r, c), element i = r * n + c of [m, n]: a
 * scalar's, a matrix's element, a vector's at the column or row. */
static inline double ft__param_value(const ft_pdata *d, const ft_epilogue *ep, int s, size_t r, size_t c, size_t i) {
  const ft_ep_param *p = ft_ep_param_at(ep, s);
  if (p->kind == FT_PARAM_SCALAR) return d->args.s[s];
  if (p->kind == FT_PARAM_MATRIX) return d->hvec[s][i];
  return d->hvec[s][p->kind == FT_PARAM_COLVEC ? c : r];
}

/* fp8: x and W as a bf16 layer quantized to e4m3 (dX, dW; a gated pair's two weights quantized
 * apart, then interleaved), the scales into their slots, d->ref the product of the e4m3 values
 * ([m, gemm_n]), d->ref_e2e E of the bf16 product with unit scales ([m, n]). */
ft_status ft__pdata_fp8_inputs(ft_gpu *g, ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *s,
                               ft_err *err);

#endif
