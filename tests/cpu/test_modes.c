/* Math modes without a GPU: the host's float <-> bf16 / fp16 conversions (round to nearest even,
 * NaN, Inf, overflow, subnormals), the tolerance rule, and NVRTC compiles (sm_90) of the
 * enumerated epilogue-pass variants (a sample by default, every one with --sweep:
 * tests/cpu/compile_sample.h) and every eager step of the seed shapes in every mode but fp32
 * (test_compile covers fp32). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <time.h>

#include "codegen.h"
#include "compile.h"
#include "compile_sample.h"
#include "family.h"
#include "ft_test.h"
#include "verify.h"

#define ARCH "sm_90"
#define SAMPLE_STRIDE 4 /* the default run's: every 4th epilogue-pass variant of a shape */

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

typedef uint16_t (*to16_fn)(float);
typedef float (*from16_fn)(uint16_t);

/* h is the correctly rounded (nearest, ties to even) 16-bit value of finite f: no neighbour of
 * h is nearer, and at a tie h is even. */
static int is_nearest(float f, uint16_t h, from16_fn from, uint16_t inf) {
  const double x = f, v = from(h);
  if (isinf(v)) return 1; /* overflow is checked on its own */
  const double d = fabs(x - v);
  for (int step = -1; step <= 1; step += 2) {
    const uint16_t nb = (uint16_t)(h + step);
    if (((nb ^ h) & 0x8000u) || (nb & 0x7fffu) >= inf) continue;
    const double dn = fabs(x - (double)from(nb));
    if (dn < d || (dn == d && (h & 1u))) return 0;
  }
  return 1;
}

static void test_roundtrip(const char *name, to16_fn to, from16_fn from, uint16_t inf) {
  int bad = 0;
  for (uint32_t h = 0; h <= 0xffffu; h++) {
    const float f = from((uint16_t)h);
    const uint16_t back = to(f);
    const int nan = (h & 0x7fffu) > inf;
    if (nan ? !(isnan(f) && (back & 0x7fffu) > inf) : back != h) {
      if (bad++ < 3) FT_FAIL_AT_("%s: 0x%04x -> %a -> 0x%04x", name, (unsigned)h, (double)f, (unsigned)back);
    }
  }
  ASSERT_EQ_INT(bad, 0);
}

static void test_random(const char *name, to16_fn to, from16_fn from, uint16_t inf, float range) {
  uint64_t s = 42;
  int bad = 0;
  for (int i = 0; i < 1000000; i++) {
    float f = from_bits((uint32_t)next_u64(&s));
    if (!isfinite(f) || fabsf(f) > range) f = (float)ldexp((double)(next_u64(&s) >> 40) * 0x1.0p-24, (int)(i % 40) - 30);
    if (i & 1) f = -f;
    const uint16_t h = to(f);
    if (!is_nearest(f, h, from, inf) && bad++ < 3)
      FT_FAIL_AT_("%s: %a -> 0x%04x (%a) is not the nearest", name, (double)f, (unsigned)h, (double)from(h));
  }
  ASSERT_EQ_INT(bad, 0);
}

static void test_conversions(void) {
  test_roundtrip("bf16", ft_f32_to_bf16, ft_bf16_to_f32, 0x7f80u);
  test_roundtrip("fp16", ft_f32_to_f16, ft_f16_to_f32, 0x7c00u);
  test_random("bf16", ft_f32_to_bf16, ft_bf16_to_f32, 0x7f80u, 3e38f);
  test_random("fp16", ft_f32_to_f16, ft_f16_to_f32, 0x7c00u, 65504.0f);
  /* Ties to even. */
  ASSERT_EQ_INT(ft_f32_to_bf16(from_bits(0x3f808000u)), 0x3f80); /* 1 + 2^-8: tie, even is 1 */
  ASSERT_EQ_INT(ft_f32_to_bf16(from_bits(0x3f818000u)), 0x3f82); /* tie, odd below: up */
  ASSERT_EQ_INT(ft_f32_to_bf16(from_bits(0x3f808001u)), 0x3f81); /* above the tie: up */
  ASSERT_EQ_INT(ft_f32_to_f16(1.0f + 0x1.0p-11f), 0x3c00);
  ASSERT_EQ_INT(ft_f32_to_f16(1.0f + 3 * 0x1.0p-11f), 0x3c02);
  ASSERT_EQ_INT(ft_f32_to_f16(0x1.0p-25f), 0x0000);              /* tie between 0 and 2^-24 */
  ASSERT_EQ_INT(ft_f32_to_f16(0x1.8p-25f), 0x0001);              /* nearer 2^-24 */
  ASSERT_EQ_INT(ft_f32_to_f16(3 * 0x1.0p-25f), 0x0002);          /* 1.5 units: tie, to even 2 */
  ASSERT_EQ_INT(ft_f32_to_f16(0x1.ffcp-15f), 0x0400);            /* rounds up into the normals */
  ASSERT_EQ_INT(ft_f32_to_f16(-0.0f), 0x8000);
  ASSERT_EQ_INT(ft_f32_to_bf16(-0.0f), 0x8000);
  /* Overflow and the largest finite values. */
  ASSERT_EQ_INT(ft_f32_to_f16(65504.0f), 0x7bff);
  ASSERT_EQ_INT(ft_f32_to_f16(65519.0f), 0x7bff);
  ASSERT_EQ_INT(ft_f32_to_f16(65520.0f), 0x7c00);
  ASSERT_EQ_INT(ft_f32_to_f16(-1e6f), 0xfc00);
  ASSERT_EQ_INT(ft_f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80); /* FLT_MAX rounds to Inf */
  ASSERT_EQ_INT(ft_f32_to_bf16(from_bits(0x7f7f7fffu)), 0x7f7f);
  ASSERT_EQ_INT(ft_f32_to_bf16(INFINITY), 0x7f80);
  ASSERT_EQ_INT(ft_f32_to_f16(-INFINITY), 0xfc00);
  ASSERT_TRUE(isinf(ft_f16_to_f32(0x7c00)) && isinf(ft_bf16_to_f32(0xff80)));
  /* NaN stays a (quiet) NaN, even one whose payload is all in the dropped bits. */
  ASSERT_TRUE((ft_f32_to_bf16(from_bits(0x7f800001u)) & 0x7fffu) > 0x7f80u);
  ASSERT_TRUE((ft_f32_to_f16(from_bits(0x7f800001u)) & 0x7fffu) > 0x7c00u);
  ASSERT_TRUE(isnan(ft_bf16_to_f32(0xffff)) && isnan(ft_f16_to_f32(0xffff))); /* the poison */
  ASSERT_EQ_INT(bits(ft_f16_to_f32(0x0001)), bits(0x1.0p-24f));
  ASSERT_EQ_INT(bits(ft_f16_to_f32(0x8001)), bits(-0x1.0p-24f));
#if defined(__FLT16_MAX__)
  /* The compiler's own conversion, where it has _Float16, as an independent reference. */
  uint64_t s = 7;
  int bad = 0;
  for (int i = 0; i < 1000000; i++) {
    const uint64_t r = next_u64(&s); /* magnitudes 2^-30 .. 2^17: subnormal, normal, overflow */
    const float f = from_bits((uint32_t)(r & 0x807fffffu) | (uint32_t)(97 + (r >> 40) % 48) << 23);
    _Float16 hf = (_Float16)f;
    uint16_t rb;
    memcpy(&rb, &hf, sizeof rb);
    if (!isnan(f) && rb != ft_f32_to_f16(f) && bad++ < 3)
      FT_FAIL_AT_("fp16 %a: 0x%04x, compiler 0x%04x", (double)f, (unsigned)ft_f32_to_f16(f), (unsigned)rb);
  }
  ASSERT_EQ_INT(bad, 0);
#endif
}

static void test_tolerance(void) {
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_FP32, 0.5), FT_TOL_FP32, 0);
  /* 3xtf32: SGEMM's own error, at least 2^-20, at most fp32's bound. */
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_3XTF32, 2e-6), 2e-6, 0);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_3XTF32, 1e-8), 0x1.0p-20, 0);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_3XTF32, 0.5), FT_TOL_FP32, 0);
  ASSERT_NEAR(ft_tolerance_floor(FT_MATH_TF32), 0x1.0p-11, 0); /* the inputs are rounded */
  ASSERT_NEAR(ft_tolerance_floor(FT_MATH_BF16), 0x1.0p-8, 0);
  ASSERT_NEAR(ft_tolerance_floor(FT_MATH_FP16), 0x1.0p-11, 0);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_TF32, 3e-4), 6e-4 + 0x1.0p-11, 1e-18);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_BF16, 1.5e-3), 3e-3 + 0x1.0p-8, 1e-18);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_FP16, 2e-4), 4e-4 + 0x1.0p-11, 1e-18);
  /* A measurement that is no number gives the floor, never a tolerance that accepts anything. */
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_BF16, NAN), 0x1.0p-8, 0);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_FP16, INFINITY), 0x1.0p-11, 0);
  ASSERT_NEAR(ft_tolerance_rule(FT_MATH_FP16, -1), 0x1.0p-11, 0);
  /* 3xtf32 raised to the fp32 chain's error (+1 %) where E makes that larger, never lowered,
   * never past fp32's bound; other modes and unusable measurements keep the rule's. */
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_3XTF32, 1.15e-6, 1.30e-6), 1.313e-6, 1e-18);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_3XTF32, 1.15e-6, 1.0e-6), 1.15e-6, 0);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_3XTF32, 1.15e-6, 0.5), FT_TOL_FP32, 0);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_3XTF32, 1.15e-6, NAN), 1.15e-6, 0);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_3XTF32, 1.15e-6, INFINITY), 1.15e-6, 0);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_3XTF32, 1.15e-6, -1), 1.15e-6, 0);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_BF16, 7e-3, 9e-3), 7e-3, 0);
  /* fp8: raised to the bf16 chain's error, at most twice the rule's. */
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_FP8, 3.57e-3, 4.7e-3), 4.747e-3, 1e-15);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_FP8, 3.57e-3, 2e-3), 3.57e-3, 0);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_FP8, 3.57e-3, 0.5), 7.14e-3, 1e-15);
  ASSERT_NEAR(ft_tolerance_with_chain(FT_MATH_FP32, FT_TOL_FP32, 2e-5), FT_TOL_FP32, 0);
  /* One value per row: the chain's own error twice, lowered below the rule too, one unit roundoff
   * at least, fp32's bound at most; other modes and unusable measurements keep the rule's. */
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_3XTF32, 9.54e-7, 8e-8), 1.6e-7, 1e-20);
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_3XTF32, 9.54e-7, 1e-6), 2e-6, 1e-20);
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_3XTF32, 9.54e-7, 0), 0x1.0p-23, 0);
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_3XTF32, 9.54e-7, 0.5), FT_TOL_FP32, 0);
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_3XTF32, 9.54e-7, NAN), 9.54e-7, 0);
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_3XTF32, 9.54e-7, -1), 9.54e-7, 0);
  ASSERT_NEAR(ft_tolerance_rows_with_chain(FT_MATH_BF16, 7e-3, 1e-6), 7e-3, 0);
}

/* The epilogue-pass variants ft_sample_pick keeps at stride and every eager step of the seed
 * shapes, in mode math, compile; returns how many sources. */
static int compile_mode(ft_math math, const ft_device_limits *lim, int stride) {
  static const struct {
    const char *epilogue;
    int64_t m, n, k;
  } shapes[] = {{"minsub", 128, 16384, 16384}, {"biasrelu", 1024, 8192, 8192}, {"minsub", 127, 1000, 999},
                {"biasgelu", 129, 257, 515}, {"silu(x) * scale + bias * r where scalar scale, row r", 127, 1000, 1000}};
  ft_kernel_src src[512];
  ft_compile_job jobs[512];
  int n = 0;
  memset(jobs, 0, sizeof jobs);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    ft_err e;
    ft_epilogue *ep = NULL;
    ft_variant *p = NULL;
    int np = 0;
    ft_ep_eager plan;
    if (ft_ep_parse(shapes[s].epilogue, &ep, &e) != FT_OK) {
      FT_FAIL_AT_("parse %s: %s", shapes[s].epilogue, e.msg);
      continue;
    }
    ASSERT_OK(ft_space_enumerate_math(FT_VK_EPILOGUE, shapes[s].m, shapes[s].n, shapes[s].k, math, lim, &p, &np, &e));
    ASSERT_TRUE(np > 0);
    unsigned char keep[512];
    ASSERT_TRUE(np <= 512);
    const int nk = np < 512 ? np : 512;
    ft_sample_pick(p, nk, stride, keep);
    for (int i = 0; i < nk && n < 512; i++) {
      ASSERT_EQ_INT(p[i].math, math);
      if (!keep[i]) continue;
      if (ft_codegen_variant(&p[i], ep, &src[n], &e) == FT_OK) n++;
      else FT_FAIL_AT_("codegen: %s", e.msg);
    }
    ASSERT_OK(ft_ep_eager_plan(ep, &plan, &e));
    for (int i = 0; i < plan.nsteps && n < 512; i++) {
      if (ft_codegen_eager_step(&plan.steps[i], math, &src[n], &e) == FT_OK) n++;
      else FT_FAIL_AT_("codegen step: %s", e.msg);
    }
    free(p);
    ft_ep_free(ep);
  }
  int nj = 0;
  for (int i = 0; i < n; i++) {
    int dup = 0;
    for (int j = 0; j < nj && !dup; j++) dup = strcmp(jobs[j].hash, src[i].hash) == 0;
    if (!dup) jobs[nj].src = src[i].text, jobs[nj].hash = src[i].hash, nj++;
  }
  ft_err e;
  ASSERT_OK(ft_compile_many(NULL, ARCH, jobs, nj, 0, &e));
  int failed = 0;
  for (int i = 0; i < nj; i++) {
    if (jobs[i].status != FT_OK || !jobs[i].cubin) {
      if (failed++ < 3) FT_FAIL_AT_("%s: job %d failed: %.2000s", ft_math_name(math), i, jobs[i].log ? jobs[i].log : "");
    }
    ft_compile_job_clear(&jobs[i]);
  }
  ASSERT_EQ_INT(failed, 0);
  for (int i = 0; i < n; i++) ft_kernel_src_free(&src[i]);
  return nj;
}

/* 16-bit alignment: y needs 2 * vec bytes, x and W their element. */
static void test_alignment(void) {
  ft_variant v = {0};
  v.kind = FT_VK_EPILOGUE, v.pass.block = 256, v.vec = 4, v.pass.ept = 8;
  const ft_math modes[] = {FT_MATH_FP32, FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16};
  const size_t want_y[] = {16, 16, 8, 8}, want_x[] = {4, 4, 2, 2};
  for (int i = 0; i < 4; i++) {
    size_t need[3] = {1, 1, 1};
    v.math = (int)modes[i];
    ft_family_of(&v)->alignment(&v, 127, 1000, 999, need);
    ASSERT_EQ_INT(need[0], want_x[i]);
    ASSERT_EQ_INT(need[1], want_x[i]);
    ASSERT_EQ_INT(need[2], want_y[i]);
  }
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  const int stride = ft_sample_stride(argc, argv, SAMPLE_STRIDE);
  test_conversions();
  test_tolerance();
  test_alignment();
  ft_device_limits lim;
  ft_err e;
  if (ft_limits_for_arch(ARCH, &lim, &e) != FT_OK) RETURN_FAIL("%s", e.msg);
  const ft_math modes[] = {FT_MATH_TF32, FT_MATH_BF16, FT_MATH_FP16};
  for (int i = 0; i < 3; i++) {
    const double t0 = now_s();
    const int n = compile_mode(modes[i], &lim, stride);
    printf("%s: %d epilogue-pass and eager-step sources compiled (%s) in %.1f s\n", ft_math_name(modes[i]), n,
           stride > 1 ? "sample" : "sweep", now_s() - t0);
  }
  return FT_TEST_DONE();
}
