/* The tolerance policy: what error on rel_err a correct result of each math mode may have.
 * GPU-free. */
#ifndef FT_TOLERANCE_H
#define FT_TOLERANCE_H

#include "fusedtune.h"

/* The fp32 tolerance on rel_err. */
#define FT_TOL_FP32 1e-5

/* The tolerance on rel_err in mode math, given cublas_rel_err, the error of cuBLAS's GEMM of
 * that mode against x W^T on the same problem (ignored in fp32): fp32 FT_TOL_FP32; 3xtf32
 * max(cublas_rel_err (SGEMM's), 2^-20), at most FT_TOL_FP32; otherwise
 * 2 * cublas_rel_err + ft_tolerance_floor(math). A result is correct when rel_err <= it and no
 * element is non-finite. GPU-free. */
double ft_tolerance_rule(ft_math math, double cublas_rel_err);
/* The floor of the rule: the unit roundoff of what the mode rounds, at least FT_TOL_FP32: the
 * output's element type in bf16 (2^-8) and fp16 (2^-11), the inputs in tf32 (2^-11; its output
 * is fp32). A fused kernel rounds E(acc) once to the element type, an error of at most one unit
 * roundoff of each element relative to itself, which cuBLAS's measured error (acc rounded once,
 * relative to ||x W^T||) need not bound when E changes the values' sizes; and cuBLAS's TF32 GEMM
 * may not use tf32 at all on tiny shapes. */
double ft_tolerance_floor(ft_math math);
/* 3xtf32's tolerance once the fp32 eager-style chain's error on the same problem is known
 * (cuBLASLt's SGEMM with the bias folded in where E adds one, as nn.Linear does, + one fp32 kernel
 * per further op; against E(x W^T)): the larger of tol and that error with 1 % for the rounding
 * order of E's fp32 operations, at most FT_TOL_FP32. ft_tolerance_rule holds 3xtf32 to SGEMM's
 * error on x W^T alone, which no SGEMM + fp32 epilogue meets where E grows the relative error
 * (otherwise every safe candidate of such an E is "wrong"; docs/BENCHMARKS.md, "Why the search
 * space is what it is"). fp8 likewise (the chain is cuBLASLt's FP8 GEMM into bf16, then one bf16
 * kernel per op, what a user of torch._scaled_mm runs; each op rounds to bf16, which the rule's
 * 2^-12 floor does not cover: a gated pair's chain of six ops measured 0.0047 against the rule's
 * 0.0036, 2026-12-06): the chain's error with 1 %, at most twice tol. Other modes, or a chain
 * error that is not finite and positive: tol. GPU-free. */
double ft_tolerance_with_chain(ft_math math, double tol, double chain_rel_err);
/* 3xtf32's tolerance for an E whose output is a row sum, mean or logsumexp (of E's values, pooled
 * or not): the fp32 chain's own error on that output, twice (the sampling of one random problem),
 * at least one unit roundoff (2^-23), at most FT_TOL_FP32; not the rule's
 * SGEMM error on x W^T. A row sum averages SGEMM's per-element errors, which are unbiased, but
 * adds up 3xtf32's, which the tensor core's truncating adds bias toward zero: KernelBench 55
 * (rowsum of 16384 pooled values, K = 32768) came out 19x farther from float64 than the chain with
 * a chunk-16 3xtf32 kernel held to the rule (docs/BENCHMARKS.md 2026-12-06 (f)). A row max or min
 * takes one value's error, as the rule bounds it (ft_tolerance_with_chain). Other modes, or a
 * chain error that is not finite: tol. GPU-free. */
double ft_tolerance_rows_with_chain(ft_math math, double tol, double chain_rel_err);

#endif
