/* The fp8 quantizer (ft_quantizer_create, ft_quantize_e4m3): kernels_src/quantize.cu compiled
 * once per quantizer, then a launch per call (src/e4m3.c is its host model). */
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "compile.h"
#include "embedded.h"

struct ft_quantizer {
  ft_ctx *ctx;
  ft_loaded mod; /* main: ft_quant_rows, reduce: ft_quant_amax */
  cudaKernel_t apply, finish;
  int sms;
};

void ft_quantizer_destroy(ft_quantizer *q) {
  if (!q) return;
  ft_loaded_free(&q->mod);
  free(q);
}

ft_status ft_quantizer_create(ft_ctx *ctx, ft_quantizer **out) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(ctx);
  if (!out) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_quantizer_create: out is NULL");
  *out = NULL;
  ft_gpu *g = NULL;
  FT_TRY(ft__ctx_gpu(ctx, &g));
  const ft_device_info *info = ft_gpu_info(g);
  if (info->cc_major * 10 + info->cc_minor < 89)
    return ft__fail(err, FT_ERR_UNSUPPORTED, "fp8 quantizer: %s (sm_%d%d) has no e4m3 conversion (sm_89 or newer)",
                    info->name, info->cc_major, info->cc_minor);
  size_t len = 0;
  const char *src = ft__embedded("kernels_src/quantize.cu", &len);
  if (!src) return ft__fail(err, FT_ERR_INTERNAL, "kernels_src/quantize.cu is not embedded");
  ft_quantizer *q = calloc(1, sizeof *q);
  if (!q) return ft__fail(err, FT_ERR_NOMEM, "out of memory");
  q->ctx = ctx;
  q->sms = ft_gpu_limits(g)->sm_count;
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  ft_status st = ft_compile_one(src, ft_gpu_arch(g), &cubin, &size, &log, err);
  if (st == FT_OK) st = ft_loaded_init(&q->mod, cubin, size, "ft_quant_rows", "ft_quant_amax", err);
  free(cubin);
  free(log);
  if (st == FT_OK) {
    cudaError_t e = cudaLibraryGetKernel(&q->apply, q->mod.lib, "ft_quant_apply");
    if (e == cudaSuccess) e = cudaLibraryGetKernel(&q->finish, q->mod.lib, "ft_quant_finish");
    if (e != cudaSuccess) st = ft_cuda_fail(err, e, "cudaLibraryGetKernel (quantizer)");
  }
  if (st != FT_OK) {
    ft_quantizer_destroy(q);
    return st;
  }
  *out = q;
  return FT_OK;
}

ft_status ft_quantize_e4m3(ft_quantizer *q, const void *src, ft_dtype src_dtype, int64_t rows, int64_t cols,
                           ft_scaling scaling, void *dst, float *scales, cudaStream_t stream) {
  if (!q) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(q->ctx);
  if (!src || !dst || !scales) return ft__fail(err, FT_ERR_INVALID_ARG, "ft_quantize_e4m3: src, dst and scales must be set");
  if (rows < 1 || cols < 1 || rows > ((int64_t)1 << 31) - 1)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_quantize_e4m3: %lldx%lld: rows in 1..2^31-1, cols >= 1",
                    (long long)rows, (long long)cols);
  if (src_dtype != FT_DTYPE_BF16 && src_dtype != FT_DTYPE_F16 && src_dtype != FT_DTYPE_F32)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_quantize_e4m3: src is %s: bf16, fp16 or fp32 only",
                    ft_dtype_name(src_dtype));
  if (scaling != FT_SCALE_TENSOR && scaling != FT_SCALE_ROW)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_quantize_e4m3: scaling %d: FT_SCALE_TENSOR or FT_SCALE_ROW", (int)scaling);
  int dt = (int)src_dtype;
  long long r = rows, c = cols;
  unsigned long long n = (unsigned long long)rows * (unsigned long long)cols;
  const dim3 block = {256, 1, 1};
  if (scaling == FT_SCALE_ROW) {
    void *args[] = {(void *)&src, &dt, &r, &c, &dst, &scales};
    const dim3 grid = {(unsigned)(rows < 65535 ? rows : 65535), 1, 1};
    FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->mod.main, grid, block, args, 0, stream));
    return FT_OK;
  }
  const unsigned long long want = (n + 255) / 256, most = 8ull * (unsigned long long)(q->sms > 0 ? q->sms : 132);
  const dim3 grid = {(unsigned)(want < most ? want : most), 1, 1}, one = {1, 1, 1};
  void *amax_args[] = {(void *)&src, &dt, &n, &scales};
  void *apply_args[] = {(void *)&src, &dt, &n, &scales, &dst};
  void *finish_args[] = {&scales};
  FT_CUDA_TRY(err, cudaMemsetAsync(scales, 0, sizeof(float), stream));
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->mod.reduce, grid, block, amax_args, 0, stream));
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->apply, grid, block, apply_args, 0, stream));
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->finish, one, one, finish_args, 0, stream));
  return FT_OK;
}
