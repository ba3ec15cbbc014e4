/* Device functions of the epilogue language (docs/EPILOGUE.md gives the definitions; the host
 * evaluator in src/epilogue/epilogue.c computes the same ones in double). Self-contained: codegen
 * concatenates this text before the kernel, and NVRTC provides the CUDA math functions.
 *
 * Two forms, chosen by the math mode (codegen writes FT_EPI_FAST 1 for tf32, bf16 and fp16):
 * - precise (fp32, 3xtf32): CUDA's erfcf, erff, expf, expm1f, log1pf, tanhf; division by ft_div,
 *   within 1 ulp of IEEE; the forms chosen avoid cancellation so fp32 results stay within a few
 *   ulp of the float64 reference (gelu with 16-bit outputs: torch's form, see ft_gelu);
 * - fast (the tensor-core modes, whose inputs carry 8 to 11 bits): exp and log from the
 *   hardware's ex2 / lg2 approximations (subnormal inputs and results flushed to zero: exp below
 *   -87.3 is 0, log of a subnormal -inf), log, log1p, expm1 and tanh built on them without
 *   cancellation, relative error within a few 1e-6 over [-20, 20] (tests/gpu/gpu_test_epilogue.c
 *   checks each against float64), a quarter to a half of the precise forms' instructions: a
 *   heavy E then costs less time than the tile's MMA it runs beside. */
#ifndef FT_MATH_CUH
#define FT_MATH_CUH

#ifndef FT_EPI_FAST
#define FT_EPI_FAST 0
#endif

/* min/max propagate a NaN from either operand, like torch.minimum/maximum (fminf would drop it):
 * one min.NaN / max.NaN instruction from sm_80 on (compare, test and select before it). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && !defined(FT_MINMAX_SELECT)
__device__ __forceinline__ float ft_min(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float ft_max(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
#else
__device__ __forceinline__ float ft_min(float a, float b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ float ft_max(float a, float b) { return (a > b || a != a) ? a : b; }
#endif

/* The hardware reciprocal (relative error < 2^-23; subnormal b and results flushed to zero). */
__device__ __forceinline__ float ft_rcp_approx(float b) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(b));
  return r;
}

/* a * r refined by one Newton step on the exact residual (r ~ 1 / b, the hardware's): where the
 * step meets inf or NaN the unrefined product, and the sign of a zero kept (the step turns -0
 * into +0). */
__device__ __forceinline__ float ft_div_refined(float a, float b, float r) {
  const float q0 = a * r;
  const float q1 = fmaf(fmaf(-b, q0, a), r, q0);
  return copysignf(q1 != q1 ? q0 : q1, q0);
}

/* a / b within 1 ulp of IEEE division, without its branch. CUDA's "/" checks every quotient (FCHK)
 * and calls a slow path where needed, so each quotient ends a basic block and a tile's quotients
 * cannot be interleaved: a division in a fused epilogue costs a few times what it costs with ft_div
 * / ft_div_by_ge1 (docs/BENCHMARKS.md, "Why the search space is what it is"). The steps: b scaled
 * into [2^-126, 2^126) and a tiny a (whose residual below would fall under the subnormal grid)
 * scaled up, both by powers of two; the hardware reciprocal; a halved where a * r would overflow;
 * then ft_div_refined (which gives the unrefined quotient, then the IEEE result, where b is zero or
 * infinite or the quotient overflows); the scales of a undone last. Zero's sign, quotients near the
 * largest float and divisors >= 2^126 are what gpu_test_epilogue checks against IEEE. */
__device__ __forceinline__ float ft_div(float a, float b) {
  const float mb = fabsf(b);
  const float sb = mb >= 0x1p126f ? 0x1p-2f : (mb < 0x1p-126f ? 0x1p24f : 1.0f);
  a *= sb;
  b *= sb;
  const bool tiny = fabsf(a) < 0x1p-102f;
  a *= tiny ? 0x1p48f : 1.0f;
  const float r = ft_rcp_approx(b);
  /* A quotient within an ulp or two of the largest float: a reciprocal an ulp high would make
   * a * r overflow (and the step below NaN), so a is halved first and the quotient doubled. */
  const bool big = fabsf(a * r) >= 0x1p127f;
  a *= big ? 0.5f : 1.0f;
  return ft_div_refined(a, b, r) * (tiny ? 0x1p-48f : (big ? 2.0f : 1.0f));
}

/* ft_div for a divisor b >= 1 (or inf, NaN), as in sigmoid's 1 + exp(-x): no scaling, so fewer
 * registers in an unrolled epilogue. Within 1 ulp of IEEE but where b is above 2^126 (0, where
 * IEEE gives |a / b| < 2^-126 |a|) or the quotient within an ulp or two of the largest float
 * (possibly inf). */
__device__ __forceinline__ float ft_div_by_ge1(float a, float b) {
  return ft_div_refined(a, b, ft_rcp_approx(b));
}

__device__ __forceinline__ float ft_relu(float x) { return ft_max(x, 0.0f); }

__device__ __forceinline__ float ft_leaky_relu(float x, float slope) { return x > 0.0f ? x : x * slope; }

/* torch.clamp order: max with lo first, then min with hi. hardtanh(x, lo, hi) is the same. */
__device__ __forceinline__ float ft_clamp(float x, float lo, float hi) { return ft_min(ft_max(x, lo), hi); }

/* The fast forms' building blocks. ex2 / lg2: the hardware's approximations (2 ulp; subnormal
 * inputs and results flushed to zero). */
__device__ __forceinline__ float ft_ex2_approx(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ float ft_lg2_approx(float x) {
  float r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}

/* c ? a : b with both computed: a select the compiler cannot turn into a branch, which would end
 * the basic block and keep a tile's evaluations from being interleaved. */
__device__ __forceinline__ float ft_sel(bool c, float a, float b) {
  float r;
  asm("{\n.reg .pred p;\nsetp.ne.u32 p, %3, 0;\nselp.f32 %0, %1, %2, p;\n}" : "=f"(r) : "f"(a), "f"(b), "r"((unsigned)c));
  return r;
}

__device__ __forceinline__ float ft_expf(float x) {
  if constexpr (FT_EPI_FAST) return ft_ex2_approx(x * 1.4426950408889634f);
  return expf(x);
}
/* log(1 + t) for |t| < 1/8 by its Taylor polynomial to t^8 (relative error under 1e-7 there). */
__device__ __forceinline__ float ft_log1p_poly(float t) {
  float p = -1.0f / 8.0f;
  p = fmaf(p, t, 1.0f / 7.0f);
  p = fmaf(p, t, -1.0f / 6.0f);
  p = fmaf(p, t, 1.0f / 5.0f);
  p = fmaf(p, t, -1.0f / 4.0f);
  p = fmaf(p, t, 1.0f / 3.0f);
  p = fmaf(p, t, -0.5f);
  return fmaf(p * t, t, t);
}

/* log(x): near 1 (|x - 1| < 1/8, where x - 1 is exact) by the polynomial, since lg2's absolute
 * error would be a large relative one near log 1 = 0; else from lg2. */
__device__ __forceinline__ float ft_logf(float x) {
  if constexpr (FT_EPI_FAST)
    return ft_sel(fabsf(x - 1.0f) < 0.125f, ft_log1p_poly(x - 1.0f), ft_lg2_approx(x) * 0.6931471805599453f);
  return logf(x);
}

/* log(1 + t) for t >= 0 (softplus's): a Taylor polynomial below 1/8 (relative error under 1e-7:
 * lg2's absolute error would be a large relative one near log 1 = 0), else from lg2. */
__device__ __forceinline__ float ft_log1pf(float t) {
  if constexpr (FT_EPI_FAST) return ft_sel(t < 0.125f, ft_log1p_poly(t), ft_lg2_approx(1.0f + t) * 0.6931471805599453f);
  return log1pf(t);
}

/* exp(x) - 1: a Taylor polynomial below 0.5 in magnitude (relative error under 1e-7 there), else
 * the exponential (no cancellation left at |x| >= 0.5). */
__device__ __forceinline__ float ft_expm1f(float x) {
  if constexpr (FT_EPI_FAST) {
    float p = 1.0f / 5040.0f;
    p = fmaf(p, x, 1.0f / 720.0f);
    p = fmaf(p, x, 1.0f / 120.0f);
    p = fmaf(p, x, 1.0f / 24.0f);
    p = fmaf(p, x, 1.0f / 6.0f);
    p = fmaf(p, x, 0.5f);
    p = copysignf(fmaf(p * x, x, x), x); /* expm1 keeps x's sign, that of a zero too */
    return ft_sel(fabsf(x) < 0.5f, p, ft_expf(x) - 1.0f);
  }
  return expm1f(x);
}

/* tanh(x) = e / (e + 2) with e = expm1(2 |x|), the sign put back: no cancellation near 0. */
__device__ __forceinline__ float ft_tanhf(float x) {
  if constexpr (FT_EPI_FAST) {
    const float e = ft_expm1f(2.0f * fabsf(x));
    return copysignf(ft_sel(e > 0x1p100f, 1.0f, ft_div_by_ge1(e, e + 2.0f)), x);
  }
  return tanhf(x);
}

/* gelu(x) = 0.5 x (1 + erf(x / sqrt 2)); erfc(-t) = 1 + erf(t) without cancellation for x < 0. With
 * 16-bit outputs (FT_DTYPE 1, 2) and in the fast forms, the form torch computes, 1 + erff(t), at
 * half erfcf's instructions: a heavy E runs at the issue rate, so fewer instructions are faster
 * (docs/BENCHMARKS.md, "Why the search space is what it is"). With erff's 2 ulp its cancellation
 * costs at most 4.5e-5 relative for x >= -3 (1 + erf >= 2.7e-3: under a tenth of fp16's unit
 * roundoff, 2^-11); below, the error stays under 1e-7 |x| absolute while gelu itself falls under
 * 4e-3 |x|, as in torch. (Choosing erfcf below -3 by a branch made the unrolled epilogue 70 %
 * slower.) */
__device__ __forceinline__ float ft_gelu(float x) {
#if defined(FT_DTYPE) && FT_DTYPE != 0
  return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f));
#else
  if constexpr (FT_EPI_FAST) return 0.5f * x * (1.0f + erff(x * 0.707106781186547524f));
  return 0.5f * x * erfcf(-x * 0.707106781186547524f);
#endif
}

/* gelu_tanh(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3); 0.5 (1 + tanh(u)) equals
 * 1 / (1 + exp(-2u)), which keeps full relative precision for negative x. */
__device__ __forceinline__ float ft_gelu_tanh(float x) {
  float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return ft_div_by_ge1(x, 1.0f + ft_expf(-2.0f * u));
}

__device__ __forceinline__ float ft_sigmoid(float x) { return ft_div_by_ge1(1.0f, 1.0f + ft_expf(-x)); }
__device__ __forceinline__ float ft_silu(float x) { return ft_div_by_ge1(x, 1.0f + ft_expf(-x)); }
__device__ __forceinline__ float ft_tanh(float x) { return ft_tanhf(x); }

/* torch.nn.functional.softplus defaults: beta = 1, threshold = 20. */
__device__ __forceinline__ float ft_softplus(float x) {
  if constexpr (FT_EPI_FAST) return ft_sel(x > 20.0f, x, ft_log1pf(ft_expf(x)));
  return x > 20.0f ? x : ft_log1pf(ft_expf(x));
}
/* tanh(softplus(x)): with n = e^x (e^x + 2) = (1 + e^x)^2 - 1 it is n / (n + 2), one exponential
 * and a quotient, no cancellation (for x << 0, n / (n + 2) ~ e^x); above softplus's threshold 20,
 * tanh(x) = 1 in float. The precise forms keep the composition. */
__device__ __forceinline__ float ft_tanh_softplus(float x) {
  if constexpr (FT_EPI_FAST) {
    const float e = ft_expf(ft_min(x, 20.0f)), n = e * (e + 2.0f);
    return ft_sel(x > 20.0f, 1.0f, ft_div_by_ge1(n, n + 2.0f));
  }
  return ft_tanhf(ft_softplus(x));
}
__device__ __forceinline__ float ft_mish(float x) { return x * ft_tanh_softplus(x); }

/* alpha = 1; expm1 keeps precision near zero. */
__device__ __forceinline__ float ft_elu(float x) { return x > 0.0f ? x : ft_expm1f(x); }

__device__ __forceinline__ float ft_abs(float x) { return fabsf(x); }
__device__ __forceinline__ float ft_exp(float x) { return ft_expf(x); }
__device__ __forceinline__ float ft_log(float x) { return ft_logf(x); }
__device__ __forceinline__ float ft_sqrt(float x) { return sqrtf(x); }

#endif /* FT_MATH_CUH */
