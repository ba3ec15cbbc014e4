/* The inputs made on the GPU (kernels_src/input_gen.cu, what ft_pdata_create uses for large
 * problems) are the host's (ft_fill_uniform, then the host's rounding to the element type), bit
 * for bit, in every element type: over [0, 1) as x, nn.Linear's range as W, a range of fp16
 * subnormals and a wide one, with a count that is no multiple of the kernel's block, and the
 * generator state advanced alike. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ft_test.h"
#include "verify.h"

static void check_range(const ft_loaded *gen, ft_dtype dt, float lo, float hi, uint64_t seed) {
  const size_t n = 1000003;
  uint64_t s_host = seed, s_dev = seed;
  float *h = malloc(n * sizeof *h);
  uint16_t *h16 = malloc(n * sizeof *h16);
  float *h32 = malloc(n * sizeof *h32);
  double *href = malloc(n * sizeof *href);
  void *elem = NULL;
  double *ref = NULL;
  ft_err e;
  ASSERT_TRUE(h && h16 && h32 && href);
  ASSERT_TRUE(cudaMalloc(&elem, n * sizeof(float)) == cudaSuccess && cudaMalloc((void **)&ref, n * sizeof *ref) == cudaSuccess);
  ft_fill_uniform(h, n, lo, hi, &s_host);
  ASSERT_OK(ft_input_gen_fill(gen, dt, n, lo, hi, &s_dev, elem, ref, &e));
  ASSERT_TRUE(cudaDeviceSynchronize() == cudaSuccess);
  ASSERT_TRUE(cudaMemcpy(dt == FT_DTYPE_F32 ? (void *)h32 : (void *)h16, elem,
                         n * (dt == FT_DTYPE_F32 ? sizeof(float) : sizeof(uint16_t)), cudaMemcpyDeviceToHost) == cudaSuccess);
  ASSERT_TRUE(cudaMemcpy(href, ref, n * sizeof *href, cudaMemcpyDeviceToHost) == cudaSuccess);
  size_t bad = 0, subnormal = 0;
  for (size_t i = 0; i < n; i++) {
    double want;
    if (dt == FT_DTYPE_F32) {
      bad += memcmp(&h32[i], &h[i], sizeof h[i]) != 0;
      want = h[i];
    } else {
      const uint16_t w = dt == FT_DTYPE_BF16 ? ft_f32_to_bf16(h[i]) : ft_f32_to_f16(h[i]);
      bad += h16[i] != w;
      want = dt == FT_DTYPE_BF16 ? ft_bf16_to_f32(w) : ft_f16_to_f32(w);
      subnormal += dt == FT_DTYPE_F16 && (w & 0x7c00u) == 0 && (w & 0x3ffu) != 0;
    }
    bad += memcmp(&href[i], &want, sizeof want) != 0;
  }
  printf("dtype %d [%g, %g): %zu of %zu differ (%zu fp16 subnormals)\n", (int)dt, lo, hi, bad, n, subnormal);
  ASSERT_TRUE(bad == 0);
  ASSERT_TRUE(s_host == s_dev);
  if (dt == FT_DTYPE_F16 && hi < 1e-4f) ASSERT_TRUE(subnormal > n / 2); /* the subnormal path ran */
  cudaFree(elem);
  cudaFree(ref);
  free(h);
  free(h16);
  free(h32);
  free(href);
}

int main(void) {
  ft_gpu *g = NULL;
  FT_TEST_OPEN_GPU(g);
  ft_err e;
  ft_loaded gen;
  ASSERT_OK(ft_input_gen_open(g, &gen, &e));
  static const float ranges[][2] = {{0.0f, 1.0f}, {-0.0078125f, 0.0078125f}, {-3e-5f, 3e-5f}, {-3.0f, 5.0f}};
  for (int dt = 0; dt < 3; dt++)
    for (int r = 0; r < 4; r++) check_range(&gen, (ft_dtype)dt, ranges[r][0], ranges[r][1], 0x5eed5eedULL + 77u * (uint64_t)r);
  ft_loaded_free(&gen);
  ft_gpu_close(g);
  return FT_TEST_DONE();
}
