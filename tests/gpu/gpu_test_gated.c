/* Gated pairs (E with x2) on the GPU: in every mode that serves them (fp32, tf32, bf16, fp16,
 * 3xtf32), on ragged M and N multiples of 8 (88: not of 16), every gated pass (of the full space
 * on the first shape, the default one after) and a sample of the tensor-core family's gated
 * variants (16 and each family's edges per case), launched through the library's launch path
 * with the output NaN-poisoned first, each against the float64 reference of E(x W1^T, x W2^T)
 * within the mode's tolerance; the baselines (eager: two GEMMs + the eager plan; the stacked GEMM
 * alone) checked the same way; ft_gated_interleave on device pointers rebuilds the problem's
 * weight bit for bit from its halves. The second epilogue (biases and a matrix) runs on the first
 * shape. */
#define _POSIX_C_SOURCE 200809L

#include "baseline.h"
#include "fusedtune.h"
#include "gated.h"
#include "gpu_sample_check.h"

typedef struct shape {
  int m, n, k;
} shape;

static const shape k_shapes[] = {{129, 272, 520}, {17, 88, 64}, {300, 1008, 136}};
static const char *const k_epilogues[] = {"silu(x) * x2", "gelu_tanh(x + b1) * (x2 + b2) + r where col b1, col b2, mat r"};
static const ft_math k_modes[] = {FT_MATH_FP32, FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16, FT_MATH_3XTF32};

/* W1 and W2 taken out of d's interleaved weight, put back by ft_gated_interleave: the same bytes. */
static void check_interleave(const ft_pdata *d, const char *what) {
  const size_t half = (size_t)d->n * d->k * d->elem, group = (size_t)FT_GATED_GROUP * d->k * d->elem;
  void *w[2] = {NULL, NULL}, *back = NULL;
  unsigned char *a = malloc(2 * half), *b = malloc(2 * half);
  cudaError_t ce = cudaMalloc(&w[0], half);
  if (ce == cudaSuccess) ce = cudaMalloc(&w[1], half);
  if (ce == cudaSuccess) ce = cudaMalloc(&back, 2 * half);
  for (int i = 0; i < 2 && ce == cudaSuccess; i++)
    ce = cudaMemcpy2D(w[i], group, (const char *)d->dW + i * group, 2 * group, group, (size_t)d->n / FT_GATED_GROUP,
                      cudaMemcpyDeviceToDevice);
  char msg[200] = "";
  const ft_status s = ce == cudaSuccess ? ft_gated_interleave(w[0], w[1], back, d->n, d->k, d->elem, 0, msg, sizeof msg)
                                        : FT_ERR_CUDA;
  if (s == FT_OK) ce = cudaMemcpy(a, back, 2 * half, cudaMemcpyDeviceToHost);
  if (s == FT_OK && ce == cudaSuccess) ce = cudaMemcpy(b, d->dW, 2 * half, cudaMemcpyDeviceToHost);
  if (s != FT_OK || ce != cudaSuccess || !a || !b || memcmp(a, b, 2 * half) != 0)
    FT_FAIL_AT_("%s: ft_gated_interleave on the device: %s %s", what, msg, cudaGetErrorString(ce));
  cudaFree(w[0]), cudaFree(w[1]), cudaFree(back);
  free(a), free(b);
}

/* The baselines, after raising *tol in 3xtf32 to the eager chain's error as the tuner does. */
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

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  int fused_ok = 0, pass_ok = 0;
  for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++)
    for (size_t si = 0; si < sizeof k_shapes / sizeof k_shapes[0]; si++)
      for (size_t ei = 0; ei < (si == 0 ? sizeof k_epilogues / sizeof k_epilogues[0] : 1); ei++) {
        const shape *sh = &k_shapes[si];
        char what[160];
        snprintf(what, sizeof what, "%s %dx%dx%d [%s]", ft_math_name(k_modes[mi]), sh->m, sh->n, sh->k, k_epilogues[ei]);
        ft_err e;
        ft_epilogue *ep = NULL;
        ft_pdata *d = NULL;
        double tol = 0, cublas_err = 0;
        if (ft_ep_parse(k_epilogues[ei], &ep, &e) != FT_OK ||
            ft_pdata_create(g, sh->m, sh->n, sh->k, ep, k_modes[mi], 99, &d, &e) != FT_OK ||
            ft_pdata_tolerance(g, d, &tol, &cublas_err, &e) != FT_OK) {
          FT_FAIL_AT_("%s: setup: %s", what, e.msg);
        } else {
          if (ei == 0) check_interleave(d, what);
          check_baselines(g, ep, d, &tol, what);
          /* The tensor-core family's gated variants: tf32, bf16 and fp16 (3xtf32 and fp32 have passes only). */
          const int fused = k_modes[mi] == FT_MATH_TF32 || k_modes[mi] == FT_MATH_BF16 || k_modes[mi] == FT_MATH_FP16;
          if (fused)
            fused_ok += run_kind(g, FT_VK_GEMM, FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep, k_modes[mi], d, tol, 16, what);
          pass_ok += run_kind(g, FT_VK_EPILOGUE, si == 0 ? FT_SPACE_FULL : FT_SPACE_PRUNED, sh->m, sh->n, sh->k, ep,
                              k_modes[mi], d, tol, 1000, what);
        }
        ft_pdata_free(d);
        ft_ep_free(ep);
      }
  printf("gated pairs: %d fused and %d pass variants correct\n", fused_ok, pass_ok);
  ASSERT_TRUE(pass_ok > 0 && fused_ok > 0);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
