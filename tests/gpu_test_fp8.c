/* GPU: the fp8 mode. The quantizer's kernels against its host model (src/e4m3.c), byte for byte
 * and scale for scale, per row and per tensor, on ragged shapes, bf16 and fp32 sources; its
 * argument checks. */
#include <unistd.h>

#include "e4m3.h"
#include "ft_test.h"
#include "numbers.h"

static void test_quantizer(ft_ctx *ctx) {
  ft_quantizer *q = NULL;
  ft_status st = ft_quantizer_create(ctx, &q);
  if (st != FT_OK) fprintf(stderr, "ft_quantizer_create: %s\n", ft_errmsg(ctx));
  ASSERT_OK(st);
  if (!q) return;
  static const int64_t shapes[][2] = {{1, 16}, {37, 129}, {300, 4096}, {2, 100003}, {1024, 1000}};
  uint64_t seed = 5;
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++)
    for (int dti = 0; dti < 2; dti++)
      for (int per_row = 0; per_row < 2; per_row++) {
        const int64_t r = shapes[si][0], c = shapes[si][1];
        const size_t n = (size_t)(r * c);
        const ft_dtype dt = dti ? FT_DTYPE_F32 : FT_DTYPE_BF16;
        const size_t esz = dti ? 4 : 2;
        float *f = malloc(n * sizeof *f);
        void *h = malloc(n * esz);
        uint8_t *want = malloc(n), *got = malloc(n);
        float *ws = malloc((size_t)r * sizeof *ws), *gs = malloc((size_t)r * sizeof *gs);
        ft_fill_uniform(f, n, -3.0f, 3.0f, &seed);
        for (size_t i = 0; i < n; i++) {
          if (dti) ((float *)h)[i] = f[i] * (float)(1 + i % 7);
          else ((uint16_t *)h)[i] = ft_f32_to_bf16(f[i]);
        }
        ft_e4m3_quantize_model(h, dt, r, c, per_row, want, ws);
        void *dsrc = NULL, *ddst = NULL;
        float *dsc = NULL;
        ASSERT_TRUE(cudaMalloc(&dsrc, n * esz) == cudaSuccess && cudaMalloc(&ddst, n) == cudaSuccess &&
                    cudaMalloc((void **)&dsc, (size_t)r * sizeof *dsc) == cudaSuccess);
        cudaMemcpy(dsrc, h, n * esz, cudaMemcpyHostToDevice);
        cudaMemset(ddst, 0xff, n); /* poisoned: NaN codes */
        ASSERT_OK(ft_quantize_e4m3(q, dsrc, dt, r, c, per_row ? FT_SCALE_ROW : FT_SCALE_TENSOR, ddst, dsc, 0));
        ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
        cudaMemcpy(got, ddst, n, cudaMemcpyDeviceToHost);
        cudaMemcpy(gs, dsc, (size_t)(per_row ? r : 1) * sizeof *gs, cudaMemcpyDeviceToHost);
        size_t diff = 0, sdiff = 0;
        for (size_t i = 0; i < n; i++) diff += got[i] != want[i];
        for (int64_t i = 0; i < (per_row ? r : 1); i++) sdiff += memcmp(&gs[i], &ws[i], sizeof *gs) != 0;
        if (diff || sdiff)
          FT_FAIL_AT_("quantizer %lldx%lld %s %s: %zu codes and %zu scales differ from the model", (long long)r,
                      (long long)c, ft_dtype_name(dt), per_row ? "per row" : "per tensor", diff, sdiff);
        cudaFree(dsrc), cudaFree(ddst), cudaFree(dsc);
        free(f), free(h), free(want), free(got), free(ws), free(gs);
      }
  /* Refusals name what is wrong, launch nothing. */
  float *dsc = NULL;
  cudaMalloc((void **)&dsc, 64);
  ASSERT_EQ_INT(ft_quantize_e4m3(q, dsc, FT_DTYPE_E4M3, 1, 16, FT_SCALE_ROW, dsc, dsc, 0), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "src is e4m3: bf16, fp16 or fp32 only");
  ASSERT_EQ_INT(ft_quantize_e4m3(q, dsc, FT_DTYPE_BF16, 0, 16, FT_SCALE_ROW, dsc, dsc, 0), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_quantize_e4m3(q, NULL, FT_DTYPE_BF16, 1, 16, FT_SCALE_ROW, dsc, dsc, 0), FT_ERR_INVALID_ARG);
  cudaFree(dsc);
  ft_quantizer_destroy(q);
}

int main(void) {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) RETURN_SKIP("no CUDA device");
  char path[512];
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/gpu_fp8_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  unlink(path);
  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  test_quantizer(ctx);
  ft_close(ctx);
  unlink(path);
  if (!ft_test_failures) printf("gpu_test_fp8: ok\n");
  return ft_test_failures ? 1 : 0;
}
