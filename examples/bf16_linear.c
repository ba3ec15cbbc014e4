/* examples/bf16_linear: a bf16 nn.Linear + relu(x + bias) through the C API, as an inference
 * engine would run it. Looks up 1024x8192x8192 biasrelu in bf16 on this GPU, creates a plan,
 * launches it on bf16 tensors (args.dtype = FT_DTYPE_BF16), checks it against cuBLAS's BF16
 * GEMM + the epilogue on the host, and times it against that GEMM alone.
 *
 *   ./build/examples/bf16_linear [DB]
 *   (tune first: fusedtune tune --shape 1024x8192x8192 --epilogue biasrelu --math bf16) */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <fusedtune.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_common.h"

#define CHECK_CUDA(x)                                          \
  do {                                                         \
    cudaError_t e_ = (x);                                      \
    if (e_ != cudaSuccess) {                                   \
      fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      goto out;                                                \
    }                                                          \
  } while (0)

/* float -> bf16, round to nearest even (finite inputs only here). */
static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h) {
  const uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static float urand(unsigned long long *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*s >> 40) * (1.0 / 16777216.0));
}

/* y = x W^T with cuBLAS in bf16 (fp32 accumulate). */
static cublasStatus_t cublas_bf16(cublasHandle_t h, const void *x, const void *w, void *y, int m, int n, int k) {
  const float one = 1.0f, zero = 0.0f;
  return cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, k, &one, w, CUDA_R_16BF, k, x, CUDA_R_16BF, k, &zero, y,
                      CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
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
    cublas_bf16(c->h, c->a->x, c->a->w, c->a->y, c->m, c->n, c->k);
  }
}

static float time_it(ft_plan *plan, const ft_args *a, cublasHandle_t h, int m, int n, int k, int fused) {
  timed_call c = {plan, a, h, m, n, k, fused};
  return example_median_ms(run_call, &c);
}

int main(int argc, char **argv) {
  const int m = 1024, n = 8192, k = 8192;
  int rc = 1;
  ft_ctx *ctx = NULL;
  ft_plan *plan = NULL;
  cublasHandle_t h = NULL;
  uint16_t *hx = malloc((size_t)m * k * 2), *hw = malloc((size_t)n * k * 2), *hb = malloc((size_t)n * 2);
  uint16_t *hy = malloc((size_t)m * n * 2), *hg = malloc((size_t)m * n * 2);
  void *dx = NULL, *dw = NULL, *db = NULL, *dy = NULL;
  if (!hx || !hw || !hb || !hy || !hg) {
    fprintf(stderr, "out of host memory\n");
    goto out;
  }
  ft_problem p = {m, n, k, "biasrelu", FT_MATH_BF16};
  ft_config cfg;
  if ((rc = example_plan(argc > 1 ? argv[1] : NULL, &p, &ctx, &cfg, &plan)) != 0) goto out;
  rc = 1;
  unsigned long long seed = 7;
  const float bound = 1.0f / sqrtf((float)k);
  for (size_t i = 0; i < (size_t)m * k; i++) hx[i] = to_bf16(urand(&seed));
  for (size_t i = 0; i < (size_t)n * k; i++) hw[i] = to_bf16((2 * urand(&seed) - 1) * bound);
  for (int i = 0; i < n; i++) hb[i] = to_bf16((2 * urand(&seed) - 1) * bound);
  CHECK_CUDA(cudaMalloc(&dx, (size_t)m * k * 2));
  CHECK_CUDA(cudaMalloc(&dw, (size_t)n * k * 2));
  CHECK_CUDA(cudaMalloc(&db, (size_t)n * 2));
  CHECK_CUDA(cudaMalloc(&dy, (size_t)m * n * 2));
  CHECK_CUDA(cudaMemcpy(dx, hx, (size_t)m * k * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(dw, hw, (size_t)n * k * 2, cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(db, hb, (size_t)n * 2, cudaMemcpyHostToDevice));
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasCreate failed\n");
    goto out;
  }

  /* Every tensor, the bias too, holds bf16: the plan checks that args.dtype says so. */
  ft_vec_arg vecs[1] = {{"bias", db}};
  ft_args a = {dx, dw, dy, vecs, 1, NULL, 0, FT_DTYPE_BF16};
  /* Reference: cuBLAS's BF16 GEMM, then relu(x + bias) on the host in fp32. */
  if (cublas_bf16(h, dx, dw, dy, m, n, k) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "cublasGemmEx failed\n");
    goto out;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(hg, dy, (size_t)m * n * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemset(dy, 0xFF, (size_t)m * n * 2)); /* NaN: an unwritten element fails */
  if (ft_plan_launch(plan, &a, 0) != FT_OK) {
    fprintf(stderr, "ft_plan_launch: %s\n", ft_errmsg(ctx));
    goto out;
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  CHECK_CUDA(cudaMemcpy(hy, dy, (size_t)m * n * 2, cudaMemcpyDeviceToHost));
  double d2 = 0, r2 = 0;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      const float v = from_bf16(hg[(size_t)i * n + j]) + from_bf16(hb[j]);
      const double ref = v > 0 ? v : 0, d = (double)from_bf16(hy[(size_t)i * n + j]) - ref;
      d2 += isfinite(d) ? d * d : INFINITY;
      r2 += ref * ref;
    }
  const double rel = sqrt(d2 / r2);
  const float t_plan = time_it(plan, &a, h, m, n, k, 1), t_gemm = time_it(plan, &a, h, m, n, k, 0);
  printf("rel L2 vs cuBLAS BF16 + epilogue: %.3g (both round to bf16: ~1e-3 expected)\n", rel);
  printf("plan %.4f ms, cuBLAS BF16 GEMM alone (no epilogue) %.4f ms: %.3fx\n", t_plan, t_gemm, t_gemm / t_plan);
  rc = rel < 1e-2 ? 0 : 1;
out:
  if (h) cublasDestroy(h);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(db);
  cudaFree(dy);
  ft_plan_destroy(plan);
  ft_close(ctx);
  free(hx), free(hw), free(hb), free(hy), free(hg);
  return rc;
}
