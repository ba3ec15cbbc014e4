/* The tolerance policy (tolerance.h): what error a result of each math mode may have. GPU-free. */
#include "tolerance.h"

#include <math.h>

double ft_tolerance_floor(ft_math math) {
  double u = FT_TOL_FP32;
  if (math == FT_MATH_BF16) u = 0x1.0p-8;
  else if (math == FT_MATH_FP16) u = 0x1.0p-11;
  /* tf32 rounds the fp32 inputs to 11 significant bits: cuBLAS need not (it may run FFMA
   * on small problems; docs/BENCHMARKS.md, "Why the search space is what it is"). */
  else if (math == FT_MATH_TF32) u = 0x1.0p-11;
  /* fp8 (bf16 y): cuBLASLt's fp8 error is already the bf16 rounding of y; the floor only covers
   * another summation order (docs/BENCHMARKS.md, "Why the search space is what it is"). */
  else if (math == FT_MATH_FP8) u = 0x1.0p-12;
  return u > FT_TOL_FP32 ? u : FT_TOL_FP32;
}

double ft_tolerance_rule(ft_math math, double cublas_rel_err) {
  if (math == FT_MATH_FP32) return FT_TOL_FP32;
  const double e = isfinite(cublas_rel_err) && cublas_rel_err > 0 ? cublas_rel_err : 0.0;
  /* 3xtf32 promises SGEMM's accuracy: at most cuBLAS SGEMM's own error on the same inputs (its
   * cuBLAS GEMM is SGEMM), or 2^-20 where SGEMM is better than that (short K), never more than
   * fp32's bound. The error grows with the k tiles per partial sum (the tensor core's adds
   * truncate), so this is what rejects too long a chunk. The fp32 chain's
   * error may raise it (ft_tolerance_with_chain). */
  if (math == FT_MATH_3XTF32) {
    const double t = e > 0x1.0p-20 ? e : 0x1.0p-20;
    return t < FT_TOL_FP32 ? t : FT_TOL_FP32;
  }
  return 2.0 * e + ft_tolerance_floor(math);
}

double ft_tolerance_with_chain(ft_math math, double tol, double chain_rel_err) {
  if ((math != FT_MATH_3XTF32 && math != FT_MATH_FP8) || !isfinite(chain_rel_err) || chain_rel_err <= 0) return tol;
  double t = 1.01 * chain_rel_err;
  const double cap = math == FT_MATH_FP8 ? 2.0 * tol : FT_TOL_FP32;
  if (t > cap) t = cap;
  return t > tol ? t : tol;
}

double ft_tolerance_rows_with_chain(ft_math math, double tol, double chain_rel_err) {
  if (math != FT_MATH_3XTF32 || !isfinite(chain_rel_err) || chain_rel_err < 0) return tol;
  double t = 2.0 * chain_rel_err;
  if (t < 0x1.0p-23) t = 0x1.0p-23;
  return t < FT_TOL_FP32 ? t : FT_TOL_FP32;
}
