/* Kernel text: a template from kernels_src/ + defines for the variant + the epilogue's CUDA
 * expression, concatenated into one self-contained NVRTC source, and its hash. GPU-free.
 *
 * Kernel ABI (all extern "C", parameter lists fixed so device code can launch them):
 *   struct FtEpArgs { const float *v[8]; float s[8]; };       (passed by value)
 *   ft_gemm(const float *X, const float *W, float *Y, float *WS, int M, int N, int K, FtEpArgs ep)
 *       split_k == 1: Y = E(X * W^T).  split_k > 1: WS[s][M][N] = partial sums (no E), then
 *   ft_splitk_reduce(const float *WS, float *Y, int M, int N, int S, FtEpArgs ep): Y = E(sum_s WS)
 *   ft_epilogue_pass(float *Y, int M, int N, FtEpArgs ep): Y = E(Y) in place
 *   ft_eager_step(const float *IN0, const float *IN1, const float *IN2, float *OUT, int M, int N,
 *                 FtEpArgs ep): OUT = step expression, one elementwise pass
 */
#ifndef FT_CODEGEN_H
#define FT_CODEGEN_H

#include "epilogue.h"
#include "space.h"

#define FT_EP_SLOTS 8

/* Host mirror of the device struct FtEpArgs (same layout). */
typedef struct ft_ep_args_dev {
  const float *v[FT_EP_SLOTS];
  float s[FT_EP_SLOTS];
} ft_ep_args_dev;

typedef struct ft_kernel_src {
  char *text;         /* malloc'd NVRTC source; ft_kernel_src_free() */
  char hash[17];      /* hash of text: the cache key and the staleness check */
  char kernel[32];    /* "ft_gemm", "ft_epilogue_pass" or "ft_eager_step" */
  char reduce[32];    /* "ft_splitk_reduce" or "" */
} ft_kernel_src;

/* v must be ft_variant_valid; ep NULL means the identity epilogue (a plain GEMM). Variant
 * parameters become FT_BM, FT_BN, FT_BK, FT_TM, FT_TN, FT_VEC, FT_STAGES, FT_SPLIT_K,
 * FT_SWIZZLE, FT_MINB (GEMM) or FT_BLOCK, FT_VEC, FT_EPT (epilogue pass). */
ft_status ft_codegen_variant(const ft_variant *v, const ft_epilogue *ep, ft_kernel_src *out,
                             ft_err *err);
ft_status ft_codegen_eager_step(const ft_ep_step *step, ft_kernel_src *out, ft_err *err);
void ft_kernel_src_free(ft_kernel_src *k); /* frees text; NULL-safe */

#endif
