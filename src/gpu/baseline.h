/* The cuBLAS-based strategies timed beside the fused kernels, in the problem's math mode (the
 * pdata's): every GEMM is cuBLAS's of that mode (fp32: SGEMM; tf32: FAST_TF32 compute; bf16 /
 * fp16: 16-bit tensors, fp32 accumulate), every tensor and vector of its element type.
 *   eager        cuBLAS GEMM (bias folded in through cuBLASLt's BIAS epilogue, as nn.Linear's
 *                addmm does) + one kernel per op, each rounding to the element type as PyTorch
 *                eager does
 *   cublas_gemm  cuBLAS GEMM alone, no epilogue: the floor cuBLAS sets (ft_cublas_gemm)
 *   cublaslt     cuBLASLt with its built-in epilogue where the expression maps onto one (fp8: with
 *                the scales as its scale pointers, per tensor or cuBLASLt's outer-vector rows and
 *                columns, where the installed cuBLASLt has an algorithm)
 * The "cublas+epilogue" strategy's GEMM is ft_cublas_gemm too (src/gpu/launch.c). */
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

/* Prepares every baseline for the problem in d, in d's mode (compiling the eager step kernels
 * through the cubin cache in db, which may be NULL). */
ft_status ft_baselines_create(ft_gpu *g, ft_db *db, const ft_epilogue *ep, ft_pdata *d,
                              ft_baselines **out, ft_err *err);
void ft_baselines_free(ft_baselines *b);

/* Whether kind applies (cublaslt only when the expression maps onto a cuBLASLt epilogue that
 * has an algorithm for the problem; eager unless its bias-folding GEMM has none). */
int ft_baseline_available(const ft_baselines *b, ft_baseline_kind kind);
/* Human description naming the mode outside fp32, e.g. "cuBLASLt RELU_BIAS", "cuBLASLt BF16
 * GEMM+BIAS + 2 elementwise kernel(s)", "cuBLAS TF32 GEMM alone (no epilogue)". */
const char *ft_baseline_describe(const ft_baselines *b, ft_baseline_kind kind);
/* Enqueues one call writing d->dY. */
ft_status ft_baseline_enqueue(ft_baselines *b, ft_baseline_kind kind, cudaStream_t stream, ft_err *err);
/* In 3xtf32 and fp8, raises *tol (ft_pdata_tolerance's) to what the eager-style chain reaches on this
 * problem (ft_tolerance_with_chain), or for a row sum, mean or logsumexp sets it from that
 * (ft_tolerance_rows_with_chain), running the chain once into dY on stream 0; a chain that is not
 * available or writes a non-finite element leaves *tol as it is. Other modes: nothing runs. */
ft_status ft_baseline_chain_tolerance(ft_baselines *b, double *tol, ft_err *err);


#endif
