/* One cuBLASLt GEMM y [m, n] = x [m, k] . W [n, k]^T with one of cuBLASLt's built-in epilogues, in
 * a math mode (fp32 and 3xtf32: fp32 compute; tf32: FAST_TF32; bf16 / fp16: 16-bit tensors and
 * bias, fp32 accumulate): what the eager-style baseline's addmm, the cuBLASLt baseline and the
 * epilogue pass after cuBLASLt's bias GEMM (src/launch.c) run. Needs the GPU. */
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
/* Enqueues y = epilogue(x W^T) on stream (ws: the ws_bytes it was built with); bias, when not NULL, replaces
 * the descriptor's (so one GEMM must not be enqueued from two threads at once). */
ft_status ft_lt_gemm_run(ft_lt_gemm *l, cublasLtHandle_t h, const void *x, const void *w, void *y, const void *bias,
                         void *ws, cudaStream_t stream, ft_err *err);
void ft_lt_gemm_free(ft_lt_gemm *l); /* safe on a zeroed struct */

#endif
