/* The tune's timing rule (src/tune/timing_rule.h). */
#include "timing_rule.h"

#include "common.h"
#include "gated.h"

double ft_timing_gemm_floor_us(int64_t m, int64_t n_gemm, int64_t k, ft_math math) {
  double rate = 989e12, in = 2, out = 2; /* bf16, fp16 */
  switch (math) {
  case FT_MATH_FP32: rate = 67e12, in = out = 4; break;
  case FT_MATH_TF32: rate = 495e12, in = out = 4; break;
  case FT_MATH_3XTF32: rate = 495e12 / 3, in = out = 4; break;
  case FT_MATH_FP8: rate = 1979e12, in = 1; break; /* y in bf16 */
  default: break;
  }
  const double md = (double)m, nd = (double)n_gemm, kd = (double)k;
  const double flops_s = 2 * md * nd * kd / rate, bytes_s = (in * (md * kd + nd * kd) + out * md * nd) / 3.35e12;
  return 1e6 * (flops_s > bytes_s ? flops_s : bytes_s);
}

int ft_timing_graph_calls(int64_t m, int64_t n, int64_t k, ft_math math, const ft_epilogue *ep, int flush_l2) {
  /* On by default since gpu_test_tune ran it on an H100 (docs/BENCHMARKS.md 2026-12-07 (o));
   * FUSEDTUNE_GRAPH_TIMING=0 times every candidate on the stream. */
  if (flush_l2 || !ft__env_default_on("FUSEDTUNE_GRAPH_TIMING")) return 0;
  return ft_timing_gemm_floor_us(m, ft_gemm_cols(ep, n), k, math) < FT_TIMING_GRAPH_BELOW_US ? FT_TIMING_GRAPH_CALLS : 0;
}
