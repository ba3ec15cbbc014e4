/* Kernel text: a template from kernels_src/ + defines for the variant + the epilogue's CUDA
 * expression, concatenated into one self-contained NVRTC source, and its hash. GPU-free.
 *
 * Kernel ABI (all extern "C", parameter lists fixed so device code can launch them):
 *   struct FtEpArgs { const float *v[8]; float s[8]; };       (passed by value)
 *   ft_gemm(const float *X, const float *W, float *Y, float *WS, int M, int N, int K, FtEpArgs ep)
 *       split_k == 1: Y = E(X * W^T).  split_k > 1: WS[s][M][N] = partial sums (no E), then
 *   ft_splitk_reduce(const float *WS, float *Y, int M, int N, int S, FtEpArgs ep): Y = E(sum_s WS)
 *   ft_streamk_fixup(const float *WS, float *Y, int M, int N, int K, FtEpArgs ep): stream-K
 *       (streamk > 0): adds the partial tiles blocks left in WS and applies E
 *   ft_epilogue_pass(float *Y, int M, int N, FtEpArgs ep): Y = E(Y) in place
 *   ft_eager_step(const float *IN0, const float *IN1, const float *IN2, float *OUT, int M, int N,
 *                 FtEpArgs ep): OUT = step expression, one elementwise pass
 *   ft_chain_<j>: step j of an eager chain (ft_codegen_chain), ft_eager_step's or ft_reduce_pass's list
 */
#ifndef FT_CODEGEN_H
#define FT_CODEGEN_H

#include "epilogue.h"
#include "space.h"

#include "kernel_abi.h"
#include "strbuf.h"

typedef struct ft_kernel_src {
  char *text;         /* malloc'd NVRTC source; ft_kernel_src_free() */
  char hash[17];      /* hash of what reaches the compiler (comments and layout ignored, the
                       * family's revision and the compile options included): the cache key
                       * and the staleness check */
  char kernel[32];    /* "ft_gemm", "ft_epilogue_pass" or "ft_eager_step"; "" for the epilogue
                       * pass with the identity epilogue: none is launched (cuBLAS alone) */
  char reduce[32];    /* "ft_splitk_reduce", "ft_streamk_fixup" or "" */
  char arch_suffix[8]; /* appended to the device's "sm_XY" as the compile target ("a") */
} ft_kernel_src;

/* v must be ft_variant_valid; ep NULL means the identity epilogue (a plain GEMM). The variant's
 * family writes its parameters as #defines (src/family_*.c). */
ft_status ft_codegen_variant(const ft_variant *v, const ft_epilogue *ep, ft_kernel_src *out,
                             ft_err *err);
/* The eager-style step kernel of step on tensors of math mode math's element type, a program of its own. */
ft_status ft_codegen_eager_step(const ft_ep_step *step, ft_math math, ft_kernel_src *out, ft_err *err);
/* Every step of plan (ep's eager plan; nsteps >= 1) as one program: step j's kernel is entry point
 * "ft_chain_<j>" (ft_chain_kernel_name, src/family/chain.h), the same text as the step's own program
 * (ft_codegen_eager_step, ft_codegen_eager_reduce with vec) in a namespace of its own; in fp8 the
 * slots ep reads as fp32 (the scales) read so; rblock: the row reductions' threads a block
 * (ft_chain_reduce_block). out->kernel is step 0's. */
ft_status ft_codegen_chain(const ft_ep_eager *plan, ft_math math, int vec, int rblock, const ft_epilogue *ep,
                           ft_kernel_src *out, ft_err *err);
/* The eager chain's reduction step (step->reduce a row reduction or groupnorm, kernels_src/reduce_pass.cu
 * reading its input buffer whole: ft_reduce_pass(src, N, y, NULL, M, N, 0, N, ep)),
 * ft_chain_reduce_block(step->reduce, 0) threads a block (a row's; batchnorm's: 32 columns'), vec
 * elements per access (N must be a multiple). FT_ERR_UNSUPPORTED for the reductions no kernel
 * serves. */
ft_status ft_codegen_eager_reduce(const ft_ep_step *step, ft_math math, int vec, ft_kernel_src *out, ft_err *err);
void ft_kernel_src_free(ft_kernel_src *k); /* frees text; NULL-safe */

/* Appends src without comments, whitespace runs as one blank (a newline where the run held
 * one), continued lines joined: what the hash covers. */
void ft_code_digest(const char *src, ft_strbuf *out);

#endif
