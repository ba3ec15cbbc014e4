/* ft_gated_interleave, the public helper that writes a gated pair's interleaved weight: on the
 * host, or with the CUDA runtime's copies where any pointer is the device's. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "api_internal.h"
#include "gated.h"

/* Whether the runtime calls p ordinary host memory (without a device, every pointer is). */
static int plain_host(const void *p) {
  struct cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError(); /* not sticky: no device, or a pointer it does not know */
    return 1;
  }
  return a.type == cudaMemoryTypeUnregistered;
}

static ft_status refuse(char *msg, size_t msg_size, ft_status s, const char *text) {
  if (msg && msg_size) snprintf(msg, msg_size, "ft_gated_interleave: %s", text);
  return s;
}

ft_status ft_gated_interleave(const void *w1, const void *w2, void *dst, int64_t n, int64_t k, size_t elem_size,
                              cudaStream_t stream, char *msg, size_t msg_size) {
  char why[160];
  if (!w1 || !w2 || !dst) return refuse(msg, msg_size, FT_ERR_INVALID_ARG, "w1, w2 and dst must not be NULL");
  if (elem_size != 1 && elem_size != 2 && elem_size != 4) {
    snprintf(why, sizeof why, "element size %zu: must be 1, 2 or 4 bytes", elem_size);
    return refuse(msg, msg_size, FT_ERR_INVALID_ARG, why);
  }
  if (n < FT_GATED_GROUP || n % FT_GATED_GROUP || k < 1 || n > FT_MAX_DIM || k > FT_MAX_DIM) {
    snprintf(why, sizeof why, "n %lld, k %lld: n must be a positive multiple of %d and both at most %lld", (long long)n,
             (long long)k, FT_GATED_GROUP, (long long)FT_MAX_DIM);
    return refuse(msg, msg_size, FT_ERR_INVALID_ARG, why);
  }
  const size_t row = (size_t)k * elem_size, group = FT_GATED_GROUP * row, half = (size_t)n * row;
  const char *d = dst;
  for (int i = 0; i < 2; i++) {
    const char *w = i ? w2 : w1;
    if (d < w + half && w < d + 2 * half)
      return refuse(msg, msg_size, FT_ERR_INVALID_ARG, i ? "dst overlaps w2" : "dst overlaps w1");
  }
  const size_t groups = (size_t)n / FT_GATED_GROUP;
  if (plain_host(w1) && plain_host(w2) && plain_host(dst)) {
    for (size_t j = 0; j < groups; j++) {
      memcpy((char *)dst + 2 * j * group, (const char *)w1 + j * group, group);
      memcpy((char *)dst + (2 * j + 1) * group, (const char *)w2 + j * group, group);
    }
    return FT_OK;
  }
  /* Each half as one 2-D copy: groups rows of `group` bytes, every other group of dst. */
  for (int i = 0; i < 2; i++) {
    const cudaError_t e = cudaMemcpy2DAsync((char *)dst + (size_t)i * group, 2 * group, i ? w2 : w1, group, group, groups,
                                            cudaMemcpyDefault, stream);
    if (e != cudaSuccess) {
      snprintf(why, sizeof why, "cudaMemcpy2DAsync: %s", cudaGetErrorString(e));
      return refuse(msg, msg_size, FT_ERR_CUDA, why);
    }
  }
  return FT_OK;
}
