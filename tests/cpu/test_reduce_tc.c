/* The row reductions fused into the tensor-core GEMM (src/family/tc/family_tc_reduce.c,
 * kernels_src/tc_reduce.cuh, tc_reduce_final.cu) without a GPU: what enumerates them (one-value
 * reductions in bf16, fp16 and tf32 only, no pool) and in which forms, validity, names, JSON, geometry
 * (the workspace of statistics, the finalize kernel), what codegen writes and refuses, and NVRTC
 * compiles for sm_90a of each mode with no spill. */
#include "codegen.h"
#include "compile.h"
#include "epilogue_test_util.h"
#include "family.h"

/* The pruned GEMM space of text (none: count 0). */
static ft_variant *enumerate(const char *text, int64_t m, int64_t n, int64_t k, ft_math math, int *count) {
  ft_epilogue *ep = parse_ok(text);
  ft_device_limits lim;
  ft_variant *v = NULL;
  *count = 0;
  ft_err e;
  if (ep && ft_limits_for_arch("sm_90", &lim, &e) == FT_OK) {
    const ft_status s = ft_space_enumerate_ep(FT_VK_GEMM, m, n, k, math, FT_SPACE_PRUNED, ep, &lim, &v, NULL, count, &e);
    ASSERT_TRUE(s == FT_OK || (s == FT_ERR_UNSUPPORTED && *count == 0));
  }
  ft_ep_free(ep);
  return v;
}

static void test_enumeration(void) {
  static const char *const one_value[] = {"rowsum(sigmoid(x))", "rowmean(x + bias)", "rowmax(x) * 2",
                                          "-rowmin(x * r) where row r", "logsumexp(x + bias)"};
  static const ft_math maths[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32, FT_MATH_3XTF32};
  for (size_t i = 0; i < sizeof one_value / sizeof one_value[0]; i++)
    for (size_t mi = 0; mi < 4; mi++) {
      int count = 0;
      ft_variant *v = enumerate(one_value[i], 300, 5001, 256, maths[mi], &count);
      ASSERT_TRUE(count > 0);
      int pingpong = 0;
      for (int j = 0; j < count; j++) {
        ASSERT_EQ_STR(ft_family_of(&v[j])->name, "tc_reduce");
        ASSERT_TRUE(!v[j].tc.tstore && v[j].split_k == 0 && !v[j].tc.streamk && !v[j].tc.staged && !v[j].tc.late);
        pingpong += v[j].tc.pingpong != 0;
      }
      ASSERT_TRUE(maths[mi] == FT_MATH_3XTF32 ? pingpong == 0 : pingpong > 0); /* 3xtf32 has no ping-pong */
      free(v);
    }
  /* Rowwise outputs, fp32 and fp8: no fused variant in the default space (batchnorm in bf16: family
   * tc_pass's GEMM with its column partials in the full one, tests/cpu/test_tc_pass.c). */
  static const char *const none[] = {"softmax(x)", "log_softmax(x + bias)", "groupnorm(x, 4)", "batchnorm(x)",
                                     "maxpool(x, 2)", "rowsum(maxpool(x, 2))", "logsumexp(avgpool(x + bias, 4))"};
  int count = 0;
  for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
    free(enumerate(none[i], 300, 4096, 256, FT_MATH_BF16, &count));
    ASSERT_EQ_INT(count, 0);
  }
  free(enumerate("logsumexp(x)", 300, 4096, 256, FT_MATH_FP32, &count));
  ASSERT_EQ_INT(count, 0);
  /* 3xtf32: tcr_ for a one-value reduction (no tc_pass: it would need an M x N buffer); the
   * rest family tc_pass's (the pass after the tensor-core GEMM, tests/cpu/test_tc_pass.c). */
  ft_variant *v3 = enumerate("logsumexp(x)", 300, 4096, 256, FT_MATH_3XTF32, &count);
  ASSERT_TRUE(count > 0);
  for (int j = 0; j < count; j++) ASSERT_EQ_STR(ft_family_of(&v3[j])->name, "tc_reduce");
  free(v3);
  v3 = enumerate("rowsum(maxpool(x, 2))", 300, 4096, 256, FT_MATH_3XTF32, &count);
  ASSERT_TRUE(count > 0);
  for (int j = 0; j < count; j++) ASSERT_EQ_STR(ft_family_of(&v3[j])->name, "tc_pass");
  free(v3);
}

static ft_variant tcr_variant(void) {
  ft_variant v = {0};
  v.kind = FT_VK_GEMM, v.family = 5, v.math = FT_MATH_BF16, v.bn = 256, v.bk = 64, v.stages = 4, v.swizzle = 8;
  v.tc.consumers = 2, v.tc.cluster = 2, v.tc.grid = 132;
  return v;
}

static void test_variant(void) {
  ft_variant v = tcr_variant();
  char why[200], name[128], json[512];
  ASSERT_TRUE(ft_variant_valid(&v, why, sizeof why));
  ft_variant_name(&v, name, sizeof name);
  ASSERT_EQ_STR(name, "tcr_bm128_bn256_bk64_s4_c2_z8_p132_bf16");
  ft_variant_json(&v, json, sizeof json);
  ft_variant back;
  ft_err e;
  ASSERT_OK(ft_variant_from_json(json, &back, &e));
  ASSERT_TRUE(memcmp(&back, &v, sizeof v) == 0);
  /* The statistics: M x ceil(N / BN) floats; the finalize kernel a warp per row. */
  ft_launch_geom g;
  memset(&g, 0, sizeof g);
  ft_variant_geometry(&v, 8192, 128256, 4096, &g);
  ASSERT_TRUE(g.workspace_bytes == (size_t)8192 * 501 * 4 && g.has_reduce && g.rgrid[0] == 8192u / (256 / 32));
  ASSERT_TRUE(g.workspace_bytes < (size_t)8192 * 128256 * 2 / 100); /* under 1 % of bf16 logits */
  /* The forms that store y do not apply. */
  v.tc.tstore = 1;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
  ASSERT_CONTAINS(why, "tc_reduce");
  v.tc.tstore = 0, v.split_k = 2;
  ASSERT_TRUE(!ft_variant_valid(&v, why, sizeof why));
}

static void test_codegen(void) {
  ft_epilogue *lse = parse_ok("logsumexp(x + bias) * 2"), *sm = parse_ok("softmax(x)"), *relu = parse_ok("relu(x)"),
              *pool = parse_ok("rowmax(maxpool(x, 2))");
  ft_variant v = tcr_variant(), tc = tcr_variant();
  tc.family = 4;
  ft_kernel_src k;
  ft_err e;
  if (lse && sm && relu) {
    ASSERT_OK(ft_codegen_variant(&v, lse, &k, &e));
    ASSERT_CONTAINS(k.text, "#define FT_EP_RED_KIND 5\n");
    ASSERT_CONTAINS(k.text, "#define FT_RED_POST (");
    ASSERT_EQ_STR(k.kernel, "ft_gemm_tc");
    ASSERT_EQ_STR(k.reduce, "ft_tc_red_finalize");
    ft_kernel_src_free(&k);
    ASSERT_EQ_INT(ft_codegen_variant(&v, sm, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "do not compute 'softmax'");
    if (pool) {
      ASSERT_EQ_INT(ft_codegen_variant(&v, pool, &k, &e), FT_ERR_INVALID_ARG);
      ASSERT_CONTAINS(e.msg, "not the windows of 'maxpool'");
    }
    ASSERT_EQ_INT(ft_codegen_variant(&v, relu, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "compute reductions only");
    ASSERT_EQ_INT(ft_codegen_variant(&tc, lse, &k, &e), FT_ERR_INVALID_ARG);
    ASSERT_CONTAINS(e.msg, "this one reduces");
    /* The elementwise tc kernel says it reduces nothing. */
    ASSERT_OK(ft_codegen_variant(&tc, relu, &k, &e));
    ASSERT_CONTAINS(k.text, "#define FT_EP_RED_KIND 0\n");
    ft_kernel_src_free(&k);
  }
  ft_ep_free(lse), ft_ep_free(sm), ft_ep_free(relu), ft_ep_free(pool);
}

/* The first variant of three kinds, one per mode, through NVRTC and ptxas for sm_90a. */
static void test_compiles(void) {
  static const char *const exprs[] = {"rowsum(sigmoid(x))", "-rowmin(x * r) where row r", "logsumexp(x + bias)"};
  static const ft_math maths[] = {FT_MATH_BF16, FT_MATH_FP16, FT_MATH_TF32};
  ft_kernel_src src[3];
  ft_compile_job jobs[3];
  memset(jobs, 0, sizeof jobs);
  ft_err e;
  for (int i = 0; i < 3; i++) {
    int count = 0;
    ft_variant *v = enumerate(exprs[i], 77, 1001, 40, maths[i], &count);
    ft_epilogue *ep = parse_ok(exprs[i]);
    ASSERT_TRUE(count > 0 && ep);
    if (count > 0 && ep) ASSERT_OK(ft_codegen_variant(&v[0], ep, &src[i], &e));
    jobs[i] = (ft_compile_job){.src = src[i].text, .hash = src[i].hash, .arch_suffix = src[i].arch_suffix};
    free(v);
    ft_ep_free(ep);
  }
  ASSERT_OK(ft_compile_many(NULL, "sm_90", jobs, 3, 2, &e));
  for (int i = 0; i < 3; i++) {
    if (jobs[i].status != FT_OK) FT_FAIL_AT_("%s does not compile: %.2000s", exprs[i], jobs[i].log ? jobs[i].log : "");
    ft_compile_job_clear(&jobs[i]);
    ft_kernel_src_free(&src[i]);
  }
}

int main(void) {
  test_enumeration();
  test_variant();
  test_codegen();
  test_compiles();
  return FT_TEST_DONE();
}
