/* The cuBLAS-based strategies timed beside the fused kernels:
 *   eager        cuBLAS GEMM (bias folded in, as nn.Linear's addmm does) + one kernel per op
 *   cublas_gemm  cuBLAS SGEMM alone, no epilogue: the floor cuBLAS sets
 *   cublaslt     cuBLASLt with its built-in epilogue where the expression maps onto one
 * plus the SGEMM that the "cublas+epilogue" strategy runs before its epilogue pass. */
#ifndef FT_BASELINE_H
#define FT_BASELINE_H

#include "verify.h"

typedef enum ft_baseline_kind {
  FT_BL_EAGER = 0,
  FT_BL_CUBLAS_GEMM = 1,
  FT_BL_CUBLASLT = 2,
  FT_BL_COUNT
} ft_baseline_kind;

ft_strategy ft_baseline_strategy(ft_baseline_kind k); /* EAGER, CUBLAS_GEMM, CUBLASLT */

typedef struct ft_baselines ft_baselines;

/* Prepares every baseline for the problem in d (compiling the eager step kernels through the
 * cubin cache in db, which may be NULL). */
ft_status ft_baselines_create(ft_gpu *g, ft_db *db, const ft_epilogue *ep, ft_pdata *d,
                              ft_baselines **out, ft_err *err);
void ft_baselines_free(ft_baselines *b);

/* Whether kind applies (cublaslt only when the expression maps onto a cuBLASLt epilogue). */
int ft_baseline_available(const ft_baselines *b, ft_baseline_kind kind);
/* Human description, e.g. "cuBLASLt RELU_BIAS" or "cuBLAS SGEMM + bias + 2 elementwise kernels". */
const char *ft_baseline_describe(const ft_baselines *b, ft_baseline_kind kind);
/* Enqueues one call writing d->dY. */
ft_status ft_baseline_enqueue(ft_baselines *b, ft_baseline_kind kind, cudaStream_t stream, ft_err *err);


#endif
