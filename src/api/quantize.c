/* The fp8 quantizer (ft_quantizer_create, ft_quantize_e4m3): kernels_src/quantize.cu compiled
 * once per quantizer, then a launch per call (src/epilogue/e4m3.c is its host model). */
#include <stdint.h>
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

ft_ctx *ft__quantizer_ctx(const ft_quantizer *q) { return q ? q->ctx : NULL; }

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

/* Threads per row: a power of two up to 1024, enough for a chunk each; then, while the rows'
 * threads exceed what the SMs hold at once (about 1024 each at the row kernel's registers),
 * fewer threads holding more chunks each (at most 8, what the kernel keeps in registers), which
 * keeps more loads in flight per thread. Rows of more than 8192 chunks are read twice. */
static int row_group(int64_t rows, int64_t chunks, int sms) {
  int g = 1;
  while (g < 1024 && g < chunks) g *= 2;
  const int64_t resident = 1024 * (int64_t)(sms > 0 ? sms : 132);
  while (g > 1 && rows * g > resident && (chunks + g / 2 - 1) / (g / 2) <= 8) g /= 2;
  return g;
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
  const int esz = src_dtype == FT_DTYPE_F32 ? 4 : 2, vw = 16 / esz; /* elements per 16-byte chunk */
  if ((uintptr_t)src % (uintptr_t)esz)
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_quantize_e4m3: src %p is not aligned to its %d-byte elements", src,
                    esz);
  int dt = (int)src_dtype;
  long long r = rows, c = cols;
  unsigned long long n = (unsigned long long)rows * (unsigned long long)cols;
  /* 16-byte chunks where src is 16-byte aligned and dst to the chunk's codes; per row also cols
   * a multiple of the chunk (each row starts aligned). Else one element at a time. */
  const int aligned = (uintptr_t)src % 16 == 0 && (uintptr_t)dst % (uintptr_t)vw == 0;
  if (scaling == FT_SCALE_ROW) {
    int vec = aligned && cols % vw == 0;
    int group = row_group(rows, vec ? cols / vw : cols, q->sms);
    const unsigned threads = group > 256 ? (unsigned)group : 256, per_block = threads / (unsigned)group;
    const dim3 grid = {(unsigned)((rows + per_block - 1) / per_block), 1, 1}, block = {threads, 1, 1};
    void *args[] = {(void *)&src, &dt, &vec, &r, &c, &group, &dst, &scales};
    FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->mod.main, grid, block, args, 0, stream));
    return FT_OK;
  }
  int vec = aligned;
  const unsigned long long chunks = vec ? n / (unsigned long long)vw + (unsigned long long)vw : n;
  const unsigned long long want = (chunks + 255) / 256, most = 8ull * (unsigned long long)(q->sms > 0 ? q->sms : 132);
  const dim3 grid = {(unsigned)(want < most ? want : most), 1, 1}, block = {256, 1, 1}, one = {1, 1, 1};
  void *amax_args[] = {(void *)&src, &dt, &vec, &n, &scales};
  void *apply_args[] = {(void *)&src, &dt, &vec, &n, &scales, &dst};
  void *finish_args[] = {&scales};
  FT_CUDA_TRY(err, cudaMemsetAsync(scales, 0, sizeof(float), stream));
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->mod.reduce, grid, block, amax_args, 0, stream));
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->apply, grid, block, apply_args, 0, stream));
  FT_CUDA_TRY(err, cudaLaunchKernel((const void *)q->finish, one, one, finish_args, 0, stream));
  return FT_OK;
}
