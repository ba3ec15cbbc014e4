/* One cuBLASLt GEMM y [m, n] = x [m, k] . W [n, k]^T with one of cuBLASLt's built-in epilogues, in
 * a math mode (fp32 and 3xtf32: fp32 compute; tf32: FAST_TF32; bf16 / fp16: 16-bit tensors and
 * bias, fp32 accumulate): what the eager-style baseline's addmm, the cuBLASLt baseline and the
 * epilogue pass after cuBLASLt's bias GEMM (src/gpu/launch.c) run. Needs the GPU. */
#ifndef FT_LT_GEMM_H
#define FT_LT_GEMM_H

#include <cublasLt.h>

#include "common.h"


typedef struct ft_lt_gemm {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
  cudaDataType_t type;
  const void *bias; /* the bias pointer the descriptor holds */
  float *ones;      /* fp8: max(m, n) device 1.0f, the scale pointers until ft_lt_gemm_scales (owned) */
  size_t ws_bytes;  /* the workspace its algorithm may use */
  int ready;
} ft_lt_gemm;

/* Builds the GEMM and picks cuBLASLt's first algorithm for it with at most ws_bytes of workspace,
 * for operands aligned to min_align bytes (0: cuBLASLt's assumption, 256) (bias: the epilogue's column vector of n elements of the mode's type, or NULL; ft_lt_gemm_run may
 * change it). FT_ERR_UNSUPPORTED
 * when cuBLASLt has no algorithm (types, epilogue, leading dimensions); other failures
 * FT_ERR_CUBLAS. On failure *l is freed. */
ft_status ft_lt_gemm_init(ft_lt_gemm *l, cublasLtHandle_t h, ft_math math, int m, int n, int k, cublasLtEpilogue_t epi,
                          const void *bias, size_t ws_bytes, uint32_t min_align, ft_err *err);
/* Enqueues y = epilogue(x W^T + c) on stream (ws: the ws_bytes it was built with; c NULL: no C
 * term, else an [m, n] matrix laid out as y, addmm's residual); bias, when not NULL, replaces the
 * descriptor's (so one GEMM must not be enqueued from two threads at once). */
ft_status ft_lt_gemm_run(ft_lt_gemm *l, cublasLtHandle_t h, const void *x, const void *w, void *y, const void *bias,
                         const void *c, void *ws, cudaStream_t stream, ft_err *err);
void ft_lt_gemm_free(ft_lt_gemm *l); /* safe on a zeroed struct */

/* fp8 (e4m3 x and W, bf16 y and bias, fp32 accumulate): as ft_lt_gemm_init with cuBLASLt's
 * scale pointers: per tensor (outer 0: one float each) or cuBLASLt's outer-vector mode (outer 1:
 * W's n and x's m floats, each output scaled by sx[row] sw[col]). Both start at 1.0 (the GEMM
 * alone); FT_ERR_UNSUPPORTED where the installed cuBLASLt has no such algorithm. */
ft_status ft_lt_gemm_init_fp8(ft_lt_gemm *l, cublasLtHandle_t h, int m, int n, int k, cublasLtEpilogue_t epi,
                              const void *bias, int outer, size_t ws_bytes, ft_err *err);
/* fp8: the scale pointers (device) from now on: sx of x (1 or m floats), sw of W (1 or n). */
ft_status ft_lt_gemm_scales(ft_lt_gemm *l, const float *sx, const float *sw, ft_err *err);

#endif
