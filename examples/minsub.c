/* examples/minsub: the C API as a program uses it. Opens the database, looks up minsub at
 * 128x16384x16384 on this GPU, creates a plan (cubin from the database), launches it on random
 * inputs, checks it against cuBLAS SGEMM + the epilogue on the host, and times it against
 * cuBLAS GEMM alone (measured now) and the eager-style baseline (measured when it was tuned).
 *
 *   ./build/examples/minsub [DB]      (tune first: fusedtune tune --shape 128x16384x16384 --epilogue minsub) */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fusedtune.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "example_common.h"

#define CHECK_CUDA(x)                                                             \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) {                                                      \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                    \
      goto out;                                                                   \
    }                                                                             \
  } while (0)

static float urand(unsigned long long *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*s >> 40) * (1.0 / 16777216.0));
}

/* One timed call: the plan (fused = 1) or cuBLAS's GEMM alone. */
typedef struct timed_call {
  ft_plan *plan;
  const ft_args *a;
  cublasHandle_t h;
  int m, n, k, fused;
} timed_call;

static void run_call(void *user) {
  const timed_call *c = user;
  if (c->fused) {
    ft_plan_launch(c->plan, c->a, 0);
  } else {
    const float one = 1.0f, zero = 0.0f;
    cublasSgemm(c->h, CUBLAS_OP_T, CUBLAS_OP_N, c->n, c->m, c->k, &one, c->a->w, c->k, c->a->x, c->k, &zero, c->a->y, c->n);
  }
}

static float time_it(ft_plan *plan, const ft_args *a, cublasHandle_t h, int m, int n, int k, int fused) {
  timed_call c = {plan, a, h, m, n, k, fused};
  return example_median_ms(run_call, &c);
}

int main(int argc, char **argv) {
  const int m = 128, n = 16384, k = 16384;
  const float c = 2.0f;
  int rc = 1;
  ft_ctx *ctx = NULL;
  ft_plan *plan = NULL;
  cublasHandle_t h = NULL;
  float *hx = malloc((size_t)m * k * 4), *hw = malloc((size_t)n * k * 4), *hb = malloc((size_t)n * 4);
  float *hy = malloc((size_t)m * n * 4), *href = malloc((size_t)m * n * 4);
  float *dx = NULL, *dw = NULL, *db = NULL, *dy = NULL;
  if (!hx || !hw || !hb || !hy || !href) {
    fprintf(stderr, "out of host memory\n");
    goto out;
  }
  ft_problem p = {m, n, k, "minsub", FT_MATH_FP32};
  ft_config cfg;
  if ((rc = example_plan(argc > 1 ? argv[1] : NULL, &p, &ctx, &cfg, &plan)) != 0) goto out;
  rc = 1;
  unsigned long long seed = 42;
  const float bound = 1.0f / sqrtf((float)k);
  for (size_t i = 0; i < (size_t)m * k; i++) hx[i] = urand(&seed);
  for (size_t i = 0; i < (size_t)n * k; i++) hw[i] = (2 * urand(&seed) - 1) * bound;
  for (int i = 0; i < n; i++) hb[i] = (2 * urand(&seed) - 1) * bound;
  CHECK_CUDA(cudaMalloc((void **)&dx, (size_t)m * k * 4));
  CHECK_CUDA(cudaMalloc((void **)&dw, (size_t)n * k * 4));
  CHECK_CUDA(cudaMalloc((void **)&db, (size_t)n * 4));
  CHECK_CUDA(cudaMalloc((void **)&dy, (size_t)m * n * 4));
  CHECK_CUDA(cudaMemcpy(dx, hx, (size_t)m * k * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dw, hw, (size_t)n * k * 4, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, hb, (size_t)n * 4, cudaMemcpyHostToDevice));

  /* Reference: cuBLAS SGEMM (fp32, no TF32), then the epilogue on the host. */
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cuBLAS initialization failed\n");
    goto out;
  }
  ft_vec_arg vecs[1] = {{"bias", db}};
  ft_scalar_arg scalars[1] = {{"c", c}};
  ft_args a = {dx, dw, dy, vecs, 1, scalars, 1, FT_DTYPE_F32};
  time_it(plan, &a, h, m, n, k, 0); /* leaves cuBLAS's x W^T in dy */
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(href, dy, (size_t)m * n * 4, cudaMemcpyDeviceToHost));
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float v = href[(size_t)i * n + j] + hb[j];
      href[(size_t)i * n + j] = (v < c ? v : c) - c;
    }
  CHECK_CUDA(cudaMemset(dy, 0xFF, (size_t)m * n * 4)); /* NaN: an unwritten element fails */
  if (ft_plan_launch(plan, &a, 0) != FT_OK) {
    fprintf(stderr, "ft_plan_launch: %s\n", ft_errmsg(ctx));
    goto out;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(hy, dy, (size_t)m * n * 4, cudaMemcpyDeviceToHost));
  double d2 = 0, r2 = 0;
  for (size_t i = 0; i < (size_t)m * n; i++) {
    double d = (double)hy[i] - href[i];
    d2 += isfinite(d) ? d * d : INFINITY;
    r2 += (double)href[i] * href[i];
  }
  double rel = sqrt(d2 / r2);
  float t_fused = time_it(plan, &a, h, m, n, k, 1), t_gemm = time_it(plan, &a, h, m, n, k, 0);
  printf("check vs cuBLAS + host epilogue: rel diff %.2e (%s)\n", rel, rel <= 1e-5 ? "ok" : "MISMATCH");
  printf("fused plan %.4f ms, cuBLAS GEMM alone %.4f ms (%.3fx)", t_fused, t_gemm, t_gemm / t_fused);
  if (cfg.eager_ms > 0) printf(", eager-style baseline at tune time %.4f ms (speedup %.3fx)", cfg.eager_ms, cfg.eager_ms / t_fused);
  printf("\n");
  rc = rel <= 1e-5 ? 0 : 1;
out:
  if (h) cublasDestroy(h);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(db);
  cudaFree(dy);
  ft_plan_destroy(plan);
  ft_close(ctx);
  free(hx);
  free(hw);
  free(hb);
  free(hy);
  free(href);
  return rc;
}
