/* The fp8 mode's problem data (src/gpu/verify_internal.h): a bf16 layer quantized as a user's would be. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "e4m3.h"
#include "epilogue.h"
#include "fp8.h"
#include "parallel.h"
#include "verify_internal.h"

/* The quantized operand: its codes uploaded, their values and its scales (rows or one) on the host. */
static ft_status quantize(const uint16_t *bf, int rows, int cols, int per_row, void **dev, float *vals, float *scales,
                          ft_err *err) {
  const size_t n = (size_t)rows * cols;
  uint8_t *q = malloc(n);
  if (!q) return ft__fail(err, FT_ERR_NOMEM, "out of host memory for %dx%d e4m3 codes", rows, cols);
  ft_e4m3_quantize_model(bf, FT_DTYPE_BF16, rows, cols, per_row, q, scales);
  for (size_t i = 0; i < n; i++) vals[i] = (float)ft_e4m3_to_double(q[i]);
  cudaError_t e = cudaMalloc(dev, n);
  if (e == cudaSuccess) e = cudaMemcpy(*dev, q, n, cudaMemcpyHostToDevice);
  free(q);
  return e == cudaSuccess ? FT_OK : ft_cuda_fail(err, e, "e4m3 upload");
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

typedef struct e2e_job {
  ft_pdata *d;
  const ft_epilogue *ep;
  ft_fp8_scales sc;
  double out2[FT_MAX_CHUNKS];
} e2e_job;

static void e2e_chunk(void *user, int chunk, size_t begin, size_t end) {
  e2e_job *j = user;
  ft_pdata *d = j->d;
  const int np = ft_ep_param_count(j->ep);
  double vals[FT_EP_SLOTS] = {0}, o2 = 0.0;
  for (size_t i = begin; i < end; i++) {
    const size_t r = i / (size_t)d->n, c = i % (size_t)d->n;
    for (int s = 0; s < np; s++) {
      const ft_ep_param *p = ft_ep_param_at(j->ep, s);
      vals[s] = s == j->sc.sx_slot || s == j->sc.sw_slot ? 1.0
                : p->kind == FT_PARAM_SCALAR           ? d->args.s[s]
                                                       : d->hvec[s][p->kind == FT_PARAM_COLVEC ? c : r];
    }
    const double v = ft_ep_eval(j->ep, d->ref_e2e[i], vals);
    d->ref_e2e[i] = v;
    if (isfinite(v)) o2 += v * v;
  }
  j->out2[chunk] = o2;
}

ft_status ft__pdata_fp8_inputs(ft_gpu *g, ft_pdata *d, const ft_epilogue *ep, float bound, uint64_t *s,
                               ft_err *err) {
  ft_fp8_scales sc;
  FT_TRY(ft_fp8_check(FT_MATH_FP8, d->n, d->k, ep, &sc, err));
  const int m = d->m, n = d->n, k = d->k;
  const size_t nx = (size_t)m * k, nw = (size_t)n * k, total = (size_t)m * n;
  float *hx = malloc(nx * sizeof *hx), *hw = malloc(nw * sizeof *hw);
  float *qx = malloc(nx * sizeof *qx), *qw = malloc(nw * sizeof *qw);
  float *sx = malloc((size_t)m * sizeof *sx), *sw = malloc((size_t)n * sizeof *sw);
  uint16_t *bx = malloc(nx * sizeof *bx), *bw = malloc(nw * sizeof *bw);
  d->ref_e2e = malloc(total * sizeof(double));
  ft_status st = FT_OK;
  if (!hx || !hw || !qx || !qw || !sx || !sw || !bx || !bw || !d->ref_e2e)
    st = ft__fail(err, FT_ERR_NOMEM, "out of host memory for the fp8 inputs of %dx%dx%d", m, n, k);
  if (st == FT_OK) {
    ft_fill_uniform(hx, nx, 0.0f, 1.0f, s);
    ft_fill_uniform(hw, nw, -bound, bound, s);
    st = ft__make_params(d, ep, bound, s, err);
  }
  if (st == FT_OK) { /* the bf16 layer */
    for (size_t i = 0; i < nx; i++) bx[i] = ft_f32_to_bf16(hx[i]), hx[i] = ft_bf16_to_f32(bx[i]);
    for (size_t i = 0; i < nw; i++) bw[i] = ft_f32_to_bf16(hw[i]), hw[i] = ft_bf16_to_f32(bw[i]);
  }
  const int x_rows = sc.sx_kind == FT_PARAM_ROWVEC, w_rows = sc.sw_kind == FT_PARAM_COLVEC;
  if (st == FT_OK) st = quantize(bx, m, k, x_rows, &d->dX, qx, sx, err);
  if (st == FT_OK) st = quantize(bw, n, k, w_rows, &d->dW, qw, sw, err);
  if (st == FT_OK) st = put_scales(d, sc.sx_slot, sx, (size_t)m, x_rows, err);
  if (st == FT_OK) st = put_scales(d, sc.sw_slot, sw, (size_t)n, w_rows, err);
  if (st == FT_OK) st = ft__reference_gemm(g, qx, qw, m, n, k, d->ref, err);
  if (st == FT_OK) st = ft__reference_gemm(g, hx, hw, m, n, k, d->ref_e2e, err);
  if (st == FT_OK) {
    e2e_job j = {d, ep, sc, {0}};
    const int nchunks = ft_host_chunks(total);
    ft_parallel_chunks(total, nchunks, 0, e2e_chunk, &j);
    double o2 = 0.0;
    for (int c = 0; c < nchunks; c++) o2 += j.out2[c];
    d->ref_e2e_norm = sqrt(o2);
  }
  free(hx), free(hw), free(qx), free(qw), free(sx), free(sw), free(bx), free(bw);
  return st;
}
