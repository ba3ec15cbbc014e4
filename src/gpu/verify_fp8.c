/* The fp8 mode's problem data (src/gpu/verify_internal.h): a bf16 layer quantized as a user's would be. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "e4m3.h"
#include "epilogue.h"
#include "fp8.h"
#include "gated.h"
#include "parallel.h"
#include "verify_internal.h"

/* Codes into a device buffer of their own. */
static ft_status upload_codes(const uint8_t *q, size_t n, void **dev, ft_err *err) {
  FT_CUDA_TRY(err, cudaMalloc(dev, n));
  FT_CUDA_TRY(err, cudaMemcpy(*dev, q, n, cudaMemcpyHostToDevice));
  return FT_OK;
}

/* A scale into its slot: a scalar's value, or a vector's host and device values. */
static ft_status put_scales(ft_pdata *d, int slot, const float *scales, size_t len, int per_row, ft_err *err) {
  if (!per_row) {
    d->args.s[slot] = scales[0];
    return FT_OK;
  }
  memcpy(d->hvec[slot], scales, len * sizeof(float));
  FT_CUDA_TRY(err, cudaMemcpy(d->dvec[slot], scales, len * sizeof(float), cudaMemcpyHostToDevice));
  return FT_OK;
}

/* Row c of weight half h (0: W, 1: a gated pair's second weight) in the GEMM's weight: the
 * interleaved rows of src/family/gated.h for a pair, else row c. */
static size_t weight_row(int pair, int h, int c) {
  return pair ? (size_t)ft_gated_x_col(c) + (size_t)h * FT_GATED_GROUP : (size_t)c;
}

/* W [gemm_n, k] of bf16 bw quantized as its user would: each weight of a pair on its own (its rows
 * per row or as one tensor, as E declares sw and sw2), the codes interleaved after (what
 * ft_gated_interleave of the two quantized weights gives). Codes into q, values into qw, the
 * scales into their slots. */
static ft_status quantize_weight(ft_pdata *d, const ft_fp8_scales *sc, const uint16_t *bw, uint8_t *q, float *qw,
                                 ft_err *err) {
  const int n = d->n, k = d->k, pair = d->gemm_n != d->n;
  const size_t half = (size_t)n * k, row = (size_t)k;
  uint16_t *bh = malloc(half * sizeof *bh);
  uint8_t *qh = malloc(half);
  float *scales = malloc((size_t)n * sizeof *scales);
  ft_status st = bh && qh && scales ? FT_OK : ft__fail(err, FT_ERR_NOMEM, "out of host memory for the fp8 weight");
  for (int h = 0; h <= pair && st == FT_OK; h++) {
    const int slot = h ? sc->sw2_slot : sc->sw_slot;
    const int per_row = (h ? sc->sw2_kind : sc->sw_kind) == FT_PARAM_COLVEC;
    for (int c = 0; c < n; c++) memcpy(bh + (size_t)c * row, bw + weight_row(pair, h, c) * row, row * sizeof *bh);
    ft_e4m3_quantize_model(bh, FT_DTYPE_BF16, n, k, per_row, qh, scales);
    for (int c = 0; c < n; c++) {
      const size_t at = weight_row(pair, h, c) * row;
      memcpy(q + at, qh + (size_t)c * row, row);
      for (size_t j = 0; j < row; j++) qw[at + j] = (float)ft_e4m3_to_double(qh[(size_t)c * row + j]);
    }
    st = put_scales(d, slot, scales, (size_t)n, per_row, err);
  }
  free(bh), free(qh), free(scales);
  return st;
}

typedef struct e2e_job {
  ft_pdata *d;
  const ft_epilogue *ep;
  ft_fp8_scales sc;
  const double *gemm; /* [m, gemm_n] x W^T of the bf16 layer */
  double out2[FT_MAX_CHUNKS];
} e2e_job;

/* E with unit scales on the bf16 layer's product (a pair's x and x2 from its interleaved columns). */
static void e2e_chunk(void *user, int chunk, size_t begin, size_t end) {
  e2e_job *j = user;
  ft_pdata *d = j->d;
  const int np = ft_ep_param_count(j->ep), pair = d->gemm_n != d->n;
  double vals[FT_EP_SLOTS] = {0}, o2 = 0.0;
  for (size_t i = begin; i < end; i++) {
    const size_t r = i / (size_t)d->n, c = i % (size_t)d->n;
    for (int s = 0; s < np; s++)
      vals[s] = s == j->sc.sx_slot || s == j->sc.sw_slot || s == j->sc.sw2_slot ? 1.0
                                                                                 : ft__param_value(d, j->ep, s, r, c, i);
    const double *g = j->gemm + r * (size_t)d->gemm_n + (pair ? (size_t)ft_gated_x_col((int64_t)c) : c);
    const double v = pair ? ft_ep_eval2(j->ep, g[0], g[FT_GATED_GROUP], vals) : ft_ep_eval(j->ep, g[0], vals);
    d->ref_e2e[i] = v;
    if (isfinite(v)) o2 += v * v;
  }
  j->out2[chunk] = o2;
}

ft_status ft__pdata_fp8_inputs(ft_gpu *g, ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *s,
                               ft_err *err) {
  ft_fp8_scales sc;
  FT_TRY(ft_fp8_check(FT_MATH_FP8, d->n, d->k, ep, &sc, err));
  const int m = d->m, gn = d->gemm_n, k = d->k, pair = gn != d->n;
  const size_t nx = (size_t)m * k, nw = (size_t)gn * k, total = (size_t)m * d->n;
  float *hx = malloc(nx * sizeof *hx), *hw = malloc(nw * sizeof *hw);
  float *qx = malloc(nx * sizeof *qx), *qw = malloc(nw * sizeof *qw);
  float *sx = malloc((size_t)m * sizeof *sx);
  uint16_t *bx = malloc(nx * sizeof *bx), *bw = malloc(nw * sizeof *bw);
  uint8_t *cx = malloc(nx), *cw = malloc(nw);
  double *gemm = pair ? malloc((size_t)m * gn * sizeof *gemm) : NULL;
  d->ref_e2e = malloc(total * sizeof(double));
  ft_status st = FT_OK;
  if (!hx || !hw || !qx || !qw || !sx || !bx || !bw || !cx || !cw || (pair && !gemm) || !d->ref_e2e)
    st = ft__fail(err, FT_ERR_NOMEM, "out of host memory for the fp8 inputs of %dx%dx%d", m, d->n, k);
  if (st == FT_OK) {
    ft_fill_uniform(hx, nx, 0.0f, 1.0f, s);
    ft_fill_uniform(hw, nw, -bound, bound, s);
    st = ft__make_params(d, ep, bound, s, err);
  }
  if (st == FT_OK) { /* the bf16 layer */
    for (size_t i = 0; i < nx; i++) bx[i] = ft_f32_to_bf16(hx[i]), hx[i] = ft_bf16_to_f32(bx[i]);
    for (size_t i = 0; i < nw; i++) bw[i] = ft_f32_to_bf16(hw[i]), hw[i] = ft_bf16_to_f32(bw[i]);
  }
  const int x_rows = sc.sx_kind == FT_PARAM_ROWVEC;
  if (st == FT_OK) {
    ft_e4m3_quantize_model(bx, FT_DTYPE_BF16, m, k, x_rows, cx, sx);
    for (size_t i = 0; i < nx; i++) qx[i] = (float)ft_e4m3_to_double(cx[i]);
    st = put_scales(d, sc.sx_slot, sx, (size_t)m, x_rows, err);
  }
  if (st == FT_OK) st = quantize_weight(d, &sc, bw, cw, qw, err);
  if (st == FT_OK) st = upload_codes(cx, nx, &d->dX, err);
  if (st == FT_OK) st = upload_codes(cw, nw, &d->dW, err);
  if (st == FT_OK) st = ft__reference_gemm(g, qx, qw, m, gn, k, d->ref, err);
  if (st == FT_OK) st = ft__reference_gemm(g, hx, hw, m, gn, k, pair ? gemm : d->ref_e2e, err);
  if (st == FT_OK) {
    e2e_job j = {d, ep, sc, pair ? gemm : d->ref_e2e, {0}};
    const int nchunks = ft_host_chunks(total);
    ft_parallel_chunks(total, nchunks, 0, e2e_chunk, &j);
    double o2 = 0.0;
    for (int c = 0; c < nchunks; c++) o2 += j.out2[c];
    d->ref_e2e_norm = sqrt(o2);
  }
  free(hx), free(hw), free(qx), free(qw), free(sx), free(bx), free(bw), free(cx), free(cw), free(gemm);
  return st;
}
