/* What the gated-pair GPU tests share (gpu_test_gated, gpu_test_fp8_gated): the interleaved
 * weight rebuilt from its halves by ft_gated_interleave, and the baselines checked as the tuner
 * runs them. */
#ifndef FT_TEST_GPU_GATED_CHECK_H
#define FT_TEST_GPU_GATED_CHECK_H

#include "baseline.h"
#include "fusedtune.h"
#include "gated.h"
#include "gpu_sample_check.h"

/* W1 and W2 taken out of d's interleaved weight (e4m3 codes in fp8), put back by
 * ft_gated_interleave: the same bytes. */
static void check_interleave(const ft_pdata *d, const char *what) {
  const size_t welem = d->math == FT_MATH_FP8 ? 1 : d->elem;
  const size_t half = (size_t)d->n * d->k * welem, group = (size_t)FT_GATED_GROUP * d->k * welem;
  void *w[2] = {NULL, NULL}, *back = NULL;
  unsigned char *a = malloc(2 * half), *b = malloc(2 * half);
  cudaError_t ce = cudaMalloc(&w[0], half);
  if (ce == cudaSuccess) ce = cudaMalloc(&w[1], half);
  if (ce == cudaSuccess) ce = cudaMalloc(&back, 2 * half);
  for (int i = 0; i < 2 && ce == cudaSuccess; i++)
    ce = cudaMemcpy2D(w[i], group, (const char *)d->dW + i * group, 2 * group, group, (size_t)d->n / FT_GATED_GROUP,
                      cudaMemcpyDeviceToDevice);
  char msg[200] = "";
  const ft_status s = ce == cudaSuccess ? ft_gated_interleave(w[0], w[1], back, d->n, d->k, welem, 0, msg, sizeof msg)
                                        : FT_ERR_CUDA;
  if (s == FT_OK) ce = cudaMemcpy(a, back, 2 * half, cudaMemcpyDeviceToHost);
  if (s == FT_OK && ce == cudaSuccess) ce = cudaMemcpy(b, d->dW, 2 * half, cudaMemcpyDeviceToHost);
  if (s != FT_OK || ce != cudaSuccess || !a || !b || memcmp(a, b, 2 * half) != 0)
    FT_FAIL_AT_("%s: ft_gated_interleave on the device: %s %s", what, msg, cudaGetErrorString(ce));
  cudaFree(w[0]), cudaFree(w[1]), cudaFree(back);
  free(a), free(b);
}

/* The eager chain (two GEMMs for a pair) and the GEMM alone (of the stacked weight for a pair),
 * after raising *tolp in 3xtf32 and fp8 to the eager chain's error as the tuner does. */
static void check_baselines(ft_gpu *g, const ft_epilogue *ep, ft_pdata *d, double *tolp, const char *what) {
  ft_err e;
  ft_baselines *bl = NULL;
  if (ft_baselines_create(g, NULL, ep, d, &bl, &e) != FT_OK || ft_baseline_chain_tolerance(bl, tolp, &e) != FT_OK) {
    FT_FAIL_AT_("%s: baselines: %s", what, e.msg);
    ft_baselines_free(bl);
    return;
  }
  const double tol = *tolp;
  const ft_baseline_kind kinds[2] = {FT_BL_EAGER, FT_BL_CUBLAS_GEMM};
  for (int i = 0; i < 2; i++) {
    ft_check c = {0, 0, 0};
    ft_status s = ft_pdata_poison(d, 0, &e);
    if (s == FT_OK) s = ft_baseline_enqueue(bl, kinds[i], 0, &e);
    const cudaError_t ce = s == FT_OK ? cudaDeviceSynchronize() : cudaSuccess;
    if (ce != cudaSuccess) s = ft_cuda_fail(&e, ce, "baseline execution");
    if (s == FT_OK) s = kinds[i] == FT_BL_CUBLAS_GEMM ? ft_pdata_check_gemm(d, &c, &e) : ft_pdata_check(d, &c, &e);
    const char *desc = ft_baseline_describe(bl, kinds[i]);
    if (s != FT_OK || c.bad || !(c.rel_err <= tol))
      FT_FAIL_AT_("%s %s: %s rel_err %.3g (tolerance %.3g), %lld non-finite", what, desc, s != FT_OK ? e.msg : "",
                  c.rel_err, tol, (long long)c.bad);
    else
      printf("  %-60s %-60s rel_err %.3g\n", what, desc, c.rel_err);
  }
  ft_baselines_free(bl);
}

#endif
